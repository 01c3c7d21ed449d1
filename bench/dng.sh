#!/usr/bin/env bash
# Speed check: camera DNGs to four planes.
#   bench/dng.sh [--files N] [--rounds R] [--scratch DIR]
# Writes N camera-sized DNGs (6048x4024, 14-bit lossless JPEG in 256x256
# tiles, as Adobe's converter writes them; and the same mosaics as 16-bit
# uncompressed strips) with the test writer in internal/format, then times
# whole processes, alternating round by round, and prints each one's
# median and the median of the per-round ratios:
#   ljpeg:  depthspace s2d -b 2 --layout hw --block-order cfa --out-dir
#           --to npy (all cores) against LibRaw's unprocessed_raw over the
#           same files (one process, as it is run; and two at a time with
#           xargs -P 2, a core each);
#   plain:  the same depthspace command against cp -r of the directory.
# Needs Go, GNU coreutils and Debian's libraw-bin. Inputs are read from the
# page cache (one warm-up round), as cp's are.
set -euo pipefail
cd "$(dirname "$0")/.."
files=8 rounds=5 scratch=${TMPDIR:-/tmp}
while [ $# -gt 0 ]; do
	case "$1" in
	--files) files=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--scratch) scratch=$2; shift 2 ;;
	*) echo "usage: bench/dng.sh [--files N] [--rounds R] [--scratch DIR]" >&2; exit 2 ;;
	esac
done
command -v unprocessed_raw >/dev/null || { echo "bench/dng.sh needs LibRaw's unprocessed_raw: apt-get install libraw-bin" >&2; exit 2; }
d=$(mktemp -d "$scratch/depthspace-dng-XXXXXX")
trap 'rm -rf "$d"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$d/depthspace" ./cmd/depthspace
DEPTHSPACE_DNG_BENCH="$d/in $files" go test ./internal/format/dng/ -run '^TestDNGBenchFiles$' -count=1 >/dev/null
echo "$(nproc) cores; $files DNGs: ljpeg $(du -sh "$d/in/ljpeg" | cut -f1), plain $(du -sh "$d/in/plain" | cut -f1)"

# seconds runs a command once and prints its wall time.
seconds() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>&1
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}
ds_ljpeg() { rm -rf "$d/out"; "$d/depthspace" s2d -b 2 --layout hw --block-order cfa --out-dir "$d/out" --to npy --progress never "$d/in/ljpeg"; }
ds_plain() { rm -rf "$d/out"; "$d/depthspace" s2d -b 2 --layout hw --block-order cfa --out-dir "$d/out" --to npy --progress never "$d/in/plain"; }
libraw1() { unprocessed_raw -q "$d"/in/ljpeg/*.dng; }
libraw2() { printf '%s\n' "$d"/in/ljpeg/*.dng | xargs -P 2 -n 1 unprocessed_raw -q; }
cpr() { rm -rf "$d/cp"; cp -r "$d/in/plain" "$d/cp"; }

declare -A all
names="ds_ljpeg libraw1 libraw2 ds_plain cpr"
for n in $names; do "$n" >/dev/null 2>&1; done # warm-up
for r in $(seq "$rounds"); do
	for n in $names; do all[$n]+="$(seconds "$n") "; done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ratios() { # median over rounds of A/B
	local -a a=(${all[$1]}) b=(${all[$2]})
	for i in "${!a[@]}"; do echo "${a[$i]} / ${b[$i]}" | bc -l; done | tr '\n' ' ' | median
}
for n in $names; do printf '%-9s median %.3f s  (%s)\n' "$n" "$(echo "${all[$n]}" | median)" "${all[$n]}"; done
printf 'ljpeg: depthspace / unprocessed_raw (one process)  %.2fx\n' "$(ratios ds_ljpeg libraw1)"
printf 'ljpeg: depthspace / unprocessed_raw (xargs -P 2)   %.2fx\n' "$(ratios ds_ljpeg libraw2)"
printf 'plain: depthspace / cp -r                          %.2fx\n' "$(ratios ds_plain cpr)"
