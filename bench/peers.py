"""One peer run, as a separate process, for bench/bench.py.

  peers.py TOOL OP ORDER LAYOUT BLOCK IN OUT
  TOOL: numpy (np.load), numpy-mmap (np.load(mmap_mode='r')), torch
  (reshape/permute/contiguous; pixel_shuffle/pixel_unshuffle for crd nchw)
Prints the in-process seconds of load+op+save on stdout.
"""
import sys
import time

import numpy as np

tool, op, order, layout, block, src, dst = sys.argv[1:8]
b = int(block)
t0 = time.perf_counter()
x = np.load(src, mmap_mode="r" if tool == "numpy-mmap" else None)


def np_op(x):
    if layout == "nchw":
        if op == "s2d":
            N, C, H, W = x.shape
            y = x.reshape(N, C, H // b, b, W // b, b)
            perm = (0, 3, 5, 1, 2, 4) if order == "dcr" else (0, 1, 3, 5, 2, 4)
            return y.transpose(perm).reshape(N, C * b * b, H // b, W // b)
        N, CB, H, W = x.shape
        C = CB // (b * b)
        if order == "dcr":
            y = x.reshape(N, b, b, C, H, W).transpose(0, 3, 4, 1, 5, 2)
        else:
            y = x.reshape(N, C, b, b, H, W).transpose(0, 1, 4, 2, 5, 3)
        return y.reshape(N, C, H * b, W * b)
    if op == "s2d":
        N, H, W, C = x.shape
        y = x.reshape(N, H // b, b, W // b, b, C)
        perm = (0, 1, 3, 2, 4, 5) if order == "dcr" else (0, 1, 3, 5, 2, 4)
        return y.transpose(perm).reshape(N, H // b, W // b, C * b * b)
    N, H, W, CB = x.shape
    C = CB // (b * b)
    if order == "dcr":
        y = x.reshape(N, H, W, b, b, C).transpose(0, 1, 3, 2, 4, 5)
    else:
        y = x.reshape(N, H, W, C, b, b).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(N, H * b, W * b, C)


if tool.startswith("numpy"):
    y = np.ascontiguousarray(np_op(x))
else:
    import torch
    torch.set_num_threads(2)
    t = torch.from_numpy(np.asarray(x))
    if order == "crd" and layout == "nchw":
        f = torch.nn.functional
        y = (f.pixel_unshuffle(t, b) if op == "s2d" else f.pixel_shuffle(t, b)).numpy()
    else:
        # the same reshape/transpose as numpy, executed by torch
        tt = t
        if layout == "nchw":
            if op == "s2d":
                N, C, H, W = tt.shape
                perm = (0, 3, 5, 1, 2, 4) if order == "dcr" else (0, 1, 3, 5, 2, 4)
                y = tt.reshape(N, C, H // b, b, W // b, b).permute(perm).contiguous().reshape(N, C * b * b, H // b, W // b)
            else:
                N, CB, H, W = tt.shape
                C = CB // (b * b)
                if order == "dcr":
                    y = tt.reshape(N, b, b, C, H, W).permute(0, 3, 4, 1, 5, 2)
                else:
                    y = tt.reshape(N, C, b, b, H, W).permute(0, 1, 4, 2, 5, 3)
                y = y.contiguous().reshape(N, C, H * b, W * b)
        else:
            N, H, W, C = tt.shape
            if op == "s2d":
                perm = (0, 1, 3, 2, 4, 5) if order == "dcr" else (0, 1, 3, 5, 2, 4)
                y = tt.reshape(N, H // b, b, W // b, b, C).permute(perm).contiguous().reshape(N, H // b, W // b, C * b * b)
            else:
                Cc = C // (b * b)
                if order == "dcr":
                    y = tt.reshape(N, H, W, b, b, Cc).permute(0, 1, 3, 2, 4, 5)
                else:
                    y = tt.reshape(N, H, W, Cc, b, b).permute(0, 1, 4, 2, 5, 3)
                y = y.contiguous().reshape(N, H * b, W * b, Cc)
        y = y.numpy()
np.save(dst, y)
print(f"{time.perf_counter() - t0:.4f}")
