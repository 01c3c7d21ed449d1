#!/usr/bin/env bash
# End-to-end benchmark (issue 5): depthspace vs cp, numpy (load and mmap)
# and torch on the five workloads. Needs Go and Debian's python3-numpy and
# python3-torch (apt-get install python3-numpy python3-torch).
# Usage: bench/run.sh [--rounds N] [--only W1,W3] [--tools depthspace,cp,...]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "bench needs GNU time: apt-get install time" >&2; exit 2; }
exec /usr/bin/python3 bench/bench.py "$@"
