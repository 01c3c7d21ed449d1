#!/usr/bin/env bash
# Objects side by side with s5cmd and rclone, on one S3 server (versitygw,
# posix backend over a temporary directory on 127.0.0.1) seen through
# scripts/latencyproxy.py, which holds each answer DELAY ms as a server in
# a remote region does (0 ms: the same path, nothing held):
#   many: 1,000 npy objects of 1 MiB, prefix to prefix:
#         depthspace s2d -b 2 --out-dir s3://dst/ds/ s3://src/many/
#         against s5cmd's download of the prefix then upload of the files
#         (one command after the other, its defaults: 256 workers), and
#         rclone copy --disable Copy --expect-continue-timeout 0 (between
#         two buckets of one remote rclone otherwise copies server side,
#         no bytes passing through it; versitygw sends no "100 Continue",
#         for which rclone's client would wait 1 s before each body);
#   big:  one 1 GiB npy object, the same three (rclone copyto), and
#         depthspace's output checked against numpy's s2d once;
#   info: info of a 900 KiB npy object, the bytes the server sends,
#         counted by scripts/byteproxy.py.
# The commands of a scenario run in turn, RUNS rounds (default 3) after
# one warm-up round; each prints its median wall time (/usr/bin/time) and
# depthspace's median ratio to each of the others, round by round (a
# round's ratio is not moved by the machine slowing down between rounds).
# Peak RssAnon (the largest single process of the command, sampled from
# /proc every 20 ms) is read during the warm-up round.
#
# Usage: bench/s3.sh [many] [big] [info]   (all three when none is named)
#   DELAYS="0 20" RUNS=3, KEEP=1 keeps the temp dir, S5CMD=path to use
#   that s5cmd instead of building v2.3.0 into ~/.cache/depthspace-bench.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
RUNS=${RUNS:-3}
DELAYS=${DELAYS:-0 20}
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=(many big info)
GOBIN=$(go env GOBIN)
[ -n "$GOBIN" ] || GOBIN=$(go env GOPATH)/bin
VGW=$GOBIN/versitygw
[ -x "$VGW" ] || { echo "no $VGW: run scripts/s3-e2e.sh once (it installs versitygw)"; exit 2; }
command -v rclone >/dev/null || { echo "rclone missing (apt-get install rclone)"; exit 2; }
# s5cmd v2.3.0, built from its module: the Go proxy here does not serve
# version lists, so `go install …@latest` cannot resolve it.
S5=${S5CMD:-${XDG_CACHE_HOME:-$HOME/.cache}/depthspace-bench/s5cmd-v2.3.0}
if ! [ -x "$S5" ]; then
  echo "building s5cmd v2.3.0 into $S5"
  scratch=$(mktemp -d /tmp/s5cmd-build.XXXXXX)
  (cd "$scratch" && go mod init s5build >/dev/null 2>&1 && go get github.com/peak/s5cmd/v2@v2.3.0 >/dev/null 2>&1 &&
    mkdir -p "$(dirname "$S5")" && go build -o "$S5" github.com/peak/s5cmd/v2)
  rm -rf "$scratch"
fi

