"""Dataset-scale benchmark: many files, replaced outputs, and a
standard input or output that is a regular file, each next to the copy
tool doing the same bytes.

  /usr/bin/python3 bench/dataset.py [--rounds N] [--only batch400,...]

Jobs (seeded data in a scratch directory removed at the end):
  batch400     400 npy files of 3 MiB: depthspace --out-dir (fresh), the
               same replacing the outputs of the previous round, cp -r
  batch2000    2,000 such files (hard links to the 400): memory must not grow
  batch5000    5,000 npy files of 48 KiB in 100 directories: depthspace,
               cp -r, and a 2-process numpy multiprocessing.Pool loop
  stdio        a 256 MiB npy: `> out.npy` and `- < in.npy > out.npy`
               against the -o form
  pipes        a 1 GiB float32 [4, 64, 1024, 1024] npy through
               `cat | depthspace | cat`, beside `cat | cat` and the -o form
  npz          8 deflated members of 16 MiB: depthspace (-j 2 and -j 1)
               beside numpy's load + savez_compressed doing the same job
Rounds are interleaved (every command once per round, in turn); the first
round checks depthspace's outputs against numpy's. Prints medians and
min-max of whole-process wall seconds, peak RSS (GNU time), and the median
of per-round ratios to the peer.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import ROOT, run  # noqa: E402

POOL = r'''
import os, sys
import numpy as np
from multiprocessing import Pool
src, dst = sys.argv[1], sys.argv[2]
def s2d(rel):
    a = np.load(os.path.join(src, rel))
    n, c, h, w = a.shape
    out = a.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, 4 * c, h // 2, w // 2)
    p = os.path.join(dst, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    np.save(p, out)
rels = sorted(os.path.relpath(os.path.join(d, f), src) for d, _, fs in os.walk(src) for f in fs)
with Pool(2) as pool:
    pool.map(s2d, rels, chunksize=64)
'''


NPZ_JOB = r'''
import sys, numpy as np
z = np.load(sys.argv[1])
out = {}
for k in z.files:
    a = z[k]
    n, c, h, w = a.shape
    out[k] = a.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, 4 * c, h // 2, w // 2)
np.savez_compressed(sys.argv[2], **out)
'''


def s2d_ref(a):
    n, c, h, w = a.shape
    return a.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, 4 * c, h // 2, w // 2)


def check_tree(src, dst, sample=50):
    rels = sorted(os.path.relpath(os.path.join(d, f), src) for d, _, fs in os.walk(src) for f in fs)
    for rel in rels[:: max(1, len(rels) // sample)]:
        got = np.load(os.path.join(dst, rel))
        if got.tobytes() != np.ascontiguousarray(s2d_ref(np.load(os.path.join(src, rel)))).tobytes():
            sys.exit(f"{rel}: output differs from numpy's")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--scratch", default=None)
    a = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="depthspace-dataset-", dir=a.scratch)
    try:
        bin_ = os.path.join(scratch, "depthspace")
        subprocess.run(["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin_, "./cmd/depthspace"],
                       cwd=ROOT, env=dict(os.environ, CGO_ENABLED="0"), check=True)
        pool = os.path.join(scratch, "pool.py")
        with open(pool, "w") as f:
            f.write(POOL)
        rng = np.random.default_rng(14)
        S = lambda *p: os.path.join(scratch, *p)  # noqa: E731
        jobs = {}
        want = lambda j: not a.only or j in a.only.split(",")  # noqa: E731
        if want("batch400") or want("batch2000"):
            os.makedirs(S("d400"))
            x = rng.random((1, 12, 256, 256), dtype=np.float32)
            for i in range(400):
                np.save(S("d400", f"f{i:04d}.npy"), x + i)
            if want("batch400"):
                jobs["batch400"] = {
                    "depthspace": f"rm -rf {S('o400')}; {bin_} s2d -b 2 --out-dir {S('o400')} {S('d400')}",
                    "depthspace-replace": f"{bin_} s2d -b 2 --out-dir {S('r400')} {S('d400')}",
                    "cp -r": f"rm -rf {S('c400')}; cp -r {S('d400')} {S('c400')}",
                }
                subprocess.run(["sh", "-c", jobs["batch400"]["depthspace-replace"]], check=True, capture_output=True)
            if want("batch2000"):
                os.makedirs(S("d2000"))
                for i in range(2000):
                    os.link(S("d400", f"f{i % 400:04d}.npy"), S("d2000", f"f{i:04d}.npy"))
                jobs["batch2000"] = {
                    "depthspace": f"rm -rf {S('o2000')}; {bin_} s2d -b 2 --out-dir {S('o2000')} {S('d2000')}",
                    "cp -r": f"rm -rf {S('c2000')}; cp -r {S('d2000')} {S('c2000')}",
                }
        if want("batch5000"):
            for d in range(100):
                os.makedirs(S("d5000", f"d{d:02d}"))
                for i in range(50):
                    np.save(S("d5000", f"d{d:02d}", f"f{i:02d}.npy"), rng.random((1, 3, 64, 64), dtype=np.float32))
            jobs["batch5000"] = {
                "depthspace": f"rm -rf {S('o5000')}; {bin_} s2d -b 2 --out-dir {S('o5000')} {S('d5000')}",
                "cp -r": f"rm -rf {S('c5000')}; cp -r {S('d5000')} {S('c5000')}",
                "numpy Pool(2)": f"rm -rf {S('p5000')}; /usr/bin/python3 {pool} {S('d5000')} {S('p5000')}",
            }
        if want("stdio"):
            np.save(S("big.npy"), rng.random((4, 16, 1024, 1024), dtype=np.float32))
            jobs["stdio"] = {
                "-o out.npy": f"{bin_} s2d -b 2 {S('big.npy')} -o {S('o1.npy')}",
                "> out.npy": f"{bin_} s2d -b 2 {S('big.npy')} > {S('o2.npy')}",
                "- < in.npy > out.npy": f"{bin_} s2d -b 2 - < {S('big.npy')} > {S('o3.npy')}",
                "cp": f"cp {S('big.npy')} {S('o4.npy')}",
            }
        if want("pipes"):
            np.save(S("w1.npy"), rng.random((4, 64, 1024, 1024), dtype=np.float32))
            jobs["pipes"] = {
                "cat | depthspace | cat": f"cat {S('w1.npy')} | {bin_} s2d -b 2 | cat > {S('p1.npy')}",
                "depthspace -o": f"{bin_} s2d -b 2 {S('w1.npy')} -o {S('p2.npy')}",
                "cat | cat": f"cat {S('w1.npy')} | cat > {S('p3.npy')}",
            }
        if want("npz"):
            arrs = {f"out{i}": (rng.standard_normal((1, 16, 512, 512)) * 0.01).round(2).astype(np.float32) for i in range(8)}
            np.savez_compressed(S("in.npz"), **arrs)
            with open(S("npz_job.py"), "w") as f:
                f.write(NPZ_JOB)
            jobs["npz"] = {
                "depthspace": f"{bin_} s2d -b 2 {S('in.npz')} -o {S('z1.npz')}",
                "depthspace -j 1": f"{bin_} s2d -b 2 -j 1 {S('in.npz')} -o {S('z2.npz')}",
                "numpy": f"/usr/bin/python3 {S('npz_job.py')} {S('in.npz')} {S('z3.npz')}",
            }
        for job, cmds in jobs.items():
            res = {k: [] for k in cmds}
            for r in range(a.rounds):
                for k, c in cmds.items():
                    res[k].append(run(["sh", "-c", c])[:2])
                if r == 0 and job.startswith("batch"):
                    check_tree(S("d" + job[5:]), S("o" + job[5:]))
                    if job == "batch5000":
                        check_tree(S("d5000"), S("p5000"))
                if r == 0 and job == "pipes" and open(S("p1.npy"), "rb").read() != open(S("p2.npy"), "rb").read():
                    sys.exit("pipes: the piped output differs from the -o output")
                if r == 0 and job == "npz":
                    got, ref = np.load(S("z1.npz")), np.load(S("z3.npz"))
                    if got.files != ref.files or any(got[k].tobytes() != ref[k].tobytes() for k in ref.files):
                        sys.exit("npz: depthspace's archive differs from numpy's")
                if r == 0 and job == "stdio":
                    ref = open(S("o1.npy"), "rb").read()
                    for o in ("o2.npy", "o3.npy"):
                        if open(S(o), "rb").read() != ref:
                            sys.exit(f"stdio: {o} differs from the -o output")
            peer = next(p for p in ("cp -r", "-o out.npy", "cat | cat", "numpy") if p in cmds)
            print(f"\n{job} ({a.rounds} rounds)")
            for k, v in res.items():
                walls = [w for w, _ in v]
                ratio = statistics.median(w / p for (w, _), (p, _) in zip(v, res[peer]))
                print(f"  {k:24s} {statistics.median(walls):7.3f} s  ({min(walls):.3f}-{max(walls):.3f})"
                      f"  peak {max(m for _, m in v):7.1f} MiB  x{ratio:.2f} {peer}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
