# Shared by the end-to-end scripts (slurm-e2e.sh, s3-e2e.sh), which
# source it: timed step lines, Debian packages installed when missing,
# and a temporary directory whose daemons (pids in PIDS) are stopped and
# which is removed at exit, also on failure or Ctrl-C (KEEP=1 keeps it).

PY=/usr/bin/python3
T0=$(date +%s.%N)

step() { printf '[%6.1fs] %s\n' "$(echo "$(date +%s.%N) - $T0" | bc)" "$*"; }
fail() { step "FAIL: $*"; exit 1; }

# free_ports N: N TCP ports free on 127.0.0.1 now, on one line, so that
# a cluster or server already on this machine is not disturbed.
free_ports() {
  $PY -c '
import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])' "$1"
}

# need_packages PACKAGE...: installs those given (the caller lists the
# missing ones) in one apt run.
need_packages() {
  [ $# -gt 0 ] || return 0
  echo "installing $*"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "$@" >/dev/null
}

# e2e_tempdir NAME: makes T (/tmp/depthspace-NAME.XXXXXX) and sets the
# exit trap that stops the daemons in PIDS (TERM, then KILL after 5 s)
# and, on failure, prints the last lines of T's logs.
e2e_tempdir() {
  T=$(mktemp -d "/tmp/depthspace-$1.XXXXXX")
  PIDS=()
  trap e2e_cleanup EXIT
  trap 'exit 130' INT TERM
}

e2e_cleanup() {
  status=$?
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  if [ $status -ne 0 ]; then
    for log in "$T"/*.log "$T"/*.err; do [ -f "$log" ] && { echo "--- $log (last lines)"; tail -n 15 "$log"; }; done
  fi
  if [ "${KEEP:-}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
  exit $status
}

# start_versitygw PORT DIR: versitygw ($VGW, posix backend over DIR) on
# 127.0.0.1:PORT with the root keys KEY and SECRET, its pid in PIDS,
# once it answers; its log $T/versitygw.log.
start_versitygw() {
  ROOT_ACCESS_KEY_ID=$KEY ROOT_SECRET_ACCESS_KEY=$SECRET "$VGW" --port "127.0.0.1:$1" posix "$2" >"$T/versitygw.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$1/" && break; sleep 0.1; done
}

# start_latency_proxies TARGET_PORT "DELAYS" "PORTS": for each delay (ms)
# a scripts/latencyproxy.py on the port at the same place in PORTS, in
# front of 127.0.0.1:TARGET_PORT, its pid in PIDS, its count of answers
# in $T/answers.DELAY; PROXY[DELAY] is its URL (the caller declares
# PROXY with declare -A).
start_latency_proxies() {
  local target=$1 d i=0 ports
  read -r -a ports <<<"$3"
  for d in $2; do
    $PY scripts/latencyproxy.py "${ports[$i]}" "$target" "$d" "$T/answers.$d" &
    PIDS+=($!)
    for _ in $(seq 50); do [ -f "$T/answers.$d" ] && break; sleep 0.1; done
    PROXY[$d]=http://127.0.0.1:${ports[$i]}
    i=$((i + 1))
  done
}
