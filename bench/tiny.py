"""Many tiny files, and one big file on every core, beside the copy tool.

  /usr/bin/python3 bench/tiny.py [--rounds N] [--only tiny5000,tiny100k,tiny1m,big]
      [--scratch DIR] [--baseline BIN] [--floor]

Jobs (seeded data in a scratch directory under DIR, removed at the end;
give a tmpfs such as /dev/shm, or a directory on the disk):
  tiny5000  5,000 npy files of 48 KiB (float32 [1, 3, 64, 64]) in 100
            directories: `s2d -b 2 --out-dir` into a new directory, and
            `cp -r` of the tree
  tiny100k  100,000 npy files of 144 bytes (uint8 [1, 1, 4, 4]) in 100
            directories, the same two commands (a tenth of tiny1m, for
            paired runs with --baseline)
  tiny1m    1,000,000 npy files of 144 bytes (uint8 [1, 1, 4, 4]) in 1,000
            directories, the same two commands (a 144-byte file takes a
            4 KiB page of tmpfs: about 4 GiB a tree; minutes a round)
  big       one 1 GiB float32 [4, 64, 1024, 1024] npy, `s2d -b 2 -o` at -j 1
            and at -j 2, beside `cp`
--baseline BIN adds BIN (another build of depthspace) running each
depthspace command, and each depthspace line ends with its ratios to
that build's (the median of the per-round ratios).
--floor adds, to the tiny jobs, bench/tinyfloor (built here): the
system calls a batch makes for each file and nothing else, reading
only, writing only, and both (at -j 1 and -j 2, and at -j 2 with whole
directories dealt to the goroutines), and depthspace at -j 1,
each beside `cp -r`: what the kernel costs a tool that reads each file
and writes it again, and what depthspace adds to that.

Every command runs once per round, in turn, its output removed after it
(not timed), so that the scratch directory holds the input and one output
at a time (tiny1m: 8 GiB of tmpfs). Printed per command: median wall
seconds (min-max), median CPU seconds (user + system, from wait4) and of
user seconds, peak RSS (GNU time), and the median of
the per-round ratios of wall and CPU to the peer (`cp -r`, `cp`, or for
the -j 2 run the -j 1 run). The first round checks a sample of outputs
against numpy.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    """(wall, cpu, peak MiB, user) of one command. The CPU is what wait4 gives
    for GNU time and the command it waits for, to the microsecond (GNU
    time itself prints hundredths; its own share, about a millisecond,
    is in every figure alike); the peak is GNU time's, of the command
    alone (a child of this process would count this process's memory
    before its exec)."""
    start = time.monotonic()
    p = subprocess.Popen(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read().decode(errors="replace")
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{' '.join(cmd)} failed ({code}): {err}")
    return wall, ru.ru_utime + ru.ru_stime, int(err.strip().splitlines()[-1]) / 1024, ru.ru_utime


def remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def s2d_ref(a):
    n, c, h, w = a.shape
    return a.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, 4 * c, h // 2, w // 2)


def check(src, dst, rels):
    for rel in rels:
        got = np.load(os.path.join(dst, rel))
        if got.tobytes() != np.ascontiguousarray(s2d_ref(np.load(os.path.join(src, rel)))).tobytes():
            sys.exit(f"{rel}: output differs from numpy's")


def tree(root, dirs, files, make):
    rels = []
    for d in range(dirs):
        os.makedirs(os.path.join(root, f"d{d:03d}"))
        for i in range(files):
            rel = os.path.join(f"d{d:03d}", f"f{i:03d}.npy")
            with open(os.path.join(root, rel), "wb") as f:
                f.write(make(d * files + i))
            if i == 0 and d % max(1, dirs // 20) == 0:
                rels.append(rel)
    return rels


def npy_bytes(a):
    import io
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="tiny5000,big")
    ap.add_argument("--scratch", default=None)
    ap.add_argument("--baseline", default=None)
    ap.add_argument("--floor", action="store_true")
    a = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="depthspace-tiny-", dir=a.scratch)
    try:
        bin_ = os.path.join(scratch, "depthspace")
        subprocess.run(["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin_, "./cmd/depthspace"],
                       cwd=ROOT, env=dict(os.environ, CGO_ENABLED="0"), check=True)
        S = lambda *p: os.path.join(scratch, *p)  # noqa: E731
        floor = S("tinyfloor")
        if a.floor:
            subprocess.run(["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", floor, "./bench/tinyfloor"],
                           cwd=ROOT, env=dict(os.environ, CGO_ENABLED="0"), check=True)
        rng = np.random.default_rng(36)
        builds = [("depthspace", bin_)] + ([("baseline", a.baseline)] if a.baseline else [])
        jobs = {}
        for job in a.only.split(","):
            cmds = {}
            if job in ("tiny5000", "tiny100k", "tiny1m"):
                if job == "tiny5000":
                    rels = tree(S("in"), 100, 50, lambda i: npy_bytes(rng.random((1, 3, 64, 64), dtype=np.float32)))
                else:
                    head = npy_bytes(np.zeros((1, 1, 4, 4), np.uint8))[:-16]
                    dirs = 100 if job == "tiny100k" else 1000
                    rels = tree(S("in"), dirs, 1000, lambda i: head + bytes((i + k) & 255 for k in range(16)))
                for name, b in builds:
                    cmds[name] = (S("out-" + name), [b, "s2d", "-b", "2", "--out-dir", S("out-" + name), S("in")])
                cmds["cp -r"] = (S("cp"), ["cp", "-r", S("in"), S("cp")])
                if a.floor:
                    cmds["depthspace -j 1"] = (S("out-j1"), [bin_, "s2d", "-b", "2", "-j", "1", "--out-dir", S("out-j1"), S("in")])
                    for mode, j in (("read", "1"), ("write", "1"), ("copy", "1"), ("copy", "2")):
                        cmds[f"floor {mode} -j {j}"] = (S("floor"), [floor, "-j", j, mode, S("in"), S("floor")])
                    cmds["floor copy -j 2 -dirs"] = (S("floor"), [floor, "-j", "2", "-dirs", "copy", S("in"), S("floor")])
                peer = {k: "cp -r" for k in cmds}
            elif job == "big":
                x = np.lib.format.open_memmap(S("big.npy"), mode="w+", dtype=np.float32, shape=(4, 64, 1024, 1024))
                x[:] = rng.random((1, 64, 1024, 1024), dtype=np.float32)
                x.flush()
                del x
                for name, b in builds:
                    for j in ("1", "2"):
                        out = S(f"big-{name}-j{j}.npy")
                        cmds[f"{name} -j {j}"] = (out, [b, "s2d", "-b", "2", "-j", j, S("big.npy"), "-o", out])
                cmds["cp"] = (S("big-cp.npy"), ["cp", S("big.npy"), S("big-cp.npy")])
                peer = {k: (k.replace("-j 2", "-j 1") if k.endswith("-j 2") else "cp") for k in cmds}
            else:
                sys.exit(f"unknown job {job}")
            res = {k: [] for k in cmds}
            for r in range(a.rounds):
                for k, (out, cmd) in cmds.items():
                    res[k].append(run(cmd))
                    if r == 0 and job != "big" and k in dict(builds):
                        check(S("in"), out, rels)
                    remove(out)
            print(f"\n{job} in {a.scratch or tempfile.gettempdir()} ({a.rounds} rounds)")
            for k, v in res.items():
                walls, cpus = [x[0] for x in v], [x[1] for x in v]
                pr = res[peer[k]]
                rw = statistics.median(x[0] / p[0] for x, p in zip(v, pr))
                rc = statistics.median(x[1] / max(p[1], 0.005) for x, p in zip(v, pr))
                line = (f"  {k:22s} {statistics.median(walls):7.3f} s ({min(walls):.3f}-{max(walls):.3f})"
                        f"  cpu {statistics.median(cpus):6.4f} s (user {statistics.median(x[3] for x in v):.4f})  peak {max(x[2] for x in v):6.1f} MiB"
                        f"  wall x{rw:.2f} cpu x{rc:.2f} {peer[k]}")
                base = k.replace("depthspace", "baseline", 1)
                if k.startswith("depthspace") and base in res:
                    pb = res[base]
                    bw = statistics.median(x[0] / p[0] for x, p in zip(v, pb))
                    bc = statistics.median(x[1] / max(p[1], 0.005) for x, p in zip(v, pb))
                    line += f"; wall x{bw:.2f} cpu x{bc:.2f} baseline"
                print(line)
            for p in ("in", "big.npy"):
                remove(S(p))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
