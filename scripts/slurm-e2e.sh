#!/usr/bin/env bash
# End-to-end test of depthspace under a real Slurm scheduler, on one machine.
#
# Starts a single-node Slurm cluster (munged, slurmctld, slurmd from
# Debian's slurm-wlm and munge, installed when missing) with all of its
# state under a temporary directory, builds depthspace, makes a tree of npy
# files, and runs
#   sbatch --array=1-4 … depthspace s2d --shard auto --skip-existing --out-dir
# cancels one running task with scancel, resubmits the array, and checks
# every output against numpy's own reshape/transpose, that each file was
# converted exactly once, and that no temporary file is left.
#
# Usage: scripts/slurm-e2e.sh            (as root; KEEP=1 keeps the temp dir)
# Prints one line per step with its time; exits non-zero on any failure.
# The daemons are stopped by pid at the end, also on failure or Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
. scripts/e2e-lib.sh

# --- packages ---------------------------------------------------------------
need=()
command -v slurmctld >/dev/null || need+=(slurm-wlm)
command -v munged >/dev/null || need+=(munge)
command -v bc >/dev/null || need+=(bc)
command -v jq >/dev/null || need+=(jq)
$PY -c 'import numpy' 2>/dev/null || need+=(python3-numpy)
need_packages "${need[@]}"
step "packages: $(slurmctld -V), munge $(munged --version | awk '{print $2}')"

# --- a cluster under a temporary directory --------------------------------
e2e_tempdir slurm
chmod 755 "$T"
mkdir -p "$T"/{munge,state,spool,bin,data,out,records,logs}
chmod 711 "$T/munge"
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$T/munge/munge.key"
munged --foreground --force --key-file="$T/munge/munge.key" --socket="$T/munge/munge.socket" \
  --pid-file="$T/munge/munged.pid" --log-file="$T/munged.log" --seed-file="$T/munge/munge.seed" \
  >"$T/logs/munged.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [ -S "$T/munge/munge.socket" ] && break; sleep 0.1; done
[ -S "$T/munge/munge.socket" ] || fail "munged did not start"
munge --socket="$T/munge/munge.socket" -n | unmunge --socket="$T/munge/munge.socket" >/dev/null ||
  fail "munge cannot decode its own credential"
step "munged up (pid ${PIDS[0]})"

# Free ports, so that a cluster already on this machine is not disturbed.
read -r CTLD_PORT SLURMD_PORT < <(free_ports 2)
HOST=$(hostname -s)
CPUS=$(nproc)
MEM=$(awk '/MemTotal/ {print int($2/1024) - 512}' /proc/meminfo)
export SLURM_CONF="$T/slurm.conf"
cat > "$SLURM_CONF" <<CONF
ClusterName=depthspace-e2e
SlurmctldHost=$HOST
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$T/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
MinJobAge=3600
KillWait=10
NodeName=$HOST CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=e2e Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -D -i -f "$SLURM_CONF" >"$T/logs/slurmctld.out" 2>&1 &
PIDS+=($!)
slurmd -D -f "$SLURM_CONF" >"$T/logs/slurmd.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 300); do
  state=$(sinfo -h -N -o '%t' 2>/dev/null | head -n1 || true)
  [ "$state" = idle ] && break
  sleep 0.1
done
[ "$state" = idle ] || fail "the node did not come up idle (sinfo: '${state:-no answer}')"
step "slurmctld (pid ${PIDS[1]}) and slurmd (pid ${PIDS[2]}) up: node $HOST, $CPUS CPUs, idle"

# --- depthspace and a tree of npy files -----------------------------------
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$T/bin/depthspace" ./cmd/depthspace
step "built depthspace ($("$T/bin/depthspace" --version))"