T=$(mktemp -d /tmp/depthspace-s3bench.XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [ "${KEEP:-}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
mkdir -p "$T"/{gw,data,s5}
# the server, a byte-counting proxy, and one latency proxy per delay
. scripts/e2e-lib.sh # free_ports, start_versitygw, start_latency_proxies
read -r PORT COUNT_PORT SLOW_PORTS < <(free_ports $((2 + $(echo "$DELAYS" | wc -w))))
KEY=benchkey SECRET=benchsecret$RANDOM
ENDPOINT=http://127.0.0.1:$PORT
start_versitygw "$PORT" "$T/gw"
declare -A PROXY
start_latency_proxies "$PORT" "$DELAYS" "$SLOW_PORTS"

go build -o "$T/depthspace" ./cmd/depthspace
go build -tags s3 -o "$T/depthspace-s3" ./cmd/depthspace
DS=$T/depthspace # as installed: s3:// runs exec depthspace-s3, found next to it
export AWS_ACCESS_KEY_ID=$KEY AWS_SECRET_ACCESS_KEY=$SECRET AWS_REGION=us-east-1
export AWS_CONFIG_FILE=$T/none AWS_SHARED_CREDENTIALS_FILE=$T/none
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_DEFAULT_REGION AWS_CA_BUNDLE
touch "$T/rclone.conf"
rc() { # ENDPOINT ARGS...: rclone with remote vgw: at ENDPOINT, from the environment
  local ep=$1
  shift
  env RCLONE_CONFIG="$T/rclone.conf" RCLONE_CONFIG_VGW_TYPE=s3 RCLONE_CONFIG_VGW_PROVIDER=Other \
    RCLONE_CONFIG_VGW_ACCESS_KEY_ID=$KEY RCLONE_CONFIG_VGW_SECRET_ACCESS_KEY=$SECRET \
    RCLONE_CONFIG_VGW_ENDPOINT="$ep" RCLONE_CONFIG_VGW_REGION=us-east-1 rclone "$@"
}
for b in src dst; do rc "$ENDPOINT" mkdir "vgw:$b"; done
echo "server: versitygw posix on $ENDPOINT; $(rclone version | head -n1); s5cmd v2.3.0 ($S5); depthspace $(git describe --always --dirty)"
echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"

has() { local s; for s in "${SCENARIOS[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

# rss_peak PID: the peak RssAnon (KiB) of the largest single process of
# PID's tree, sampled until PID ends.
rss_peak() {
  $PY - "$1" <<'PYEOF'
import os, sys, time
root, peak = int(sys.argv[1]), 0
def status(pid):
    try:
        return open(f"/proc/{pid}/status").read()
    except OSError:
        return ""
while True:
    s = status(root)
    if not s or "\nState:\tZ" in s:
        break
    parent = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                parent[int(p)] = int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    tree = {root}
    for p in parent:  # descendants: follow each parent chain up to root
        chain, q = [], p
        while q in parent and q not in tree and q > 1:
            chain.append(q)
            q = parent[q]
        if q in tree:
            tree.update(chain)
    for p in tree:
        for line in status(p).splitlines():
            if line.startswith("RssAnon:"):
                peak = max(peak, int(line.split()[1]))
    time.sleep(0.02)
print(peak)
PYEOF
}

# compare TITLE NAME=CMD...: RUNS rounds of the commands in turn after a
# warm-up round (peak RssAnon read then); the first is depthspace.
compare() {
  local title=$1
  shift
  local names=() cmds=() i r
  for nc in "$@"; do names+=("${nc%%=*}"); cmds+=("${nc#*=}"); done
  echo "--- $title"
  for i in "${!cmds[@]}"; do
    bash -c "${cmds[$i]}" >"$T/out" 2>&1 &
    local pid=$!
    local peak
    peak=$(rss_peak $pid)
    wait $pid || { echo "${names[$i]}: failed: ${cmds[$i]}"; tail -3 "$T/out"; return 1; }
    echo "$((peak / 1024))" >"$T/rss.$i"
    : >"$T/times.$i"
  done
  for r in $(seq "$RUNS"); do
    for i in "${!cmds[@]}"; do
      /usr/bin/time -f "%e" -o "$T/t" bash -c "${cmds[$i]}" >/dev/null 2>&1 || { echo "${names[$i]}: failed in round $r"; return 1; }
      cat "$T/t" >>"$T/times.$i"
    done
  done
  for i in "${!cmds[@]}"; do
    printf "  %-10s %7.2f s (median of %d; %s s)  peak RssAnon %5d MiB   %s\n" "${names[$i]}" \
      "$(sort -n "$T/times.$i" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')" "$RUNS" \
      "$(paste -sd' ' "$T/times.$i")" "$(cat "$T/rss.$i")" "${cmds[$i]//$T/\$T}"
  done
  for i in "${!cmds[@]}"; do
    [ "$i" = 0 ] && continue
    printf "  %s / %s: %.2f (median of the rounds' ratios)\n" "${names[0]}" "${names[$i]}" \
      "$(paste "$T/times.0" "$T/times.$i" | awk '{print $1 / $2}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
  done
}

if has many || has big; then
  $PY - "$T/data" "$(has many && echo 1 || echo 0)" "$(has big && echo 1 || echo 0)" <<'PYEOF'
import sys, os, numpy as np
d, many, big = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
rng = np.random.default_rng(31)
if many:
    for i in range(1000):
        p = os.path.join(d, "many", f"d{i % 4}", f"x{i:04d}.npy")
        os.makedirs(os.path.dirname(p), exist_ok=True)
        np.save(p, rng.random((1, 4, 256, 256), dtype=np.float32))  # 1 MiB
if big:
    m = np.lib.format.open_memmap(os.path.join(d, "big.npy"), "w+", np.float32, (1, 16, 4096, 4096))  # 1 GiB
    for c in range(16):
        m[0, c] = rng.random((4096, 4096), dtype=np.float32)
    m.flush()
PYEOF
  has many && "$S5" --endpoint-url "$ENDPOINT" cp "$T/data/many/*" s3://src/many/ >/dev/null
  has big && "$S5" --endpoint-url "$ENDPOINT" cp "$T/data/big.npy" s3://src/big.npy >/dev/null
  rm -rf "$T/data"
fi

for d in $DELAYS; do
  EP=${PROXY[$d]}
  S5E="$S5 --endpoint-url $EP"
  RC="env RCLONE_CONFIG=$T/rclone.conf RCLONE_CONFIG_VGW_TYPE=s3 RCLONE_CONFIG_VGW_PROVIDER=Other RCLONE_CONFIG_VGW_ACCESS_KEY_ID=$KEY RCLONE_CONFIG_VGW_SECRET_ACCESS_KEY=$SECRET RCLONE_CONFIG_VGW_ENDPOINT=$EP RCLONE_CONFIG_VGW_REGION=us-east-1 rclone"
  if has many; then
    compare "1,000 npy objects of 1 MiB, prefix to prefix, each answer held $d ms" \
      "depthspace=AWS_ENDPOINT_URL=$EP $DS s2d -b 2 --out-dir s3://dst/ds/ s3://src/many/" \
      "s5cmd=rm -rf $T/s5/many && $S5E cp 's3://src/many/*' $T/s5/many/ && $S5E cp '$T/s5/many/*' s3://dst/s5/" \
      "rclone=$RC copy -I --disable Copy --expect-continue-timeout 0 vgw:src/many vgw:dst/rclone"
  fi
  if has big; then
    compare "one 1 GiB npy object, each answer held $d ms" \
      "depthspace=AWS_ENDPOINT_URL=$EP $DS s2d -b 2 s3://src/big.npy -o s3://dst/ds-big.npy" \
      "s5cmd=rm -f $T/s5/big.npy && $S5E cp s3://src/big.npy $T/s5/big.npy && $S5E cp $T/s5/big.npy s3://dst/s5-big.npy" \
      "rclone=$RC copyto -I --disable Copy --expect-continue-timeout 0 vgw:src/big.npy vgw:dst/rclone-big.npy"
    if [ -z "${checked:-}" ]; then
      # depthspace's output object, fetched by s5cmd, against numpy's
      # s2d of the input object (dcr, block 2), one output channel at a
      # time through memory maps.
      "$S5" --endpoint-url "$ENDPOINT" cp s3://src/big.npy "$T/check-in.npy" >/dev/null
      "$S5" --endpoint-url "$ENDPOINT" cp s3://dst/ds-big.npy "$T/check-out.npy" >/dev/null
      $PY - "$T/check-in.npy" "$T/check-out.npy" <<'PYEOF'
import sys, numpy as np
x, y = np.load(sys.argv[1], mmap_mode="r"), np.load(sys.argv[2], mmap_mode="r")
n, c, h, w = x.shape
assert y.shape == (n, 4 * c, h // 2, w // 2) and y.dtype == x.dtype, (y.shape, y.dtype)
for k1 in range(2):
    for k2 in range(2):
        for ch in range(c):
            assert np.array_equal(y[0, (k1 * 2 + k2) * c + ch], x[0, ch, k1::2, k2::2]), (k1, k2, ch)
print("  depthspace's output object equals numpy's s2d of the input (fetched with s5cmd)")
PYEOF
      rm -f "$T/check-in.npy" "$T/check-out.npy"
      checked=1
    fi
  fi
  echo "  answers held by the $d ms proxy so far: $(cat "$T/answers.$d")"
done

if has info; then
  echo "--- info of a 900 KiB npy object"
  $PY -c 'import sys, numpy as np; np.save(sys.argv[1], np.random.default_rng(3).random(900 * 256, dtype=np.float32))' "$T/k900.npy"
  AWS_ENDPOINT_URL=$ENDPOINT "$DS" convert "$T/k900.npy" s3://src/k900.npy
  $PY scripts/byteproxy.py "$COUNT_PORT" "$PORT" "$T/count" &
  PIDS+=($!)
  for _ in $(seq 50); do [ -f "$T/count" ] && break; sleep 0.1; done
  AWS_ENDPOINT_URL=http://127.0.0.1:$COUNT_PORT "$DS" info s3://src/k900.npy >/dev/null
  sleep 0.2
  echo "  depthspace info s3://src/k900.npy (921,728 bytes): $(cat "$T/count") bytes from the server, headers included"
fi
