"""End-to-end benchmark of depthspace against cp, numpy and torch.

  bench/run.sh [--rounds N] [--only W1,W3] [--scratch DIR]

Builds the binary, writes the five workloads (seeded) into a scratch
directory that is removed at the end, then runs every tool on every
workload, interleaved round by round (all tools once per round, in turn),
so that drifts of this shared machine hit every tool alike. The first round
checks depthspace's output byte for byte against numpy's. Prints, per
workload and tool: median and min-max wall seconds of the whole process,
GB/s of tensor moved, peak RSS, and the per-round paired ratio to cp and to
depthspace.
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

WORKLOADS = {
    # name: (dtype, shape, op, order, layout, block)
    "W1-s2d": ("float32", (4, 64, 1024, 1024), "s2d", "dcr", "nchw", 2),
    "W1-d2s": ("float32", (4, 256, 512, 512), "d2s", "dcr", "nchw", 2),
    "W2-s2d": ("float32", (4, 64, 1024, 1024), "s2d", "crd", "nchw", 2),
    "W2-d2s": ("float32", (4, 256, 512, 512), "d2s", "crd", "nchw", 2),
    "W3": ("uint8", (16, 3, 2048, 2048), "s2d", "dcr", "nchw", 4),
    "W4": ("float16", (8, 1024, 1024, 32), "s2d", "dcr", "nhwc", 2),
    "W5": ("float32", (256, 16, 64, 64), "s2d", "dcr", "nchw", 2),
    # Start-up: a 384-byte file, where the fixed cost of a process is all.
    "tiny": ("float32", (1, 4, 4, 4), "s2d", "dcr", "nchw", 2),
}


def run(cmd):
    """Runs a command; returns (wall seconds, peak RSS MiB, stdout).

    Peak RSS comes from GNU time, a small process: a child forked straight
    from this Python process would inherit its high-water mark."""
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr}")
    rss_kib = int(p.stderr.strip().splitlines()[-1])
    return wall, rss_kib / 1024, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="")
    ap.add_argument("--scratch", default=None)
    ap.add_argument("--tools", default="depthspace,depthspace-j1,cp,numpy,numpy-mmap,torch")
    a = ap.parse_args()
    names = [n for n in WORKLOADS if not a.only or any(n.startswith(o) for o in a.only.split(","))]
    tools = a.tools.split(",")
    scratch = tempfile.mkdtemp(prefix="depthspace-bench-", dir=a.scratch)
    try:
        binary = os.path.join(scratch, "depthspace")
        # Built as the release is (.goreleaser.yaml): static, stripped.
        env = dict(os.environ, CGO_ENABLED="0")
        subprocess.run(["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", binary, "./cmd/depthspace"],
                       cwd=ROOT, env=env, check=True)
        rng = np.random.default_rng(20261122)
        for n in names:
            dt, shape, *_ = WORKLOADS[n]
            path = os.path.join(scratch, f"{n}.npy")
            if dt == "uint8":
                x = rng.integers(0, 256, size=shape, dtype=np.uint8)
            else:
                x = rng.standard_normal(size=shape, dtype=np.float32).astype(dt)
            np.save(path, x)
            del x
        results = {n: {t: [] for t in tools} for n in names}
        for r in range(a.rounds):
            for n in names:
                dt, shape, op, order, layout, block = WORKLOADS[n]
                src = os.path.join(scratch, f"{n}.npy")
                subprocess.run(["cat", src], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
                for t in tools:
                    dst = os.path.join(scratch, f"out-{t}.npy")
                    if t.startswith("depthspace"):
                        cmd = [binary, op, "-b", str(block), "--order", order, "--layout", layout, src, "-o", dst]
                        if t == "depthspace-j1":
                            cmd += ["-j", "1"]
                    elif t == "cp":
                        cmd = ["cp", src, dst]
                    else:
                        cmd = [PY, os.path.join(HERE, "peers.py"), t, op, order, layout, str(block), src, dst]
                    wall, rss, _ = run(cmd)
                    results[n][t].append((wall, rss))
                if r == 0 and "numpy" in tools and "depthspace" in tools:
                    got = np.load(os.path.join(scratch, "out-depthspace.npy"), mmap_mode="r")
                    want = np.load(os.path.join(scratch, "out-numpy.npy"), mmap_mode="r")
                    ok = got.dtype.str == want.dtype.str and got.shape == want.shape and \
                        np.array_equal(got.view(np.uint8), want.view(np.uint8))
                    del got, want
                    if not ok:
                        sys.exit(f"{n}: depthspace's output differs from numpy's")
                    print(f"{n}: depthspace output equals numpy's byte for byte", file=sys.stderr)
                for t in tools:
                    p = os.path.join(scratch, f"out-{t}.npy")
                    if os.path.exists(p):
                        os.remove(p)
            print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
        report(names, tools, results)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def report(names, tools, results):
    print(f"machine: {os.cpu_count()} CPUs, {os.uname().machine}, {os.uname().release}")
    hdr = f"{'workload':8} {'tool':14} {'median s':>9} {'min-max s':>15} {'GB/s':>6} {'peak MiB':>9} {'÷cp':>6} {'÷depthspace':>11}"
    print(hdr)
    print("-" * len(hdr))
    for n in names:
        dt, shape, *_ = WORKLOADS[n]
        nbytes = int(np.prod(shape)) * np.dtype(dt).itemsize
        for t in tools:
            walls = [w for w, _ in results[n][t]]
            rss = max(r for _, r in results[n][t])
            med = statistics.median(walls)

            def ratio(other):
                if other not in results[n]:
                    return float("nan")
                return statistics.median(w / o for (w, _), (o, _) in zip(results[n][t], results[n][other]))
            print(f"{n:8} {t:14} {med:9.3f} {min(walls):7.3f}-{max(walls):<7.3f} {nbytes / med / 1e9:6.2f} {rss:9.1f} {ratio('cp'):6.2f} {ratio('depthspace'):11.2f}")
        print()


if __name__ == "__main__":
    main()