$PY - "$T/data" <<'PYEOF'
import os, sys
import numpy as np
root = sys.argv[1]
rng = np.random.default_rng(18)
# Large files first in the sorted list, so every task starts with seconds
# of work: the cancelled one is stopped in the middle of its share.
os.makedirs(f"{root}/0big")
for i in range(16):
    a = rng.integers(0, 2**32, size=(1, 8, 2048, 2048), dtype=np.uint32).view(np.float32)
    np.save(f"{root}/0big/b{i:02d}.npy", a)
dtypes = [np.uint8, np.int16, np.float16, np.float32, np.float64, np.int64, np.bool_, np.complex64]
n = 0
for d in range(12):
    os.makedirs(f"{root}/frames/d{d:02d}")
    for f in range(25):
        dt = dtypes[n % len(dtypes)]
        shape = (1 + n % 2, 1 + n % 3, 2 * (1 + n % 5), 2 * (2 + n % 7))
        a = rng.integers(0, 2**8, size=shape).astype(dt)
        if n % 4 == 3:  # Fortran order and big-endian inputs too
            a = np.asfortranarray(a)
        if n % 5 == 4 and dt not in (np.uint8, np.bool_):
            a = a.astype(a.dtype.newbyteorder(">"))
        np.save(f"{root}/frames/d{d:02d}/f{f:02d}.npy", a)
        n += 1
PYEOF
FILES=$(find "$T/data" -name '*.npy' | wc -l)
step "made $FILES npy files ($(du -sh "$T/data" | cut -f1)) under data/"

task_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n1; }
wait_array() { # JOBID
  for _ in $(seq 3000); do
    [ -z "$(squeue -h -j "$1" 2>/dev/null)" ] && return 0
    sleep 0.1
  done
  fail "job $1 did not finish in 300 s"
}

# --- arrays numbered otherwise: what Slurm really sets ----------------------
# A stepped array must give shards 0..N-1 like a plain one; a list such as
# 1,3,7 has no K that Slurm's variables determine, and must be refused.
mkdir -p "$T/tiny" "$T/shapes"
cp "$T/data/frames/d00/f00.npy" "$T/data/frames/d00/f01.npy" "$T/data/frames/d00/f02.npy" "$T/tiny/"
cat > "$T/shape.sh" <<JOB
#!/bin/bash
env | grep '^SLURM_ARRAY_TASK_' | sort > "$T/shapes/\${SHAPE}-\${SLURM_ARRAY_TASK_ID}.env"
"$T/bin/depthspace" s2d -b 2 --shard auto --json --out-dir "$T/shapes/out-\${SHAPE}-\${SLURM_ARRAY_TASK_ID}" "$T/tiny" \\
  > "$T/shapes/\${SHAPE}-\${SLURM_ARRAY_TASK_ID}.jsonl" 2> "$T/shapes/\${SHAPE}-\${SLURM_ARRAY_TASK_ID}.err"
echo \$? > "$T/shapes/\${SHAPE}-\${SLURM_ARRAY_TASK_ID}.status"
JOB
chmod +x "$T/shape.sh"
J1=$(sbatch --parsable --array=0-6:2 --export=ALL,SHAPE=step --output=/dev/null "$T/shape.sh")
J2=$(sbatch --parsable --array=1,3,7 --export=ALL,SHAPE=list --output=/dev/null "$T/shape.sh")
wait_array "$J1"; wait_array "$J2"
for id in 0 2 4 6; do
  grep -q "\"shard\":\"$((id / 2))/4\"" "$T/shapes/step-$id.jsonl" ||
    fail "--array=0-6:2 task $id: not shard $((id / 2))/4: $(cat "$T/shapes/step-$id.env" "$T/shapes/step-$id.err")"
done
step "--array=0-6:2: tasks 0 2 4 6 ran shards 0/4 1/4 2/4 3/4 ($(tr '\n' ' ' < "$T/shapes/step-2.env"))"
for id in 1 3 7; do
  [ "$(cat "$T/shapes/list-$id.status")" = 2 ] && grep -q 'not one range' "$T/shapes/list-$id.err" ||
    fail "--array=1,3,7 task $id was not refused: $(cat "$T/shapes/list-$id.env" "$T/shapes/list-$id.err")"
