#!/usr/bin/env bash
# End-to-end test of depthspace against a real S3 server, on one machine.
#
# Starts versitygw (github.com/versity/versitygw, its posix backend over a
# temporary directory, on 127.0.0.1; installed once with `go install` into
# the Go bin directory when missing), makes buckets through the S3 API,
# builds depthspace and its companion depthspace-s3 (-tags s3) side by
# side, as they are installed, and runs plain depthspace, which hands
# every run naming an s3:// URL to depthspace-s3, against the server:
#   a prefix batch bucket to bucket (keys in the order of a directory
#   walk), the same batch through a proxy that holds each answer 20 ms
#   (scripts/latencyproxy.py: a server in a remote region), a local
#   directory to a prefix, a 256 MiB object, info (an npy
#   object's header read with at most 64 KiB transferred, counted by a
#   proxy), compare of a prefix with a local directory, --shard auto, an
#   npz object member by member (--member, reorder, info), --progress,
#   configuration from AWS_PROFILE and the shared files, errors (missing
#   bucket and key, bad credentials, anonymous, an unreachable endpoint, a
#   malformed input), SIGINT mid-upload (new and replaced object), the
#   server killed mid-upload, restarted and the batch resumed with
#   --skip-existing,
# and checks every output (fetched with curl, not depthspace) against
# numpy, and that no partial object and no multipart upload is left.
#
# Usage: scripts/s3-e2e.sh       (KEEP=1 keeps the temp dir)
# Prints one line per step with its time; exits non-zero on any failure.
# The server is stopped by pid at the end, also on failure or Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
VGW_VERSION=v1.8.0
. scripts/e2e-lib.sh

# --- tools ------------------------------------------------------------------
need=()
command -v bc >/dev/null || need+=(bc)
command -v curl >/dev/null || need+=(curl)
$PY -c 'import numpy' 2>/dev/null || need+=(python3-numpy)
need_packages "${need[@]}"
GOBIN=$(go env GOBIN)
[ -n "$GOBIN" ] || GOBIN=$(go env GOPATH)/bin
VGW=$GOBIN/versitygw
if ! [ -x "$VGW" ]; then
  step "installing versitygw $VGW_VERSION into $GOBIN (once; several minutes on 2 cores)"
  GOFLAGS= go install "github.com/versity/versitygw/cmd/versitygw@$VGW_VERSION"
fi
step "versitygw: $("$VGW" --version 2>&1 | head -n1)"

# --- a server under a temporary directory ----------------------------------
e2e_tempdir s3
mkdir -p "$T"/{gw,bin,data,got,aws}

read -r PORT PROXY_PORT SLOW_PORT < <(free_ports 3)
KEY=e2ekey$RANDOM SECRET=e2esecret$RANDOM$RANDOM
ENDPOINT=http://127.0.0.1:$PORT
VGW_PID=
start_server() {
  ROOT_ACCESS_KEY_ID=$KEY ROOT_SECRET_ACCESS_KEY=$SECRET "$VGW" --port "127.0.0.1:$PORT" posix "$T/gw" >>"$T/versitygw.log" 2>&1 &
  VGW_PID=$!
  PIDS+=("$VGW_PID")
  for _ in $(seq 100); do curl -s -o /dev/null "$ENDPOINT/" && return 0; sleep 0.1; done
  fail "versitygw did not start"
}
start_server
step "versitygw up on $ENDPOINT (pid $VGW_PID), posix backend over $T/gw"

