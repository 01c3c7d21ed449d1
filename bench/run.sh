#!/usr/bin/env bash
# End-to-end benchmarks. Needs Go and Debian's python3-numpy and
# python3-torch (apt-get install python3-numpy python3-torch) and GNU time.
#   bench/run.sh [--rounds N] [--only W1,W3] [--tools depthspace,cp,...]
#       the five workloads: depthspace vs cp, numpy (load and
#       mmap) and torch
#   bench/run.sh dataset [--rounds N] [--only batch5000,pipes,npz,...] [--scratch DIR]
#       dataset scale: many files vs cp -r and a numpy Pool,
#       pipes vs cat | cat, stdin/stdout files vs -o, deflated npz vs numpy
#   bench/run.sh tar [--members N] [--scratch DIR]
#       a WebDataset shard vs cp and a Python tarfile loop
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "bench needs GNU time: apt-get install time" >&2; exit 2; }
case "${1:-}" in
dataset) shift; exec /usr/bin/python3 bench/dataset.py "$@" ;;
tar) shift; exec /usr/bin/python3 bench/tarshard.py "$@" ;;
esac
exec /usr/bin/python3 bench/bench.py "$@"
