#!/usr/bin/env bash
# Objects (issue 25), side by side with rclone on the same S3 server:
#   1. a prefix of 100 × 3 MiB npy objects bucket to bucket:
#      depthspace s2d --out-dir s3://… s3://…/ against rclone copy, which
#      between two buckets of one remote copies server side (it says
#      "Copied (server-side copy)" under -vv; no bytes pass through it),
#      so it is also run with that disabled (--disable Copy), and with
#      --expect-continue-timeout 0 (rclone's HTTP client waits up to 1 s
#      for a "100 Continue" that versitygw does not send before each body);
#      and depthspace's peak RssAnon (sampled from /proc every 10 ms);
#   2. one 256 MiB object bucket to bucket: depthspace s2d against
#      rclone copyto (same variants);
#   3. info of a 900 KiB npy object: the bytes the server sends,
#      counted by a proxy.
# versitygw (posix backend over a temporary directory on 127.0.0.1) is
# started and stopped here; scripts/s3-e2e.sh installs it. Each command
# runs RUNS times (default 5) after one warm-up; the median wall time is
# printed, from /usr/bin/time.
#
# Usage: bench/s3.sh      (RUNS=N, KEEP=1 keeps the temp dir)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
RUNS=${RUNS:-5}
GOBIN=$(go env GOBIN)
[ -n "$GOBIN" ] || GOBIN=$(go env GOPATH)/bin
VGW=$GOBIN/versitygw
[ -x "$VGW" ] || { echo "no $VGW: run scripts/s3-e2e.sh once (it installs versitygw)"; exit 2; }
command -v rclone >/dev/null || { echo "rclone missing (apt-get install rclone)"; exit 2; }