# The S3 API through curl's own SigV4 signing: buckets, listings of
# multipart uploads, objects fetched for numpy. Independent of depthspace.
s3curl() { curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user "$KEY:$SECRET" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"; }
mb() { [ "$(s3curl -o /dev/null -w '%{http_code}' -X PUT "$ENDPOINT/$1")" = 200 ] || fail "cannot make bucket $1"; }
uploads() { s3curl "$ENDPOINT/$1?uploads=" | grep -o '<UploadId>' | wc -l; } # unfinished multipart uploads
status() { s3curl -o /dev/null -w '%{http_code}' -I "$ENDPOINT/$1"; }
etag() { s3curl -I "$ENDPOINT/$1" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: //p'; }
fetch_prefix() { # BUCKET PREFIX DIR: every object under PREFIX into DIR, by relative key
  # (parameters in SigV4's canonical order, / encoded: curl signs the query as it is written)
  s3curl "$ENDPOINT/$1?list-type=2&max-keys=1000&prefix=${2//\//%2F}" | grep -o '<Key>[^<]*' | sed 's/<Key>//' | while read -r k; do
    mkdir -p "$3/$(dirname "${k#"$2"}")"
    s3curl -o "$3/${k#"$2"}" "$ENDPOINT/$1/$k"
  done
}
for b in src dst; do mb $b; done
step "buckets src and dst made through the S3 API"

go build -o "$T/bin/depthspace" ./cmd/depthspace
go build -tags s3 -o "$T/bin/depthspace-s3" ./cmd/depthspace
DS=$T/bin/depthspace # s3:// runs exec depthspace-s3, found next to it
export AWS_ACCESS_KEY_ID=$KEY AWS_SECRET_ACCESS_KEY=$SECRET AWS_ENDPOINT_URL=$ENDPOINT
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL_S3 AWS_REGION AWS_DEFAULT_REGION AWS_CA_BUNDLE
export AWS_CONFIG_FILE=$T/aws/none AWS_SHARED_CREDENTIALS_FILE=$T/aws/none
step "depthspace and depthspace-s3 built"

# --- data -------------------------------------------------------------------
# Names whose order tells a prefix listing from a careless walk: "a.b",
# "a/", "a-b" and "a0" sort around "a/" byte by byte.
$PY - "$T/data" <<'PYEOF'
import sys, os, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(25)
names = ["a/x.npy", "a/b/y.npy", "a.b/x.npy", "a-b/x.npy", "a0.npy", "b/c/d/e.npy", "Z.npy", "z.npy",
         "f16.npy", "be.npy", "u8.npy"] + [f"many/m{i:02d}.npy" for i in range(12)]
for n in names:
    p = os.path.join(d, "tree", n)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    dt = {"f16.npy": np.float16, "be.npy": ">i4", "u8.npy": np.uint8}.get(n, np.float32)
    np.save(p, (rng.random((2, 3, 8, 12)) * 100).astype(dt))
open(os.path.join(d, "tree", "notes.txt"), "w").write("not a tensor\n")
np.save(os.path.join(d, "k900.npy"), rng.random(900 * 256, dtype=np.float32))  # 900 KiB
np.save(os.path.join(d, "big.npy"), rng.random((1, 16, 2048, 2048), dtype=np.float32))  # 256 MiB
os.makedirs(os.path.join(d, "resume"))
for i in range(4):
    np.save(os.path.join(d, "resume", f"s{i}.npy"), rng.random((1, 4, 64, 64), dtype=np.float32))
os.link(os.path.join(d, "big.npy"), os.path.join(d, "resume", "zbig.npy"))
bad = open(os.path.join(d, "bad.npy"), "wb")  # a header that promises more data than there is
np.save(bad, np.zeros((1, 4, 512, 512), np.float32)); bad.truncate(3 << 20); bad.close()
PYEOF
step "data: a tree of $(find "$T/data/tree" -name '*.npy' | wc -l) npy files, a 900 KiB and a 256 MiB npy"

# --- a local directory to a prefix, and the prefix's listing ---------------
"$DS" convert --out-dir s3://src/tree/ "$T/data/tree" 2>"$T/upload.err" || fail "upload of the tree: $(cat "$T/upload.err")"
for f in k900.npy big.npy; do "$DS" convert "$T/data/$f" "s3://src/$f" || fail "upload of $f"; done
s3curl -T "$T/data/bad.npy" "$ENDPOINT/src/bad.npy" || fail "upload of bad.npy" # depthspace refuses to read it
"$DS" convert --out-dir s3://src/resume/ "$T/data/resume" 2>/dev/null || fail "upload of resume/"
[ "$(uploads src)" = 0 ] || fail "uploads left in src"
"$DS" info --json s3://src/tree/ >"$T/info-s3.json" || fail "info of a prefix"
"$DS" info --json "$T/data/tree" >"$T/info-local.json" || fail "info of the directory"
$PY - "$T" <<'PYEOF' || fail "listing of the prefix is not the directory walk's"
import json, sys
T = sys.argv[1]
s3 = [e["path"].removeprefix("s3://src/tree/") for e in json.load(open(f"{T}/info-s3.json"))]
loc = [e["path"].removeprefix(f"{T}/data/tree/") for e in json.load(open(f"{T}/info-local.json"))]
assert s3 == loc, (s3, loc)
assert s3 == sorted(s3, key=lambda p: p.encode()), s3
print("  prefix order = directory order:", " ".join(s3[:6]), "...")
PYEOF
step "local directory -> s3://src/tree/ (convert --out-dir); info of the prefix lists as the directory does"

# --- a prefix batch bucket to bucket ---------------------------------------
"$DS" s2d -b 2 --json --out-dir s3://dst/s2d/ s3://src/tree/ >"$T/batch.json" 2>"$T/batch.err" || fail "batch: $(cat "$T/batch.err")"
fetch_prefix dst s2d/ "$T/got/s2d"
check_s2d() { # INPUT_DIR OUTPUT_DIR: every output is numpy's s2d of its input, nothing else there
  $PY - "$1" "$2" <<'PYEOF'
import sys, os, glob, numpy as np
src, out = sys.argv[1], sys.argv[2]
ins = sorted(os.path.relpath(p, src) for p in glob.glob(f"{src}/**/*.npy", recursive=True))
outs = sorted(os.path.relpath(p, out) for p in glob.glob(f"{out}/**/*", recursive=True) if os.path.isfile(p))
assert ins == outs, (ins, outs)
for rel in ins:
    a = np.load(f"{src}/{rel}")
    n, c, h, w = a.shape
    want = a.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, 4 * c, h // 2, w // 2)
    got = np.load(f"{out}/{rel}")
    assert got.dtype == a.dtype and got.shape == want.shape, (rel, got.dtype, got.shape)
    assert got.tobytes() == np.ascontiguousarray(want).tobytes(), f"{rel}: bytes differ from numpy"
print(f"  {len(ins)} outputs equal numpy's reshape/transpose")
PYEOF
}
check_s2d "$T/data/tree" "$T/got/s2d" || fail "outputs of the batch"
$PY - "$T/batch.json" <<'PYEOF' || fail "records of the batch"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
files, summary = recs[:-1], recs[-1]
assert summary["summary"] and summary["done"] == len(files) == 23 and summary["failed"] == 0, summary
for r in files:
    assert r["status"] == "ok" and r["output"] == "s3://dst/s2d/" + r["input"].removeprefix("s3://src/tree/"), r
PYEOF
step "s2d --out-dir s3://dst/s2d/ s3://src/tree/: 23 outputs equal numpy's, relative keys kept, --json records"

# --- the same batch through a proxy that holds each answer 20 ms ----------
$PY scripts/latencyproxy.py "$SLOW_PORT" "$PORT" 20 "$T/slow.answers" >"$T/latencyproxy.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -f "$T/slow.answers" ] && break; sleep 0.1; done
[ -f "$T/slow.answers" ] || fail "the latency proxy did not start"
t0=$(date +%s.%N)
AWS_ENDPOINT_URL=http://127.0.0.1:$SLOW_PORT "$DS" s2d -b 2 --json --out-dir s3://dst/slow/ s3://src/tree/ >"$T/slow.json" 2>"$T/slow.err" ||
  fail "batch through the latency proxy: $(cat "$T/slow.err")"
secs=$(echo "$(date +%s.%N) - $t0" | bc)
fetch_prefix dst slow/ "$T/got/slow"
check_s2d "$T/data/tree" "$T/got/slow" || fail "outputs of the batch through the latency proxy"
held=$(cat "$T/slow.answers")
[ "$held" -ge 46 ] || fail "the latency proxy held $held answers: the batch's 23 GETs and 23 PUTs did not all go through it"
step "the same batch through a proxy holding each answer 20 ms: 23 outputs equal numpy's, $held answers held, $(printf %.1f "$secs") s"

# --- compare of a prefix with a local directory ----------------------------
"$DS" s2d -b 2 --out-dir "$T/local-s2d" "$T/data/tree" 2>/dev/null || fail "local batch"
"$DS" compare s3://dst/s2d/ "$T/local-s2d" >"$T/compare.out" || fail "compare of the prefix with the directory: $(cat "$T/compare.out")"
"$DS" s2d -b 2 --order crd "$T/data/tree/z.npy" -o "$T/local-s2d/z.npy"
set +e
"$DS" compare s3://dst/s2d/ "$T/local-s2d" >"$T/compare2.out"
st=$?
set -e
[ $st = 1 ] || fail "compare with one file changed: exit $st, want 1"
grep -q "z.npy" "$T/compare2.out" || fail "compare does not name z.npy: $(cat "$T/compare2.out")"
step "compare s3://dst/s2d/ DIR: equal (exit 0), one file changed (exit 1, named)"

# --- an --out-dir inside the input prefix ----------------------------------
"$DS" convert --out-dir s3://dst/nested/ "$T/data/tree" 2>/dev/null || fail "upload of dst/nested/"
for run in 1 2; do # the second run must not take the first one's outputs for inputs
  "$DS" s2d -b 2 --out-dir s3://dst/nested/back/ s3://dst/nested/ 2>"$T/nested.err" || fail "nested run $run: $(cat "$T/nested.err")"
  grep -q "^depthspace: 23 files: 23 done" "$T/nested.err" || fail "run $run into an --out-dir inside its input prefix: $(cat "$T/nested.err")"
done
expect_same() { set +e; "$DS" s2d -b 2 --out-dir s3://dst/nested s3://dst/nested/ >/dev/null 2>"$T/same.err"; local st=$?; set -e; echo $st; }
[ "$(expect_same)" = 2 ] && grep -q "is the output prefix too" "$T/same.err" || fail "--out-dir equal to the input prefix: $(cat "$T/same.err")"
step "--out-dir inside the input prefix: its keys are not inputs (23 files again); the same prefix refused"

# --- --shard auto -------------------------------------------------------------
for id in 1 2 3; do
  SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=3 SLURM_ARRAY_TASK_STEP=1 SLURM_ARRAY_TASK_COUNT=3 \
    "$DS" d2s -b 2 --shard auto --json --out-dir s3://dst/shard/ s3://dst/s2d/ >"$T/shard$id.json" 2>/dev/null || fail "shard $id"
done
fetch_prefix dst shard/ "$T/got/shard"
$PY - "$T" <<'PYEOF' || fail "--shard auto"
import json, sys, glob, os, numpy as np
T = sys.argv[1]
done = []
for i in (1, 2, 3):
    recs = [json.loads(l) for l in open(f"{T}/shard{i}.json")]
    assert recs[-1]["shard"] == f"{i-1}/3", recs[-1]
    done += [r["input"] for r in recs[:-1] if r["status"] == "ok"]
assert len(done) == len(set(done)) == 23, len(done)
for p in glob.glob(f"{T}/data/tree/**/*.npy", recursive=True):
    rel = os.path.relpath(p, f"{T}/data/tree")
    a, b = np.load(p), np.load(f"{T}/got/shard/{rel}")
    assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), rel
print("  3 shards: 23 files, each once; d2s(s2d(x)) == x")
PYEOF
step "d2s --shard auto (Slurm array 1-3) over a prefix: each file once, round trip exact"

# --- containers member by member, --member, reorder, progress --------------
$PY - "$T/data" <<'PYEOF'
import sys, numpy as np
rng = np.random.default_rng(2525)
np.savez(f"{sys.argv[1]}/arch.npz", x=rng.random((1, 4, 8, 8), dtype=np.float32), labels=np.arange(5, dtype=np.int64))
PYEOF
"$DS" convert "$T/data/arch.npz" s3://src/arch.npz || fail "upload of arch.npz"
"$DS" s2d -b 2 --member x s3://src/arch.npz -o s3://dst/arch.npz || fail "s2d --member of an npz object"
s3curl -o "$T/got/arch.npz" "$ENDPOINT/dst/arch.npz" || fail "fetch of dst/arch.npz"
"$DS" reorder --from-order dcr --to-order crd -b 2 --member x s3://dst/arch.npz -o s3://dst/arch-crd.npz || fail "reorder of an npz object"
s3curl -o "$T/got/arch-crd.npz" "$ENDPOINT/dst/arch-crd.npz" || fail "fetch of dst/arch-crd.npz"
$PY - "$T" <<'PYEOF' || fail "npz members through objects"
import sys, numpy as np
T = sys.argv[1]
src, got, crd = np.load(f"{T}/data/arch.npz"), np.load(f"{T}/got/arch.npz"), np.load(f"{T}/got/arch-crd.npz")
x = src["x"]
n, c, h, w = x.shape
dcr = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, 4 * c, h // 2, w // 2)
assert list(got.keys()) == ["x", "labels"], list(got.keys())
assert got["x"].tobytes() == np.ascontiguousarray(dcr).tobytes(), "x is not numpy's s2d"
assert got["labels"].tobytes() == src["labels"].tobytes(), "labels changed though --member left it out"
want_crd = dcr.reshape(n, 4, c, h // 2, w // 2).transpose(0, 2, 1, 3, 4).reshape(n, 4 * c, h // 2, w // 2)
assert crd["x"].tobytes() == np.ascontiguousarray(want_crd).tobytes(), "reorder dcr -> crd differs from numpy"
print("  x is numpy's s2d, labels unchanged, reorder to crd equals numpy's")
PYEOF
"$DS" info s3://dst/arch.npz | grep -q 'member "labels"' || fail "info of an npz object lists its members"
"$DS" s2d -b 2 --progress always --out-dir s3://dst/progress/ s3://src/tree/many/ 2>"$T/progress.err" || fail "batch with --progress always"
grep -q '^depthspace: progress: 12/12 files' "$T/progress.err" || fail "no progress lines: $(cat "$T/progress.err")"
step "npz object: s2d --member x (labels copied), reorder dcr->crd, info lists members; --progress always over a prefix"

# --- configuration from AWS_PROFILE and the shared files -------------------
cat >"$T/aws/config" <<EOF
[profile e2e]
region = us-east-1
endpoint_url = $ENDPOINT
EOF
cat >"$T/aws/credentials" <<EOF
[e2e]
aws_access_key_id = $KEY
aws_secret_access_key = $SECRET
EOF
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_ENDPOINT_URL AWS_PROFILE=e2e \
  AWS_CONFIG_FILE="$T/aws/config" AWS_SHARED_CREDENTIALS_FILE="$T/aws/credentials" \
  "$DS" info s3://src/tree/a0.npy >/dev/null || fail "info with AWS_PROFILE and the shared files"
step "AWS_PROFILE with AWS_CONFIG_FILE (endpoint_url) and AWS_SHARED_CREDENTIALS_FILE"

# --- errors: exit 2, one line naming the URL -------------------------------
expect_error() { # PATTERN CMD...: exit 2 and one stderr line matching PATTERN
  local pat=$1
  shift
  set +e
  "$@" >/dev/null 2>"$T/err.txt"
  local st=$?
  set -e
  [ $st = 2 ] || fail "$*: exit $st, want 2 ($(cat "$T/err.txt"))"
  [ "$(wc -l <"$T/err.txt")" = 1 ] || fail "$*: not one line: $(cat "$T/err.txt")"
  grep -Eq "$pat" "$T/err.txt" || fail "$*: $(cat "$T/err.txt") does not match $pat"
  echo "  $(cat "$T/err.txt")"
}
expect_error '^depthspace: s3://src/none\.npy: .*NoSuchKey' "$DS" info s3://src/none.npy
expect_error '^depthspace: s3://src/typo/: holds no tensor file' "$DS" info s3://src/typo/
expect_error '^depthspace: s3://nobucket/x\.npy: .*NoSuchBucket' "$DS" s2d -b 2 s3://nobucket/x.npy -o "$T/x.npy"
expect_error '^depthspace: s3://src/k900\.npy: .*(AccessDenied|SignatureDoesNotMatch|403)' env AWS_SECRET_ACCESS_KEY=wrong "$DS" info s3://src/k900.npy
# No credentials: refused by the client before any request (SPEC: an
# error, not anonymous requests), naming the way to read a public bucket.
expect_error '^depthspace: s3://src/k900\.npy: no AWS credentials \(.*\); --no-sign-request reads a public bucket without them$' env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$DS" info s3://src/k900.npy
expect_error '^depthspace: s3://src/k900\.npy: cannot reach http://127\.0\.0\.1:1: .*refused' env AWS_ENDPOINT_URL=http://127.0.0.1:1 "$DS" info s3://src/k900.npy
expect_error '^depthspace: s3://src/bad\.npy: ' "$DS" s2d -b 2 s3://src/bad.npy -o s3://dst/bad.npy
[ "$(status dst/bad.npy)" = 404 ] || fail "a failed run left s3://dst/bad.npy"
step "errors: missing key, a prefix with no key (info), missing bucket, bad credentials, anonymous, unreachable endpoint, malformed input (no object made)"

# --- info of a 900 KiB object: bytes transferred, counted by a proxy -------
$PY scripts/byteproxy.py "$PROXY_PORT" "$PORT" "$T/proxy.count" >"$T/proxy.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -f "$T/proxy.count" ] && break; sleep 0.1; done
AWS_ENDPOINT_URL=http://127.0.0.1:$PROXY_PORT "$DS" info s3://src/k900.npy >"$T/info900.txt" || fail "info through the proxy"
sleep 0.2
got=$(cat "$T/proxy.count")
grep -q "921728" "$T/info900.txt" || fail "info of k900.npy: $(cat "$T/info900.txt")"
[ "$got" -le 65536 ] || fail "info of a 900 KiB object transferred $got bytes (> 64 KiB)"
step "info s3://src/k900.npy (921,728 bytes): $got bytes from the server (<= 65,536)"

# --- a 256 MiB object -----------------------------------------------------
/usr/bin/time -f "%e s, %M KiB peak RSS" "$DS" s2d -b 2 s3://src/big.npy -o s3://dst/big.npy 2>"$T/big.time" || fail "256 MiB object"
mkdir -p "$T/got/big" "$T/data/bigdir"
s3curl -o "$T/got/big/big.npy" "$ENDPOINT/dst/big.npy"
ln "$T/data/big.npy" "$T/data/bigdir/big.npy"
check_s2d "$T/data/bigdir" "$T/got/big" || fail "the 256 MiB output"
rm "$T/got/big/big.npy"
step "s2d s3://src/big.npy -o s3://dst/big.npy (256 MiB): equals numpy's; $(tail -n1 "$T/big.time")"

# --- SIGINT mid-upload: a new object, and one replacing another ------------
sigint_upload() { # KEY
  "$DS" s2d -b 2 s3://src/big.npy -o "s3://dst/$1" 2>"$T/sigint.err" &
  local pid=$!
  for _ in $(seq 600); do [ "$(uploads dst)" -gt 0 ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.02; done
  [ "$(uploads dst)" -gt 0 ] || fail "no multipart upload seen for $1"
  kill -INT $pid
  set +e
  wait $pid
  local st=$?
  set -e
  [ $st = 130 ] || fail "SIGINT mid-upload of $1: exit $st, want 130"
}
sigint_upload new.npy
[ "$(status dst/new.npy)" = 404 ] || fail "SIGINT left s3://dst/new.npy"
[ "$(uploads dst)" = 0 ] || fail "SIGINT left a multipart upload"
before=$(etag dst/big.npy)
sigint_upload big.npy
[ "$(etag dst/big.npy)" = "$before" ] || fail "SIGINT changed the object it was replacing"
[ "$(uploads dst)" = 0 ] || fail "SIGINT left a multipart upload"
step "SIGINT mid-upload: exit 130, no object, no upload left; a replaced object kept as it was"

# --- the server killed mid-upload, restarted, the batch resumed ------------
"$DS" s2d -b 2 -j 2 --json --out-dir s3://dst/resume/ s3://src/resume/ >"$T/resume1.json" 2>"$T/resume1.err" &
pid=$!
for _ in $(seq 600); do [ "$(uploads dst)" -gt 0 ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.02; done
[ "$(uploads dst)" -gt 0 ] || fail "no multipart upload seen in the batch"
kill -9 "$VGW_PID"
set +e
wait $pid
st=$?
set -e
[ $st = 2 ] || fail "batch with the server killed: exit $st, want 2"
grep -q "s3://dst/resume/zbig.npy" "$T/resume1.err" || fail "the failure does not name the object: $(cat "$T/resume1.err")"
start_server
step "server killed mid-upload: the batch exited 2 ($(grep -c '"status":"failed"' "$T/resume1.json") failed), server restarted"
[ "$(status dst/resume/zbig.npy)" = 404 ] || fail "a partial s3://dst/resume/zbig.npy exists"
"$DS" s2d -b 2 --skip-existing --json --out-dir s3://dst/resume/ s3://src/resume/ >"$T/resume2.json" 2>"$T/resume2.err" ||
  fail "resumed batch: $(cat "$T/resume2.err")"
[ "$(uploads dst)" = 0 ] || fail "a multipart upload is left after the resumed batch"
rm -rf "$T/got/resume"
fetch_prefix dst resume/ "$T/got/resume"
check_s2d "$T/data/resume" "$T/got/resume" || fail "outputs after the resumed batch"
$PY - "$T" <<'PYEOF' || fail "records of the two runs"
import json, sys
T = sys.argv[1]
r1 = [json.loads(l) for l in open(f"{T}/resume1.json")][:-1]
r2 = [json.loads(l) for l in open(f"{T}/resume2.json")][:-1]
ok1 = {r["input"] for r in r1 if r["status"] == "ok"}
skipped2 = {r["input"] for r in r2 if r["status"] == "skipped"}
ok2 = {r["input"] for r in r2 if r["status"] == "ok"}
assert skipped2 == ok1, (skipped2, ok1)
assert ok1 | ok2 == {r["input"] for r in r2} and not ok1 & ok2, (ok1, ok2)
print(f"  run 1 made {len(ok1)}, run 2 skipped them (HEAD) and made the other {len(ok2)}")
PYEOF
step "resumed with --skip-existing: every output equals numpy's, no multipart upload left"
step "PASS"
