"""A tensor larger than the machine's memory, converted and verified.

  /usr/bin/python3 bench/bigfile.py DIR BINARY [GiB]

Writes a uint8 npy of [N, 2, 32768, 32768] (N = GiB / 2; default 28 GiB)
with seeded random bytes, runs `BINARY s2d -b 4` on it under GNU time
(peak RSS, wall time), then checks every output byte against numpy's
reshape/transpose, one slab of rows at a time so that the check itself
stays small. Removes both files at the end.
"""
import os
import subprocess
import sys
import time

import numpy as np

d, binary = sys.argv[1], sys.argv[2]
gib = int(sys.argv[3]) if len(sys.argv) > 3 else 28
N, C, H, W, b = gib // 2, 2, 32768, 32768, 4
src, dst = os.path.join(d, "big.npy"), os.path.join(d, "big.s2d.npy")
try:
    t0 = time.time()
    x = np.lib.format.open_memmap(src, mode="w+", dtype=np.uint8, shape=(N, C, H, W))
    rng = np.random.default_rng(5)
    rows = 2048
    for n in range(N):
        for c in range(C):
            for h in range(0, H, rows):
                x[n, c, h:h + rows] = rng.integers(0, 256, size=(rows, W), dtype=np.uint8)
    x.flush()
    del x
    print(f"wrote {os.path.getsize(src) / 2**30:.1f} GiB in {time.time() - t0:.0f} s", flush=True)

    r = subprocess.run(["/usr/bin/time", "-v", binary, "s2d", "-b", str(b), src, "-o", dst],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"depthspace failed: {r.stderr}")
    for line in r.stderr.splitlines():
        if "Maximum resident" in line or "Elapsed (wall" in line:
            print("depthspace:", line.strip(), flush=True)

    t0 = time.time()
    x = np.load(src, mmap_mode="r")
    y = np.load(dst, mmap_mode="r")
    assert y.shape == (N, C * b * b, H // b, W // b), y.shape
    slab = 256  # output rows per check: 256*4 input rows = 32 MiB
    for n in range(N):
        for c in range(C):
            for o in range(0, H // b, slab):
                xs = np.asarray(x[n, c, o * b:(o + slab) * b])            # [slab*b, W]
                want = xs.reshape(slab, b, W // b, b).transpose(1, 3, 0, 2)  # [k1, k2, slab, W/b]
                for k1 in range(b):
                    for k2 in range(b):
                        ch = (k1 * b + k2) * C + c  # dcr: ch = kk*C + c
                        if not np.array_equal(y[n, ch, o:o + slab], want[k1, k2]):
                            sys.exit(f"MISMATCH at item {n}, channel {ch}, rows {o}..{o + slab}")
    print(f"verified every byte against numpy in {time.time() - t0:.0f} s", flush=True)
finally:
    for p in (src, dst):
        if os.path.exists(p):
            os.remove(p)
