#!/usr/bin/env bash
# Zarr's check: s2d -b 2 of a 1 GiB float32 v2 array (Blosc lz4, byte
# shuffle, 16 MiB chunks [1, 1, 1024, 4096] of [1, 16, 4096, 4096]) into a
# v2 store, by depthspace and by zarr-python + numpy doing the same job
# (z[:], reshape, transpose, reshape, write with zarr-python's default
# compressor, 16 MiB chunks), N times in turn (GNU time: wall seconds,
# CPU seconds (user + system) and peak RSS; RssAnon, what the process
# holds itself, from /proc/PID/status sampled every 50 ms), printing the
# medians and the medians of the pairs' wall and CPU ratios. The two
# outputs are checked equal. depthspace keeps the input's chunking
# through the operator: its output chunks are [1, 4, 512, 2048], 16 MiB
# as the peer's [1, 1, 2048, 2048].
#   bench/zarr.sh [--rounds N] [--scratch DIR] [--keep]
# Needs Go, GNU time and Debian's python3-zarr (with numcodecs).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 scratch=${TMPDIR:-/tmp} keep=
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift 2 ;;
	--scratch) scratch=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	*) echo "usage: bench/zarr.sh [--rounds N] [--scratch DIR] [--keep]" >&2; exit 2 ;;
	esac
done
[ -x /usr/bin/time ] || { echo "bench needs GNU time: apt-get install time" >&2; exit 2; }
d=$(mktemp -d "$scratch/depthspace-zarr.XXXXXX")
if [ -z "$keep" ]; then trap 'rm -rf "$d"' EXIT; else echo "files in $d"; fi
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$d/depthspace" ./cmd/depthspace

/usr/bin/python3 - "$d" <<'PY'
import sys, numpy as np, zarr
from numcodecs import Blosc
d = sys.argv[1]
z = zarr.open(d + "/in.zarr", mode="w", shape=(1, 16, 4096, 4096), chunks=(1, 1, 1024, 4096),
              dtype="<f4", compressor=Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE))
rng = np.random.default_rng(34)
for c in range(16):  # a smooth field plus noise: compresses as measured data do
    y, x = np.mgrid[0:4096, 0:4096].astype(np.float32) / 512
    z[0, c] = np.sin(x + c) * np.cos(y) + rng.standard_normal((4096, 4096), dtype=np.float32) * 0.01
PY
cat > "$d/peer.py" <<'PY'
import sys, zarr
src, dst = sys.argv[1], sys.argv[2]
a = zarr.open(src, mode="r")[:]                      # [1, 16, 4096, 4096]
n, c, h, w = a.shape
b = a.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, 4 * c, h // 2, w // 2)  # s2d dcr
zarr.save_array(dst, b, chunks=(1, 1, 2048, 2048))   # 16 MiB chunks, Blosc lz4 shuffle (the default)
PY

# rss CMD... runs CMD under GNU time and samples its RssAnon; prints
# "wall_seconds peak_rss_kib cpu_seconds peak_rssanon_kib".
rss() {
	/usr/bin/time -f "%e %M %U %S" -o "$d/time" "$@" &
	local pid=$! anon=0 a
	while kill -0 "$pid" 2>/dev/null; do
		for p in $(pgrep -P "$pid") "$pid"; do
			a=$(awk '/^RssAnon/ {print $2}' "/proc/$p/status" 2>/dev/null || true)
			[ -n "$a" ] && [ "$a" -gt "$anon" ] && anon=$a
		done
		sleep 0.05
	done
	wait "$pid"
	awk -v anon="$anon" '{ print $1, $2, $3 + $4, anon }' "$d/time"
}

: > "$d/ds" ; : > "$d/py"
for i in $(seq "$rounds"); do
	rm -rf "$d/out-ds.zarr" "$d/out-py.zarr"
	rss "$d/depthspace" s2d -b 2 --to zarr "$d/in.zarr" -o "$d/out-ds.zarr" >> "$d/ds"
	rss /usr/bin/python3 "$d/peer.py" "$d/in.zarr" "$d/out-py.zarr" >> "$d/py"
done
"$d/depthspace" compare "$d/out-ds.zarr" "$d/out-py.zarr" > /dev/null || { echo "outputs differ" >&2; exit 1; }
paste "$d/ds" "$d/py" | awk -v rounds="$rounds" '
	{ dw[NR] = $1; dc[NR] = $3; da[NR] = $4; pw[NR] = $5; pc[NR] = $7; pa[NR] = $8; r[NR] = $1 / $5; rc[NR] = $3 / $7 }
	function median(x, n,   i, j, t) {
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
		return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
	}
	END {
		printf "pairs (wall s, CPU s, RssAnon MiB): depthspace / peer\n"
		for (i = 1; i <= NR; i++) printf "  %.2f %.2f %d / %.2f %.2f %d\n", dw[i], dc[i], da[i] / 1024, pw[i], pc[i], pa[i] / 1024
		printf "depthspace s2d -b 2 (1 GiB float32 v2 store, blosc lz4): wall %.2f s, CPU %.2f s, RssAnon %d MiB\n", median(dw, NR), median(dc, NR), median(da, NR) / 1024
		printf "zarr-python + numpy, the same job:                   wall %.2f s, CPU %.2f s, RssAnon %d MiB\n", median(pw, NR), median(pc, NR), median(pa, NR) / 1024
		printf "wall ratio (median of %d pairs): %.2f\n", NR, median(r, NR)
		printf "CPU ratio (median of %d pairs):  %.2f\n", NR, median(rc, NR)
	}'
