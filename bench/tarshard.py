"""Tar check: a WebDataset shard of 1,000 npy members.

  /usr/bin/python3 bench/tarshard.py [--members N] [--scratch DIR]

Writes a shard of N samples (KEY.input.npy float32 [1, 3, 64, 64], 48 KiB,
plus KEY.cls), then prints the command lines to time side by side:
depthspace s2d -b 2 on the shard, cp of the shard, and the same job as a
Python tarfile + numpy loop (tarpeer below), which it also runs once and
checks against depthspace's output.
"""
import argparse
import io
import os
import subprocess
import sys
import tarfile
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

LOOP = r'''
import io, sys, tarfile, numpy as np
with tarfile.open(sys.argv[1]) as tin, tarfile.open(sys.argv[2], "w") as tout:
    for m in tin:
        data = tin.extractfile(m).read() if m.isfile() else None
        if m.name.endswith(".npy"):
            x = np.load(io.BytesIO(data))
            n, c, h, w = x.shape
            y = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, c * 4, h // 2, w // 2)
            b = io.BytesIO(); np.save(b, y); data = b.getvalue(); m.size = len(data)
        tout.addfile(m, io.BytesIO(data) if data is not None else None)
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--scratch", default=None)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="depthspace-tar-", dir=a.scratch)
    rng = np.random.default_rng(19)
    shard = os.path.join(d, "shard.tar")
    with tarfile.open(shard, "w") as tf:
        for i in range(a.members):
            b = io.BytesIO()
            np.save(b, rng.standard_normal((1, 3, 64, 64), dtype=np.float32))
            for name, data in ((f"{i:06d}.input.npy", b.getvalue()), (f"{i:06d}.cls", str(i % 10).encode())):
                ti = tarfile.TarInfo(name)
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
    ds = os.path.join(d, "depthspace")
    subprocess.run(["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", ds, "./cmd/depthspace"],
                   cwd=ROOT, env=dict(os.environ, CGO_ENABLED="0"), check=True)
    loop = os.path.join(d, "loop.py")
    open(loop, "w").write(LOOP)
    subprocess.run([ds, "s2d", "-b", "2", shard, "-o", os.path.join(d, "ds.tar")], check=True)
    subprocess.run(["/usr/bin/python3", loop, shard, os.path.join(d, "py.tar")], check=True)
    with tarfile.open(os.path.join(d, "ds.tar")) as x, tarfile.open(os.path.join(d, "py.tar")) as y:
        for m, n in zip(x, y):
            if m.name != n.name or x.extractfile(m).read()[128:] != y.extractfile(n).read()[128:]:
                sys.exit(f"member {m.name} differs from the numpy loop's")
    print(f"shard: {shard} ({os.path.getsize(shard) >> 20} MiB); outputs agree with the numpy loop")
    print(f"depthspace: {ds} s2d -b 2 {shard} -o {d}/out.tar")
    print(f"cp:         cp {shard} {d}/copy.tar")
    print(f"numpy loop: /usr/bin/python3 {loop} {shard} {d}/py.tar")


if __name__ == "__main__":
    main()