done
step "--array=1,3,7: refused in every task, exit 2 ($(tr '\n' ' ' < "$T/shapes/list-3.env"))"

# --- run 1: submit, cancel one running task ---------------------------------
# The array is docs/examples/depthspace-array.sbatch, as docs/cluster.md
# shows it (--array=1-4 in its #SBATCH lines); its records go to
# records/JOBID_TASKID.jsonl.
submit() { # RUN
  DEPTHSPACE="$T/bin/depthspace" DATA="$T/data" OUT="$T/out" RECORDS="$T/records" \
    sbatch --parsable --export=ALL --chdir="$T" --output="$T/logs/run$1-%a.out" \
    --error="$T/logs/run$1-%a.err" "$REPO/docs/examples/depthspace-array.sbatch"
}
JOB1=$(submit 1)
step "run 1: sbatch --array=1-4 → job $JOB1"
VICTIM="${JOB1}_2"
for _ in $(seq 3000); do
  [ "$(task_state "$VICTIM")" = RUNNING ] && [ -s "$T/records/${VICTIM}.jsonl" ] && break
  sleep 0.02
done
[ "$(task_state "$VICTIM")" = RUNNING ] || fail "task $VICTIM never ran (state $(task_state "$VICTIM"))"
done_before=$(wc -l < "$T/records/${VICTIM}.jsonl")
scancel "$VICTIM"
step "run 1: scancel $VICTIM while running ($done_before of its files recorded)"
wait_array "$JOB1"
for a in 1 2 3 4; do
  s=$(task_state "${JOB1}_$a")
  if [ $a = 2 ]; then [ "$s" = CANCELLED ] || fail "task ${JOB1}_2 is $s, not CANCELLED"
  else [ "$s" = COMPLETED ] || fail "task ${JOB1}_$a is $s, not COMPLETED"; fi
done
step "run 1: tasks 1, 3, 4 COMPLETED, task 2 CANCELLED"

# --- run 2: resubmit the same array -----------------------------------------
JOB2=$(submit 2)
step "run 2: resubmitted the array → job $JOB2"
wait_array "$JOB2"
for a in 1 2 3 4; do
  s=$(task_state "${JOB2}_$a")
  [ "$s" = COMPLETED ] || fail "run 2: task ${JOB2}_$a is $s ($(cat "$T/logs/run2-$a.err"))"
done
step "run 2: all 4 tasks COMPLETED"

# --- checks -----------------------------------------------------------------
left=$(find "$T/out" -name '.*.depthspace-*.tmp' | wc -l)
[ "$left" -eq 0 ] || fail "$left temporary files left in out/"
step "no temporary file left in out/"

