"""numpy peer for --block-order, the layouts chw, hwc and hw, and --crop,
--pad (numpy.pad's constant, edge and reflect) and --crop-to.

gen DIR: writes inputs and jobs.json; the expected output of every job is
numpy's own slicing of the block offsets, written the way pipelines write
it (SID's pack_raw np.concatenate, YOLOv5 Focus' cat, one slice per Bayer
colour), never a reshape/transpose.
check DIR: loads every output depthspace wrote and compares it with the
expected array, bytes, dtype and shape.
"""
import json
import os
import sys

import numpy as np


def offsets(order, blocks):
    """The block offset (k1, k2) of each channel group, from SPEC's words."""
    b1, b2 = blocks
    if order == "row-major":
        return [(k1, k2) for k1 in range(b1) for k2 in range(b2)]
    if order == "col-major":  # the first spatial axis counts fastest
        return [(k1, k2) for k2 in range(b2) for k1 in range(b1)]
    if order in ("rggb", "bggr", "grbg", "gbrg"):  # groups R, G, G, B
        tile = [(0, 0), (0, 1), (1, 0), (1, 1)]
        greens = [tile[i] for i, c in enumerate(order) if c == "g"]
        return [tile[order.index("r")], greens[0], greens[1], tile[order.index("b")]]
    perm = [int(v) for v in order.split(",")]
    row = [(k1, k2) for k1 in range(b1) for k2 in range(b2)]
    return [row[p] for p in perm]


def s2d(x, layout, dorder, blocks, order):
    b1, b2 = blocks
    ks = offsets(order, blocks)
    if layout == "hw":
        return np.stack([x[k1::b1, k2::b2] for k1, k2 in ks], axis=-1)
    if layout in ("chw", "hwc"):
        return s2d(x[None], "n" + layout, dorder, blocks, order)[0]
    if layout == "nchw":
        g = [x[:, :, k1::b1, k2::b2] for k1, k2 in ks]
        if dorder == "dcr":
            return np.concatenate(g, axis=1)
        n, c, h, w = g[0].shape
        return np.stack(g, axis=2).reshape(n, c * len(g), h, w)
    g = [x[:, k1::b1, k2::b2, :] for k1, k2 in ks]
    if dorder == "dcr":
        return np.concatenate(g, axis=-1)
    n, h, w, c = g[0].shape
    return np.stack(g, axis=-1).reshape(n, h, w, c * len(g))


def gen(d):
    rng = np.random.default_rng(15)
    jobs = []
    cases = [
        # layout, shape (space side), blocks, orders
        ("hw", (8, 12), (2, 2), ["0,1,3,2", "rggb", "bggr", "grbg", "gbrg", "col-major", "3,0,2,1"]),
        ("hw", (6, 8), (3, 2), ["col-major", "5,4,3,2,1,0", "1,0,3,2,5,4"]),
        ("nchw", (2, 3, 8, 6), (2, 2), ["col-major", "bggr", "0,1,3,2"]),
        ("nhwc", (2, 4, 6, 3), (2, 2), ["col-major", "gbrg", "2,3,0,1"]),
        ("chw", (3, 6, 4), (2, 2), ["grbg", "col-major"]),
        ("hwc", (6, 4, 3), (2, 2), ["0,1,3,2", "col-major"]),
        ("nchw", (1, 2, 6, 9), (2, 3), ["col-major", "5,1,4,0,3,2"]),
        ("hw", (4, 6), (1, 2), ["row-major", "1,0"]),
    ]
    dtypes = ["uint16", "uint8", "float32", "<f8", ">i4", "int64", "float16", "bool"]
    i = 0
    for layout, shape, blocks, orders in cases:
        for order in orders:
            for dorder in (["dcr", "crd"] if layout in ("nchw", "nhwc", "chw", "hwc") else ["dcr"]):
                dt = np.dtype(dtypes[i % len(dtypes)])
                x = rng.integers(0, 250, size=shape).astype(dt)
                # Slicing keeps the dtype; concatenate of big-endian arrays
                # gives native ones, so the expected array is cast back.
                y = s2d(x, layout, dorder, blocks, order).astype(dt)
                block = "x".join(str(b) for b in blocks)
                np.save(os.path.join(d, f"x{i}.npy"), x)
                np.save(os.path.join(d, f"y{i}.npy"), y)
                common = {"Order": dorder, "Layout": layout, "Block": block, "BlockOrder": order}
                jobs.append(dict(common, Op="s2d", Input=f"x{i}.npy", Output=f"s2d{i}.npy", Want=f"y{i}.npy"))
                jobs.append(dict(common, Op="d2s", Input=f"y{i}.npy", Output=f"d2s{i}.npy", Want=f"x{i}.npy"))
                i += 1
    # Sizes that are not a multiple of the block: numpy.pad in each mode,
    # numpy's crop, and the crop back (d2s --crop-to) of a padded s2d.
    pads = [("hw", (5, 7), (2, 2)), ("nchw", (2, 3, 7, 5), (2, 2)), ("nhwc", (1, 5, 9, 2), (3, 2)),
            ("hwc", (7, 7, 3), (4, 2)), ("hw", (1, 3), (2, 2)), ("chw", (2, 9, 4), (4, 3))]
    for layout, shape, blocks in pads:
        sp = {"hw": 0, "hwc": 0, "chw": 1, "nchw": 2, "nhwc": 1}[layout]
        for mode, npmode in (("zero", "constant"), ("edge", "edge"), ("reflect", "reflect"), ("crop", None)):
            for order in ("row-major", "0,1,3,2" if blocks[0] * blocks[1] == 4 else "col-major"):
                dt = np.dtype(dtypes[i % len(dtypes)])
                x = rng.integers(0, 250, size=shape).astype(dt)
                widths = [(0, 0)] * len(shape)
                cut = [slice(None)] * len(shape)
                for a, b in enumerate(blocks):
                    n = shape[sp + a]
                    widths[sp + a] = (0, -n % b)
                    cut[sp + a] = slice(0, n // b * b)
                if npmode:
                    xs = np.pad(x, widths, mode=npmode)
                    extra = ["--pad", mode]
                else:
                    xs = x[tuple(cut)]
                    extra = ["--crop"]
                y = s2d(xs, layout, "dcr", blocks, order).astype(dt)
                block = "x".join(str(b) for b in blocks)
                np.save(os.path.join(d, f"x{i}.npy"), x)
                np.save(os.path.join(d, f"y{i}.npy"), y)
                common = {"Order": "dcr", "Layout": layout, "Block": block, "BlockOrder": order}
                jobs.append(dict(common, Op="s2d", Input=f"x{i}.npy", Output=f"s2d{i}.npy", Want=f"y{i}.npy", Extra=extra))
                if npmode:
                    sizes = ",".join(str(shape[sp + a]) for a in range(len(blocks)))
                    jobs.append(dict(common, Op="d2s", Input=f"y{i}.npy", Output=f"d2s{i}.npy", Want=f"x{i}.npy",
                                     Extra=["--crop-to", sizes]))
                i += 1
    with open(os.path.join(d, "jobs.json"), "w") as f:
        json.dump(jobs, f)


def check(d):
    with open(os.path.join(d, "jobs.json")) as f:
        jobs = json.load(f)
    bad = 0
    for j in jobs:
        got = np.load(os.path.join(d, j["Output"]))
        want = np.load(os.path.join(d, j["Want"]))
        ok = got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()
        if not ok:
            bad += 1
            print("DIFFERENT", j, got.shape, want.shape)
    print(f"{len(jobs)} jobs, {bad} different")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    {"gen": gen, "check": check}[sys.argv[1]](sys.argv[2])
