#!/usr/bin/env bash
# Start-up check: depthspace against a bare cobra root command.
#   bench/startup.sh [--rounds R] [--runs N] [--scratch DIR]
# Builds, the way the release does (static, stripped: CGO_ENABLED=0 go
# build -trimpath -ldflags '-s -w'), depthspace and the yardstick: a
# cobra root with Version set and nothing else, in a module of its own
# with the same cobra and pflag versions as go.mod,
#     root := &cobra.Command{Use: "bare", Version: "1.0"}; root.Execute()
# then times, in R rounds (default 11), a loop of N runs (default 200) of
# each command in turn:
#     bare --version
#     depthspace --version                      (target: 1.15x bare)
#     depthspace s2d -b 2 k1.npy -o k1o.npy     (1 KiB of float32; target 1.35x)
# and prints each one's median time per run and the median of the
# rounds' ratios to bare. Run it on a quiet machine (uptime): the
# figures are whole processes of a few ms. Needs Go and bash.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=11 runs=200 scratch=/dev/shm
[ -d "$scratch" ] && [ -w "$scratch" ] || scratch=${TMPDIR:-/tmp}
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--scratch) scratch=$2; shift 2 ;;
	*) echo "usage: bench/startup.sh [--rounds R] [--runs N] [--scratch DIR]" >&2; exit 2 ;;
	esac
done
d=$(mktemp -d "$scratch/depthspace-startup.XXXXXX")
trap 'rm -rf "$d"' EXIT
repo=$PWD
build() { CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' "$@"; }
build -o "$d/depthspace" ./cmd/depthspace

# The yardstick, with the cobra and pflag of go.mod (from the module cache).
cobra=$(go list -m -f '{{.Version}}' github.com/spf13/cobra)
pflag=$(go list -m -f '{{.Version}}' github.com/spf13/pflag)
mkdir "$d/bare"
cat >"$d/bare/main.go" <<'GOEOF'
package main

import "github.com/spf13/cobra"

func main() {
	root := &cobra.Command{Use: "bare", Version: "1.0"}
	root.Execute()
}
GOEOF
(
	cd "$d/bare"
	go mod init bare >/dev/null 2>&1
	go mod edit -require="github.com/spf13/cobra@$cobra" -require="github.com/spf13/pflag@$pflag"
	GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1
	build -o "$d/barecobra" .
)
ls -l "$d/depthspace" "$d/barecobra" | awk '{printf "%s: %.1f MB\n", $NF, $5/1e6}' | sed "s|$d/||"

# 1 KiB of float32 [1,4,8,8], made by depthspace itself from raw zeros.
head -c 1024 /dev/zero >"$d/k1.raw"
"$d/depthspace" convert --from raw --dtype float32 --shape 1,4,8,8 "$d/k1.raw" "$d/k1.npy"

# loop CMD...: nanoseconds for $runs runs of CMD.
loop() {
	local t0 t1
	t0=$(date +%s%N)
	for ((i = 0; i < runs; i++)); do "$@" >/dev/null; done
	t1=$(date +%s%N)
	echo $((t1 - t0))
}
cd "$d"
names=(bare version s2d)
for ((r = 0; r < rounds; r++)); do
	b=$(loop ./barecobra --version)
	v=$(loop ./depthspace --version)
	s=$(loop ./depthspace s2d -b 2 k1.npy -o k1o.npy)
	echo "$b $v $s"
done >"$d/times"
awk -v runs="$runs" '
function median(a, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ n++; b[n] = $1; v[n] = $2; s[n] = $3; rv[n] = $2 / $1; rs[n] = $3 / $1 }
END {
	printf "%-44s %8s %10s\n", "command (medians of " n " rounds of " runs " runs)", "per run", "vs bare"
	printf "%-44s %6.2f ms %10s\n", "bare --version", median(b, n) / runs / 1e6, "1"
	printf "%-44s %6.2f ms %9.3fx  (target 1.15x)\n", "depthspace --version", median(v, n) / runs / 1e6, median(rv, n)
	printf "%-44s %6.2f ms %9.3fx  (target 1.35x)\n", "depthspace s2d -b 2 k1.npy -o k1o.npy", median(s, n) / runs / 1e6, median(rs, n)
}' "$d/times"