# docs/cluster.md's completeness check, on the resubmitted array.
check=$(cat "$T/records/${JOB2}"_*.jsonl | jq -c -s '[.[] | select(.summary)] |
  {tasks: length, n: (.[0].shard | split("/")[1] | tonumber), total: .[0].total,
   files: (map(.files) | add), failed: (map(.failed) | add)}')
[ "$check" = "{\"tasks\":4,\"n\":4,\"total\":$FILES,\"files\":$FILES,\"failed\":0}" ] ||
  fail "completeness check: $check"
step "completeness check of docs/cluster.md: $check"

$PY - "$T" "$JOB1" "$JOB2" <<'PYEOF' || fail "records or outputs are wrong"
import glob, json, os, sys
import numpy as np
T, JOBS = sys.argv[1], {1: sys.argv[2], 2: sys.argv[3]}
inputs = sorted(os.path.relpath(p, f"{T}/data") for p in glob.glob(f"{T}/data/**/*.npy", recursive=True))

def records(run):
    out = {}
    for task in range(1, 5):
        path = f"{T}/records/{JOBS[run]}_{task}.jsonl"
        lines = [json.loads(l) for l in open(path)] if os.path.exists(path) else []
        out[task] = lines
    return out

r1, r2 = records(1), records(2)
def files(recs): return [r for r in recs if not r.get("summary")]
def summary(recs): return [r for r in recs if r.get("summary")]

# Every task of run 2, and the uncancelled ones of run 1, ended with a
# summary naming its shard from Slurm's variables; shards 0..3 of 4.
for run, rs, tasks in ((1, r1, (1, 3, 4)), (2, r2, (1, 2, 3, 4))):
    for t in tasks:
        s = summary(rs[t])
        assert len(s) == 1, f"run {run} task {t}: {len(s)} summaries"
        s = s[0]
        assert s["shard"] == f"{t-1}/4", (run, t, s["shard"])
        assert s["shard_from"].startswith(f"SLURM_ARRAY_TASK_ID={t} MIN=1 MAX=4 STEP=1 COUNT=4"), s["shard_from"]
        assert s["failed"] == 0 and s["total"] == len(inputs), (run, t, s)
assert not summary(r1[2]), "the cancelled task printed a summary: it was not stopped"

ok = {p: 0 for p in inputs}
skipped2 = set()
for run, rs in ((1, r1), (2, r2)):
    for t, recs in rs.items():
        for r in files(recs):
            rel = os.path.relpath(r["input"], f"{T}/data")
            assert r["status"] in ("ok", "skipped"), r
            # the task did only files of its own shard
            assert inputs.index(rel) % 4 == t - 1, (run, t, rel)
            if r["status"] == "ok":
                ok[rel] += 1
            elif run == 2:
                skipped2.add(rel)
# Run 2 saw every file once between its tasks.
seen2 = sorted(os.path.relpath(r["input"], f"{T}/data") for recs in r2.values() for r in files(recs))
assert seen2 == inputs, "run 2 did not cover the list exactly once"
# Converted exactly once: one "ok" per file over both runs. The single
# exception allowed is a file of the cancelled task renamed into place in
# the instant before its record was printed: skipped in run 2, no record.
done1_task2 = [os.path.relpath(r["input"], f"{T}/data") for r in files(r1[2])]
resumed = [p for p in inputs if inputs.index(p) % 4 == 1 and p not in done1_task2]
twice = [p for p, n in ok.items() if n > 1]
never = [p for p, n in ok.items() if n == 0]
assert not twice, f"converted twice: {twice[:5]}"
mine2 = [p for p in inputs if inputs.index(p) % 4 == 1]
allowed = [] if len(done1_task2) == len(mine2) else [mine2[len(done1_task2)]]
assert all(p in allowed for p in never), f"never converted: {never[:5]}"
assert any(ok[p] == 1 and p not in done1_task2 for p in resumed), "run 2 resumed nothing: task 2 was cancelled after its last file"
print(f"records: {sum(ok.values())} conversions for {len(inputs)} files; the cancelled task had done {len(done1_task2)} of {len(mine2)}, run 2 did the other {sum(1 for p in resumed if ok[p])} and skipped {len(skipped2)} done by run 1")

# Every output is numpy's own reshape/transpose of its input (ONNX
# SpaceToDepth: s2d, dcr, nchw), dtype and byte order kept.
for rel in inputs:
    a = np.load(f"{T}/data/{rel}")
    n, c, h, w = a.shape
    want = a.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, 4 * c, h // 2, w // 2)
    got = np.load(f"{T}/out/{rel}")
    assert got.dtype == a.dtype and got.shape == want.shape, (rel, got.dtype, got.shape)
    assert got.tobytes() == np.ascontiguousarray(want).tobytes(), f"{rel}: bytes differ from numpy"
outs = sorted(os.path.relpath(p, f"{T}/out") for p in glob.glob(f"{T}/out/**/*", recursive=True) if os.path.isfile(p))
assert outs == inputs, "out/ holds other files than one per input"
print(f"outputs: all {len(inputs)} equal numpy's reshape/transpose")
PYEOF
step "checked: every output equals numpy's, each file converted exactly once"
step "PASS"
