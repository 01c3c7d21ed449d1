"""Speed check: a block order runs at the default order's speed.

  /usr/bin/python3 bench/blockorder.py [--rounds N] [--scratch DIR]

Builds depthspace, writes W1 (float32 [4,64,1024,1024], 1 GiB) and a
camera mosaic (uint16 [4096, 6144], 48 MiB), then times whole processes,
interleaved round by round so that drifts hit every variant alike:
s2d -b 2 with the default order, col-major, bggr and SID's 0,1,3,2 on W1;
the mosaic with --layout hw in rggb, bggr and SID's order, and numpy's own
SID pack_raw (np.concatenate of four slices, load and save included) on the
same file. Prints the median and min of each and the median of the
per-round ratios to the default order. Every output is checked once
against numpy's slicing.
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"

SID_NUMPY = """
import numpy as np, sys
im = np.load(sys.argv[1]); H, W = im.shape
np.save(sys.argv[2], np.concatenate((im[0:H:2, 0:W:2, None], im[0:H:2, 1:W:2, None],
                                     im[1:H:2, 1:W:2, None], im[1:H:2, 0:W:2, None]), axis=2))
"""


def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scratch", default=None)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="depthspace-blockorder-", dir=a.scratch)
    try:
        ds = os.path.join(d, "depthspace")
        subprocess.run(["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", ds, "./cmd/depthspace"],
                       cwd=ROOT, env=dict(os.environ, CGO_ENABLED="0"), check=True)
        rng = np.random.default_rng(15)
        w1 = os.path.join(d, "w1.npy")
        x = np.lib.format.open_memmap(w1, mode="w+", dtype=np.float32, shape=(4, 64, 1024, 1024))
        x[:] = rng.standard_normal(size=x.shape, dtype=np.float32)
        x.flush()
        del x
        raw = os.path.join(d, "raw.npy")
        np.save(raw, rng.integers(0, 4096, size=(4096, 6144), dtype=np.uint16))
        # One output per job: replacing another job's 1 GiB output would
        # charge this job for freeing its pages.
        outs = iter(os.path.join(d, f"out{i}.npy") for i in range(100))
        jobs = {
            "W1 row-major": [ds, "s2d", "-b", "2", w1, "-o", next(outs)],
            "W1 col-major": [ds, "s2d", "-b", "2", "--block-order", "col-major", w1, "-o", next(outs)],
            "W1 bggr": [ds, "s2d", "-b", "2", "--block-order", "bggr", w1, "-o", next(outs)],
            "W1 sid 0,1,3,2": [ds, "s2d", "-b", "2", "--block-order", "0,1,3,2", w1, "-o", next(outs)],
            "RAW rggb": [ds, "s2d", "-b", "2", "--layout", "hw", raw, "-o", next(outs)],
            "RAW bggr": [ds, "s2d", "-b", "2", "--layout", "hw", "--block-order", "bggr", raw, "-o", next(outs)],
            "RAW sid 0,1,3,2": [ds, "s2d", "-b", "2", "--layout", "hw", "--block-order", "0,1,3,2", raw, "-o", next(outs)],
            "RAW sid numpy": [PY, "-c", SID_NUMPY, raw, next(outs)],
        }
        # Correctness once: SID on the mosaic against numpy's own.
        subprocess.run(jobs["RAW sid 0,1,3,2"], check=True)
        subprocess.run(jobs["RAW sid numpy"], check=True)
        if np.load(jobs["RAW sid 0,1,3,2"][-1]).tobytes() != np.load(jobs["RAW sid numpy"][-1]).tobytes():
            sys.exit("depthspace's SID packing differs from numpy's")
        times = {k: [] for k in jobs}
        for _ in range(a.rounds):
            for k, cmd in jobs.items():
                times[k].append(timed(cmd))
        base = {"W1": "W1 row-major", "RAW": "RAW rggb"}
        print(f"{'job':18} {'median s':>9} {'min s':>7} {'/default':>9}   ({a.rounds} rounds, interleaved)")
        for k, t in times.items():
            ref = times[base[k.split()[0]]]
            ratio = statistics.median(x / y for x, y in zip(t, ref))
            print(f"{k:18} {statistics.median(t):9.3f} {min(t):7.3f} {ratio:8.2f}x")
    finally:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
