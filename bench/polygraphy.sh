#!/usr/bin/env bash
# Check: depthspace compare on Polygraphy RunResults files
# (base64 arrays in JSON) against the same arrays as stored npz.
#   bench/polygraphy.sh [--rounds N] [--scratch DIR] [--keep]
# Writes A.json, B.json (RunResults of one runner, one iteration, 8 float32
# outputs of 64 MiB, Polygraphy's json.dumps(indent=4) layout with
# base64 np.save arrays, as serde.py writes them) and A.npz, B.npz (np.savez,
# stored: the same arrays), then times `depthspace compare` of each pair N
# times, in turn (GNU time: wall seconds and peak RSS), and prints the
# medians and the median of the pairs' ratios. B is A plus noise of about 1e-7 and the compares run with
# --atol 1e-5 --rtol 1e-5, so both read every element and find no
# difference (exit 0). Needs Go, GNU time
# and Debian's python3-numpy.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 scratch=${TMPDIR:-/tmp} keep=
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift 2 ;;
	--scratch) scratch=$2; shift 2 ;;
	--keep) keep=1; shift ;; # leave the files (and say where)
	*) echo "usage: bench/polygraphy.sh [--rounds N] [--scratch DIR] [--keep]" >&2; exit 2 ;;
	esac
done
[ -x /usr/bin/time ] || { echo "bench needs GNU time: apt-get install time" >&2; exit 2; }
d=$(mktemp -d "$scratch/depthspace-polygraphy.XXXXXX")
if [ -z "$keep" ]; then trap 'rm -rf "$d"' EXIT; else echo "files in $d"; fi
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$d/depthspace" ./cmd/depthspace

/usr/bin/python3 - "$d" <<'PY'
import base64, io, json, os, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(26)
names = [f"out{i}" for i in range(8)]
A = [rng.standard_normal((16, 1024, 1024), dtype=np.float32) for _ in names]  # 64 MiB each
B = [a + np.float32(1e-7) * rng.standard_normal(a.shape, dtype=np.float32) for a in A]
runner = "onnxrt-runner-N0-11/25/26-12:00:00"

def write_json(path, arrays):
    # json.dumps(indent=4) of the RunResults structure (serde.py, struct.py)
    # with a placeholder per array, then each placeholder replaced by the
    # base64 of np.save's bytes: the layout Polygraphy writes, one array
    # in memory at a time.
    ph = [f"@@{i}@@" for i in range(len(arrays))]
    outs = {n: {"values": {"array": p, "polygraphy_class": "ndarray"}, "polygraphy_class": "LazyArray"}
            for n, p in zip(names, ph)}
    it = {"outputs": outs, "runtime": 0.123, "runner_name": runner, "polygraphy_class": "IterationResult"}
    text = json.dumps({"lst": [[runner, [it]]], "polygraphy_class": "RunResults"}, indent=" " * 4)
    with open(path, "w") as f:
        for p, a in zip(ph, arrays):
            head, text = text.split(p, 1)
            f.write(head)
            b = io.BytesIO()
            np.save(b, a, allow_pickle=False)
            f.write(base64.b64encode(b.getvalue()).decode())
        f.write(text)

for tag, arrays in (("A", A), ("B", B)):
    write_json(os.path.join(d, tag + ".json"), arrays)
    np.savez(os.path.join(d, tag + ".npz"), **dict(zip(names, arrays)))
PY
ls -l "$d"/A.json "$d"/A.npz | awk '{printf "%s %d MiB\n", $NF, $5/1048576}'

ds="$d/depthspace"
tol=(--atol 1e-5 --rtol 1e-5)
pg=("$ds" compare "${tol[@]}" "$d/A.json" "$d/B.json")
npz=("$ds" compare "${tol[@]}" "$d/A.npz" "$d/B.npz")
echo "commands:"
echo "  ${pg[*]}"
echo "  ${npz[*]}"
"${pg[@]}" >/dev/null # warm-up, and the page cache
"${npz[@]}" >/dev/null
for _ in $(seq "$rounds"); do # in turn, so that a busy machine slows both
	/usr/bin/time -f "%e %M" -a -o "$d/polygraphy.times" "${pg[@]}" >/dev/null
	/usr/bin/time -f "%e %M" -a -o "$d/npz.times" "${npz[@]}" >/dev/null
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for name in polygraphy npz; do
	f="$d/$name.times"
	printf "%-11s median wall %s s (min %s, max %s), median peak RSS %d MiB\n" "$name" \
		"$(awk '{print $1}' "$f" | median)" "$(awk '{print $1}' "$f" | sort -n | head -1)" \
		"$(awk '{print $1}' "$f" | sort -n | tail -1)" "$(( $(awk '{print $2}' "$f" | median) / 1024 ))"
done
paste "$d/polygraphy.times" "$d/npz.times" | awk '{print $1 / $3}' | median |
	awk '{printf "ratio polygraphy/npz, median of the pairs: %.2f\n", $1}'
