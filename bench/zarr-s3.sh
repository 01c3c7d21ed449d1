#!/usr/bin/env bash
# Zarr on s3://: s2d -b 2 of the 1 GiB float32 array of bench/zarr.sh
# ([1, 16, 4096, 4096]), stored as a sharded v3 array on an S3 server
# (versitygw, posix backend over a temporary directory on 127.0.0.1),
# read through scripts/latencyproxy.py (each answer held DELAY ms, as a
# server in a remote region; 0: the same path, nothing held), written as
# a local v2 store (Blosc lz4 shuffle, 16 MiB chunks), side by side with:
#   s5cmd: s5cmd cp of the same sharded store's objects to a local
#          directory (its defaults: 256 workers): the download alone, the
#          floor of any tool that copies a store before reading it;
#   zarr-python: s5cmd cp of the same array stored as v2 (Blosc lz4
#          shuffle, 16 MiB chunks), then zarr-python + numpy doing the job
#          on the local copy (z[:], reshape, transpose, write, as
#          bench/zarr.sh's peer): Debian's zarr 2.13 reads no v3 and, with
#          no s3fs here, no s3:// either.
# The sharded store: inner chunks [1, 1, 512, 512] (1 MiB), shards
# [1, 4, 4096, 4096] (256 MiB, 256 inner chunks each), zstd, written by
# depthspace. The commands run in turn, RUNS rounds (default 3): median
# wall seconds and peak RssAnon (the largest single process, sampled
# every 50 ms), and depthspace's median ratio to each, round by round;
# and how many answers the proxy passed to depthspace's last run (its
# requests: the index of each shard, then the runs of inner chunks read
# together, and the metadata).
# depthspace's output is checked equal to zarr-python's. Then the same
# job from local copies, depthspace alone (the memory bound, with no
# network to wait for): the sharded v3 store, and the array as v2 with
# zstd chunks of 16 MiB (written by depthspace --zarr-codec zstd).
#   bench/zarr-s3.sh      DELAYS="0 20" RUNS=3, KEEP=1 keeps the temp dir,
#                         S5CMD=path (default: bench/s3.sh's build)
# Needs versitygw (scripts/s3-e2e.sh installs it), GNU time, curl,
# Debian's python3-zarr, and s5cmd (bench/s3.sh builds it).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
RUNS=${RUNS:-3}
DELAYS=${DELAYS:-"0 20"}
GOBIN=$(go env GOBIN)
[ -n "$GOBIN" ] || GOBIN=$(go env GOPATH)/bin
VGW=$GOBIN/versitygw
[ -x "$VGW" ] || { echo "no $VGW: run scripts/s3-e2e.sh once (it installs versitygw)" >&2; exit 2; }
S5=${S5CMD:-${XDG_CACHE_HOME:-$HOME/.cache}/depthspace-bench/s5cmd-v2.3.0}
[ -x "$S5" ] || { echo "no s5cmd at $S5: run bench/s3.sh once (it builds it), or set S5CMD" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench needs GNU time: apt-get install time" >&2; exit 2; }
T=$(mktemp -d /tmp/depthspace-zarrs3.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [ "${KEEP:-}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
mkdir -p "$T/gw"
. scripts/e2e-lib.sh # free_ports, start_versitygw, start_latency_proxies
read -r PORT SLOW_PORTS < <(free_ports $((1 + $(echo "$DELAYS" | wc -w))))
KEY=benchkey SECRET=benchsecret$RANDOM
ENDPOINT=http://127.0.0.1:$PORT
start_versitygw "$PORT" "$T/gw"
declare -A PROXY
start_latency_proxies "$PORT" "$DELAYS" "$SLOW_PORTS"
curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user "$KEY:$SECRET" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
  -X PUT "$ENDPOINT/src" -o /dev/null
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -tags s3 -o "$T/depthspace" ./cmd/depthspace
DS=$T/depthspace
export AWS_ACCESS_KEY_ID=$KEY AWS_SECRET_ACCESS_KEY=$SECRET AWS_REGION=us-east-1
export AWS_CONFIG_FILE=$T/none AWS_SHARED_CREDENTIALS_FILE=$T/none
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL_S3 AWS_DEFAULT_REGION AWS_CA_BUNDLE

# The array, as bench/zarr.sh makes it; then its sharded v3 and v2 copies
# on the server.
$PY - "$T" <<'PY'
import sys, numpy as np, zarr
from numcodecs import Blosc
d = sys.argv[1]
z = zarr.open(d + "/in2.zarr", mode="w", shape=(1, 16, 4096, 4096), chunks=(1, 1, 1024, 4096),
              dtype="<f4", compressor=Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE))
rng = np.random.default_rng(34)
for c in range(16):  # a smooth field plus noise: compresses as measured data do
    y, x = np.mgrid[0:4096, 0:4096].astype(np.float32) / 512
    z[0, c] = np.sin(x + c) * np.cos(y) + rng.standard_normal((4096, 4096), dtype=np.float32) * 0.01
PY
"$DS" convert --to zarr3 --chunks 1,1,512,512 --zarr-shard 1,4,4096,4096 "$T/in2.zarr" "$T/in3.zarr"
# Up by s5cmd, byte for byte: the objects on the server are the local
# store's (a depthspace convert of a store to a store keeps its sharding
# too, but puts each 256 MiB shard in one request from a scratch copy).
"$S5" --endpoint-url "$ENDPOINT" cp "$T/in3.zarr/" s3://src/in3.zarr/ >/dev/null
"$S5" --endpoint-url "$ENDPOINT" cp "$T/in2.zarr/" s3://src/in2.zarr/ >/dev/null
AWS_ENDPOINT_URL=$ENDPOINT "$DS" info s3://src/in3.zarr | grep -q '^  shards  *1,4,4096,4096$' ||
  { echo "s3://src/in3.zarr is not the sharded store" >&2; exit 1; }
cat >"$T/peer.py" <<'PY'
import sys, zarr
src, dst = sys.argv[1], sys.argv[2]
a = zarr.open(src, mode="r")[:]                      # [1, 16, 4096, 4096]
n, c, h, w = a.shape
b = a.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, 4 * c, h // 2, w // 2)  # s2d dcr
zarr.save_array(dst, b, chunks=(1, 1, 2048, 2048))   # 16 MiB chunks, Blosc lz4 shuffle (the default)
PY
echo "server: versitygw posix on $ENDPOINT; s5cmd v2.3.0 ($S5); depthspace $(git describe --always --dirty)"
echo "store: $(du -sm "$T/in3.zarr" | cut -f1) MiB sharded v3 ($(find "$T/in3.zarr" -type f | wc -l) objects), $(du -sm "$T/in2.zarr" | cut -f1) MiB v2 ($(find "$T/in2.zarr" -type f | wc -l) objects)"
echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"

# rss CMD...: CMD under GNU time, the RssAnon of the largest single
# process of its tree sampled; prints "wall_seconds peak_rssanon_kib".
rss() {
  /usr/bin/time -f "%e" -o "$T/time" "$@" &
  local pid=$!
  local anon
  anon=$($PY - "$pid" <<'PYEOF'
import os, sys, time
root, peak = int(sys.argv[1]), 0
def kids(pid):
    try:
        return [int(c) for t in os.listdir(f"/proc/{pid}/task") for c in open(f"/proc/{pid}/task/{t}/children").read().split()]
    except OSError:
        return []
while os.path.exists(f"/proc/{root}") and open(f"/proc/{root}/stat").read().split()[2] != "Z":
    todo, seen = [root], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += kids(p)
    for p in seen:
        try:
            for line in open(f"/proc/{p}/status"):
                if line.startswith("RssAnon:"):
                    peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
    time.sleep(0.05)
print(peak)
PYEOF
)
  wait "$pid"
  echo "$(cat "$T/time") $anon"
}

for d in $DELAYS; do
  ep=${PROXY[$d]}
  S5E="$S5 --endpoint-url $ep"
  : >"$T/ds" && : >"$T/s5" && : >"$T/py"
  for _ in $(seq "$RUNS"); do
    rm -rf "$T/out-ds.zarr" "$T/dl3" "$T/dl2" "$T/out-py.zarr"
    before=$(cat "$T/answers.$d")
    AWS_ENDPOINT_URL=$ep rss "$DS" s2d -b 2 --to zarr s3://src/in3.zarr -o "$T/out-ds.zarr" >>"$T/ds"
    echo $(($(cat "$T/answers.$d") - before)) >"$T/requests"
    rss sh -c "$S5E cp 's3://src/in3.zarr/*' '$T/dl3/' >/dev/null" >>"$T/s5"
    rss sh -c "$S5E cp 's3://src/in2.zarr/*' '$T/dl2/' >/dev/null && $PY '$T/peer.py' '$T/dl2' '$T/out-py.zarr'" >>"$T/py"
  done
  "$DS" compare "$T/out-ds.zarr" "$T/out-py.zarr" >/dev/null || { echo "outputs differ" >&2; exit 1; }
  paste "$T/ds" "$T/s5" "$T/py" | awk -v delay="$d" -v requests="$(cat "$T/requests")" '
    { dw[NR] = $1; da[NR] = $2; sw[NR] = $3; sa[NR] = $4; pw[NR] = $5; pa[NR] = $6; rs[NR] = $1 / $3; rp[NR] = $1 / $5 }
    function median(x, n,   i, j, t) {
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
      return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
    }
    END {
      printf "delay %s ms, %d rounds (medians):\n", delay, NR
      printf "  depthspace s2d -b 2 s3:// sharded v3 -> local v2: wall %6.2f s, RssAnon %4d MiB, %d answers through the proxy\n", median(dw, NR), median(da, NR) / 1024, requests
      printf "  s5cmd cp of the sharded store (download only):   wall %6.2f s, RssAnon %4d MiB  (depthspace/s5cmd %.2f)\n", median(sw, NR), median(sa, NR) / 1024, median(rs, NR)
      printf "  s5cmd cp of the v2 store + zarr-python + numpy:  wall %6.2f s, RssAnon %4d MiB  (depthspace/zarr-python %.2f)\n", median(pw, NR), median(pa, NR) / 1024, median(rp, NR)
    }'
done

"$DS" convert --to zarr --zarr-codec zstd "$T/in2.zarr" "$T/inz.zarr"
: >"$T/l3" && : >"$T/lz"
for _ in $(seq "$RUNS"); do
  rm -rf "$T/out-l3.zarr" "$T/out-lz.zarr"
  rss "$DS" s2d -b 2 --to zarr "$T/in3.zarr" -o "$T/out-l3.zarr" >>"$T/l3"
  rss "$DS" s2d -b 2 --to zarr "$T/inz.zarr" -o "$T/out-lz.zarr" >>"$T/lz"
done
"$DS" compare "$T/out-l3.zarr" "$T/out-py.zarr" >/dev/null || { echo "local v3 output differs" >&2; exit 1; }
"$DS" compare "$T/out-lz.zarr" "$T/out-py.zarr" >/dev/null || { echo "local zstd v2 output differs" >&2; exit 1; }
paste "$T/l3" "$T/lz" | awk '
  function median(x, n,   i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
    return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
  }
  { aw[NR] = $1; aa[NR] = $2; bw[NR] = $3; ba[NR] = $4 }
  END {
    printf "local, %d rounds (medians):\n", NR
    printf "  depthspace s2d -b 2 local sharded v3 -> local v2:  wall %6.2f s, RssAnon %4d MiB\n", median(aw, NR), median(aa, NR) / 1024
    printf "  depthspace s2d -b 2 local zstd v2 -> local v2:     wall %6.2f s, RssAnon %4d MiB\n", median(bw, NR), median(ba, NR) / 1024
  }'
