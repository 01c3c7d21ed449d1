"""Pillow peer for PNG (python3-pil).

gen DIR: Pillow writes PNGs of every mode it has for them: L (8-bit
gray), I;16 (16-bit gray), LA, RGB, RGBA, P (palette) with and without
transparency; jobs.json asks depthspace to convert each to npy and back
to PNG, and to s2d a gray and an RGB image (--layout hw / hwc) into npy.
check DIR: numpy compares each npy with Pillow's own reading of the PNG
(np.asarray, palette images converted to RGB/RGBA by Pillow), and Pillow
reads every PNG depthspace wrote and finds the same pixels.
"""
import json
import os
import sys

import numpy as np
from PIL import Image

MODES = ["L", "I;16", "LA", "RGB", "RGBA", "P", "PT"]


def expected(path):
    im = Image.open(path)
    if im.mode == "P":
        im = im.convert("RGBA" if "transparency" in im.info else "RGB")
    a = np.asarray(im)
    if a.dtype.byteorder == ">" or a.dtype == np.dtype("<i4") or im.mode.startswith("I"):
        a = a.astype("<u2")
    return a


def gen(d):
    rng = np.random.default_rng(17)
    jobs = []
    for mode in MODES:
        h, w = 6, 10
        if mode == "I;16":
            a = rng.integers(0, 65536, size=(h, w), dtype=np.uint16)
            im = Image.frombytes("I;16", (w, h), a.astype("<u2").tobytes())
        elif mode in ("P", "PT"):
            im = Image.fromarray(rng.integers(0, 16, size=(h, w), dtype=np.uint8), "L").convert("P")
            im.putpalette([int(v) for v in rng.integers(0, 256, size=48)])
            if mode == "PT":
                im.info["transparency"] = bytes(int(v) for v in rng.integers(0, 256, size=16))
        else:
            c = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4}[mode]
            a = rng.integers(0, 256, size=(h, w, c) if c > 1 else (h, w), dtype=np.uint8)
            im = Image.fromarray(a, mode)
        name = mode.replace(";", "")
        kw = {"transparency": im.info["transparency"]} if mode == "PT" else {}
        im.save(os.path.join(d, f"{name}.png"), **kw)
        jobs.append({"Op": "convert", "Input": f"{name}.png", "Output": f"{name}.npy"})
        jobs.append({"Op": "convert", "Input": f"{name}.npy", "Output": f"{name}.out.png"})
    jobs.append({"Op": "s2d", "Order": "dcr", "Layout": "hw", "Block": "2", "Input": "I16.png", "Output": "I16.s2d.npy"})
    jobs.append({"Op": "s2d", "Order": "dcr", "Layout": "hwc", "Block": "2", "Input": "RGB.png", "Output": "RGB.s2d.npy"})
    with open(os.path.join(d, "jobs.json"), "w") as f:
        json.dump(jobs, f)


def s2d_hwc(x, b):
    if x.ndim == 2:
        x = x[..., None]
    h, w, c = x.shape
    return x.reshape(h // b, b, w // b, b, c).transpose(0, 2, 1, 3, 4).reshape(h // b, w // b, b * b * c)


def check(d):
    bad = 0
    for mode in MODES:
        name = mode.replace(";", "")
        want = expected(os.path.join(d, f"{name}.png"))
        got = np.load(os.path.join(d, f"{name}.npy"))
        if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
            bad += 1
            print("READ DIFFERS", name, got.dtype, got.shape, want.dtype, want.shape)
        back = expected(os.path.join(d, f"{name}.out.png"))
        if back.shape != want.shape or back.tobytes() != want.tobytes():
            bad += 1
            print("WRITE DIFFERS", name, back.dtype, back.shape)
    for src, out in (("I16", "I16.s2d"), ("RGB", "RGB.s2d")):
        want = s2d_hwc(expected(os.path.join(d, f"{src}.png")), 2)
        got = np.load(os.path.join(d, f"{out}.npy"))
        if got.shape != want.shape or got.tobytes() != np.ascontiguousarray(want).tobytes():
            bad += 1
            print("S2D DIFFERS", src, got.shape, want.shape)
    print(f"{2 * len(MODES) + 2} checks, {bad} different")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    {"gen": gen, "check": check}[sys.argv[1]](sys.argv[2])