T=$(mktemp -d /tmp/depthspace-s3bench.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [ "${KEEP:-}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
mkdir -p "$T"/{gw,data}
read -r PORT PROXY_PORT < <($PY -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
KEY=benchkey SECRET=benchsecret$RANDOM
ENDPOINT=http://127.0.0.1:$PORT
ROOT_ACCESS_KEY_ID=$KEY ROOT_SECRET_ACCESS_KEY=$SECRET "$VGW" --port "127.0.0.1:$PORT" posix "$T/gw" >"$T/versitygw.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do curl -s -o /dev/null "$ENDPOINT/" && break; sleep 0.1; done

go build -o "$T/depthspace" ./cmd/depthspace
go build -tags s3 -o "$T/depthspace-s3" ./cmd/depthspace
DS=$T/depthspace # as installed: s3:// runs exec depthspace-s3, found next to it
export AWS_ACCESS_KEY_ID=$KEY AWS_SECRET_ACCESS_KEY=$SECRET AWS_ENDPOINT_URL=$ENDPOINT
export AWS_CONFIG_FILE=$T/none AWS_SHARED_CREDENTIALS_FILE=$T/none
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL_S3 AWS_REGION AWS_DEFAULT_REGION
# rclone's remote, from the environment; AWS_CA_BUNDLE (set on some
# machines) makes rclone's S3 client refuse its own transport.
touch "$T/rclone.conf"
RC=(env -u AWS_CA_BUNDLE RCLONE_CONFIG=$T/rclone.conf RCLONE_CONFIG_VGW_TYPE=s3 RCLONE_CONFIG_VGW_PROVIDER=Other
  RCLONE_CONFIG_VGW_ACCESS_KEY_ID=$KEY RCLONE_CONFIG_VGW_SECRET_ACCESS_KEY=$SECRET
  RCLONE_CONFIG_VGW_ENDPOINT=$ENDPOINT RCLONE_CONFIG_VGW_REGION=us-east-1 rclone)
for b in src dst rcl; do "${RC[@]}" mkdir "vgw:$b"; done

$PY - "$T/data" <<'PYEOF'
import sys, os, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(3)
for i in range(100):
    p = os.path.join(d, "many", f"d{i % 4}", f"x{i:03d}.npy")
    os.makedirs(os.path.dirname(p), exist_ok=True)
    np.save(p, rng.random((3, 4, 256, 256), dtype=np.float32))  # 3 MiB
np.save(os.path.join(d, "big.npy"), rng.random((1, 16, 2048, 2048), dtype=np.float32))  # 256 MiB
np.save(os.path.join(d, "k900.npy"), rng.random(900 * 256, dtype=np.float32))  # 900 KiB
PYEOF
"$DS" convert --out-dir s3://src/many/ "$T/data/many" 2>/dev/null
"$DS" convert "$T/data/big.npy" s3://src/big.npy
"$DS" convert "$T/data/k900.npy" s3://src/k900.npy
echo "server: versitygw posix on $ENDPOINT; $(rclone version | head -n1); depthspace $(git describe --always --dirty)"
"${RC[@]}" copy -vv vgw:src/many vgw:rcl/probe 2>&1 | grep -m1 -o "Copied (server-side copy)" |
  sed 's/^/rclone copy between buckets of one remote: /' || true

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# time_it NAME CMD...: median wall seconds of RUNS runs after a warm-up
time_it() {
  local name=$1
  shift
  "$@" >/dev/null 2>&1 || { echo "$name: failed: $*"; "$@" 2>&1 | tail -3; return 1; }
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f "%e" -o "$T/t" "$@" >/dev/null 2>&1
    cat "$T/t"
  done | median | xargs printf "%-58s %6.2f s (median of $RUNS)\n" "$name"
}
# rss_anon CMD...: the peak RssAnon of CMD, sampled every 10 ms
rss_anon() {
  "$@" >/dev/null 2>&1 &
  local pid=$! peak=0 v
  while kill -0 $pid 2>/dev/null; do
    v=$(awk '/^RssAnon/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0)
    [ -n "$v" ] && [ "$v" -gt "$peak" ] && peak=$v
    sleep 0.01
  done
  wait $pid
  echo "$((peak / 1024)) MiB"
}

echo "--- 1. 100 × 3 MiB npy objects, bucket to bucket"
time_it "depthspace s2d -b 2 --out-dir s3://dst/s2d/ s3://src/many/" "$DS" s2d -b 2 --out-dir s3://dst/s2d/ s3://src/many/
time_it "rclone copy -I (server-side copy)" "${RC[@]}" copy -I vgw:src/many vgw:rcl/a
time_it "rclone copy -I --disable Copy" "${RC[@]}" copy -I --disable Copy vgw:src/many vgw:rcl/b
time_it "rclone copy -I --disable Copy --expect-continue-timeout 0" "${RC[@]}" copy -I --disable Copy --expect-continue-timeout 0 vgw:src/many vgw:rcl/c
echo "depthspace peak RssAnon: $(rss_anon "$DS" s2d -b 2 --out-dir s3://dst/s2d/ s3://src/many/)"

echo "--- 2. one 256 MiB object, bucket to bucket"
time_it "depthspace s2d -b 2 s3://src/big.npy -o s3://dst/big.npy" "$DS" s2d -b 2 s3://src/big.npy -o s3://dst/big.npy
time_it "rclone copyto -I (server-side copy)" "${RC[@]}" copyto -I vgw:src/big.npy vgw:rcl/big1.npy
time_it "rclone copyto -I --disable Copy" "${RC[@]}" copyto -I --disable Copy vgw:src/big.npy vgw:rcl/big2.npy
time_it "rclone copyto -I --disable Copy --expect-continue-timeout 0" "${RC[@]}" copyto -I --disable Copy --expect-continue-timeout 0 vgw:src/big.npy vgw:rcl/big3.npy
echo "depthspace peak RssAnon: $(rss_anon "$DS" s2d -b 2 s3://src/big.npy -o s3://dst/big.npy)"

echo "--- 3. info of a 900 KiB npy object"
$PY scripts/byteproxy.py "$PROXY_PORT" "$PORT" "$T/count" &
PIDS+=($!)
for _ in $(seq 50); do [ -f "$T/count" ] && break; sleep 0.1; done
AWS_ENDPOINT_URL=http://127.0.0.1:$PROXY_PORT "$DS" info s3://src/k900.npy >/dev/null
sleep 0.2
echo "depthspace info s3://src/k900.npy (921,728 bytes): $(cat "$T/count") bytes from the server, headers included"
