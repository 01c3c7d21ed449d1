"""Camera DNGs (python3-tifffile) packed into four planes, checked against LibRaw.

  dng_peer.py gen DIR    write the DNGs, LibRaw's planes and jobs.json
  dng_peer.py check DIR  check depthspace's outputs

gen writes 16-bit CFA DNGs with tifffile — the four Bayer patterns, both
byte orders, strips and tiles, the raw image in IFD 0 or in a SubIFD behind
a preview, one with an ActiveArea, and each pattern written through three
CFAPlaneColor orders (CFAPattern's values then being planes, not
colours) — and runs LibRaw's 4channels -B (no
black subtraction) and unprocessed_raw on each. depthspace then runs
s2d -b 2 --layout hw --block-order cfa on every file and converts it whole.
check asks that the whole mosaic is unprocessed_raw's, and that the four
planes are LibRaw's R, G, G2 and B planes of the ActiveArea (tiled files,
which LibRaw 0.20 cannot read uncompressed, against tifffile's mosaic and
numpy's slicing): group 0 is R,
group 3 is B, and groups 1 and 2 are the greens in raster order of the 2x2
tile, where LibRaw's G is the green on the red row (so for BGGR and GBRG,
whose red row is the second, groups 1 and 2 are LibRaw's G2 and G).
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import tifffile

PATTERNS = {"rggb": (0, 1, 1, 2), "bggr": (2, 1, 1, 0), "grbg": (1, 0, 2, 1), "gbrg": (1, 2, 0, 1)}

# CFAPlaneColor orders besides the default (0, 1, 2): a CFAPattern value's
# position in the tag is the pixel's plane, and LibRaw and dcraw read an
# RGB sensor's planes as red, green, blue in that order, so a BGGR sensor
# may be written as CFAPattern 0,1,1,2 with plane colours 2,1,0.
PLANE_ORDERS = [(2, 1, 0), (1, 2, 0), (2, 0, 1), (0, 2, 1)]


def stored(name, planes):
    """The CFAPattern values that make pattern name with these plane colours."""
    if planes is None:
        return PATTERNS[name]
    return tuple(planes[c] for c in PATTERNS[name])


def tags(pattern, area, planes=None):
    t = [(50706, "B", 4, (1, 4, 0, 0), True), (33421, "H", 2, (2, 2), True), (33422, "B", 4, pattern, True),
         (50708, "s", 0, "Test Cam", True), (50717, "H", 1, (65535,), True),
         (50721, "2i", 9, (1, 1, 0, 1, 0, 1, 0, 1, 1, 1, 0, 1, 0, 1, 0, 1, 1, 1), True)]
    if area:
        t.append((50829, "I", 4, area, True))
    if planes:
        t.append((50710, "B", 3, planes, True))
    return t


def cases():
    i = 0
    for name in PATTERNS:
        for bo, kw, sub, area in [("<", dict(rowsperstrip=6), False, None),
                                  (">", dict(tile=(16, 16)), True, None),
                                  ("<", dict(rowsperstrip=48), True, (2, 4, 46, 60))]:
            yield f"{name}_{i}", name, bo, kw, sub, area, None
            i += 1
        for planes in PLANE_ORDERS:
            yield f"{name}_{i}_planes", name, "<", dict(rowsperstrip=6), False, None, planes
            i += 1


def dcraw_pattern(path):
    """dcraw's name of the file's 2x2 pattern, as `dcraw -i -v` says it."""
    out = subprocess.run(["dcraw", "-i", "-v", path], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("Filter pattern:"):
            return line.split(":", 1)[1].strip().replace("/", "")[:4].lower()
    return None


def pgm(path):
    b = open(path, "rb").read()
    parts = b.split(b"\n", 3)
    w, h = map(int, parts[1].split())
    return np.frombuffer(parts[3][: 2 * w * h], dtype=">u2").reshape(h, w)


def gen(d):
    rng = np.random.default_rng(27)
    jobs = []
    for stem, name, bo, kw, sub, area, planes in cases():
        a = rng.integers(0, 65536, size=(48, 64), dtype=np.uint16)
        path = os.path.join(d, stem + ".dng")
        with tifffile.TiffWriter(path, byteorder=bo) as t:
            tg = tags(stored(name, planes), area, planes)
            if sub:
                t.write(np.zeros((8, 8, 3), np.uint8), photometric="rgb", subfiletype=1, subifds=1,
                        extratags=[tg[0], tg[3]], metadata=None, software=False)
                t.write(a, photometric=32803, subfiletype=0, extratags=tg[1:3] + tg[4:], metadata=None,
                        software=False, **kw)
            else:
                t.write(a, photometric=32803, subfiletype=0, extratags=tg, metadata=None, software=False, **kw)
        np.save(os.path.join(d, stem + ".mosaic.npy"), a)
        for tool in (["4channels", "-B"], ["unprocessed_raw", "-q"]):
            subprocess.run(tool + [path], check=True, stdout=subprocess.DEVNULL)
        jobs.append(dict(Input=stem + ".dng", Output=stem + ".planes.npy", Op="s2d", Order="dcr", Layout="hw",
                         Block="2", BlockOrder="cfa"))
        jobs.append(dict(Input=stem + ".dng", Output=stem + ".full.npy", Op="convert"))
    json.dump(jobs, open(os.path.join(d, "jobs.json"), "w"))


def check(d):
    bad = 0
    n = 0
    for stem, name, bo, kw, sub, area, planes in cases():
        path = os.path.join(d, stem + ".dng")
        if planes and shutil.which("dcraw"):
            n += 1
            got = dcraw_pattern(path)
            if got != name:
                print(f"{stem}: dcraw reads the pattern as {got}, not {name}")
                bad += 1
        full = np.load(os.path.join(d, stem + ".full.npy"))
        mosaic = np.load(os.path.join(d, stem + ".mosaic.npy"))
        planes = np.load(os.path.join(d, stem + ".planes.npy"))
        if "tile" in kw:
            # LibRaw 0.20 reads an uncompressed DNG as rows from its first
            # strip: tiles come out scrambled. tifffile's mosaic, and numpy's
            # slicing of it by the pattern, are the reference.
            letters = "".join("RGB"[v] for v in PATTERNS[name])
            pos = [(k // 2, k % 2) for k in range(4)]
            greens = [pos[k] for k in range(4) if letters[k] == "G"]
            want = [pos[letters.index("R")], greens[0], greens[1], pos[letters.index("B")]]
            n += 4
            if not np.array_equal(full, mosaic):
                print(f"{stem}: the mosaic differs from tifffile's")
                bad += 1
            for k, (y, x) in enumerate(want):
                if not np.array_equal(planes[..., k], mosaic[y::2, x::2]):
                    print(f"{stem}: group {k} is not the mosaic's [{y}::2, {x}::2]")
                    bad += 1
            continue
        if not (full.dtype == np.uint16 and np.array_equal(full, mosaic) and np.array_equal(full, pgm(path + ".pgm"))):
            print(f"{stem}: the mosaic differs from unprocessed_raw's or tifffile's")
            bad += 1
        lib = {c: tifffile.imread(f"{path}.{c}.tiff") for c in ("R", "G", "G2", "B")}
        top, left, bottom, right = area or (0, 0, 48, 64)
        p = planes[top // 2:bottom // 2, left // 2:right // 2]
        g1, g2 = ("G", "G2") if name in ("rggb", "grbg") else ("G2", "G")
        for k, c in enumerate(("R", g1, g2, "B")):
            n += 1
            if p[..., k].shape != lib[c].shape or not np.array_equal(p[..., k], lib[c]):
                print(f"{stem}: group {k} is not LibRaw's {c} plane")
                bad += 1
    print(f"{n} planes and patterns of {len(list(cases()))} DNGs checked (strips against LibRaw's 4channels, "
          f"tiles against numpy, plane colours' patterns against dcraw -i -v); {bad} bad")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    {"gen": gen, "check": check}[sys.argv[1]](sys.argv[2])
