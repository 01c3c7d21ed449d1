"""numpy as an independent peer for depthspace's tests.

  numpy_peer.py gen DIR    write input .npy files of every dtype and variant,
                           and DIR/jobs.json: the depthspace runs to make
  numpy_peer.py check DIR  load every output with numpy.load and compare it,
                           byte for byte, with numpy's own reshape/transpose

Run by internal/cli/interop_test.go with Debian's /usr/bin/python3.
"""
import json
import os
import sys

import numpy as np

rng = np.random.default_rng(1234)

DTYPES = ["|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8",
          "<f2", "<f4", "<f8", "<c8", "<c16", "|S5", "<U3", "|V3",
          ">i2", ">i4", ">u8", ">f4", ">f8", ">c16", ">U2"]


def random_array(descr, shape):
    dt = np.dtype(descr)
    n = int(np.prod(shape))
    raw = rng.integers(0, 256, size=n * dt.itemsize, dtype=np.uint8).tobytes()
    if dt.kind == "b":
        raw = bytes(b & 1 for b in raw)
    if dt.kind == "U":  # keep code points valid: random BMP letters
        cps = rng.integers(0x20, 0xD7FF, size=n * (dt.itemsize // 4)).astype(dt.byteorder.replace("|", "<") + "u4")
        raw = cps.tobytes()
    return np.frombuffer(raw, dtype=dt).reshape(shape).copy()


def shapes(op, layout, k, blocks, c=3, n=2):
    """An input shape valid for op, with outer spatial sizes 2,3,…"""
    outer = [2 + i for i in range(k)]
    B = int(np.prod(blocks))
    if op == "s2d":
        sp, ch = [o * b for o, b in zip(outer, blocks)], c
    else:
        sp, ch = outer, c * B
    return [n, ch] + sp if layout == "nchw" else [n] + sp + [ch]


def reference(x, op, order, layout, blocks):
    """SPEC's operators, spelled the usual numpy way."""
    k = len(blocks)
    B = int(np.prod(blocks))
    N = x.shape[0]
    if op == "s2d":
        if layout == "nchw":
            C, S = x.shape[1], x.shape[2:]
            O = [s // b for s, b in zip(S, blocks)]
            y = x.reshape([N, C] + [v for o, b in zip(O, blocks) for v in (o, b)])
            o_ax = [2 + 2 * i for i in range(k)]
            k_ax = [3 + 2 * i for i in range(k)]
            perm = [0] + k_ax + [1] + o_ax if order == "dcr" else [0, 1] + k_ax + o_ax
            return y.transpose(perm).reshape([N, C * B] + O)
        C, S = x.shape[-1], x.shape[1:-1]
        O = [s // b for s, b in zip(S, blocks)]
        y = x.reshape([N] + [v for o, b in zip(O, blocks) for v in (o, b)] + [C])
        o_ax = [1 + 2 * i for i in range(k)]
        k_ax = [2 + 2 * i for i in range(k)]
        c_ax = 2 * k + 1
        perm = [0] + o_ax + k_ax + [c_ax] if order == "dcr" else [0] + o_ax + [c_ax] + k_ax
        return y.transpose(perm).reshape([N] + O + [C * B])
    # depth-to-space
    if layout == "nchw":
        CB, O = x.shape[1], list(x.shape[2:])
        C = CB // B
        if order == "dcr":
            y = x.reshape([N] + list(blocks) + [C] + O)
            k_ax, c_ax, o_ax = [1 + i for i in range(k)], k + 1, [k + 2 + i for i in range(k)]
        else:
            y = x.reshape([N, C] + list(blocks) + O)
            c_ax, k_ax, o_ax = 1, [2 + i for i in range(k)], [k + 2 + i for i in range(k)]
        perm = [0, c_ax] + [v for o, kk in zip(o_ax, k_ax) for v in (o, kk)]
        return y.transpose(perm).reshape([N, C] + [o * b for o, b in zip(O, blocks)])
    CB, O = x.shape[-1], list(x.shape[1:-1])
    C = CB // B
    if order == "dcr":
        y = x.reshape([N] + O + list(blocks) + [C])
        o_ax, k_ax, c_ax = [1 + i for i in range(k)], [1 + k + i for i in range(k)], 2 * k + 1
    else:
        y = x.reshape([N] + O + [C] + list(blocks))
        o_ax, c_ax, k_ax = [1 + i for i in range(k)], k + 1, [k + 2 + i for i in range(k)]
    perm = [0] + [v for o, kk in zip(o_ax, k_ax) for v in (o, kk)] + [c_ax]
    return y.transpose(perm).reshape([N] + [o * b for o, b in zip(O, blocks)] + [C])


def save(path, arr, version=(1, 0), fortran=False, descr=None):
    if fortran:
        arr = np.asfortranarray(arr)
    with open(path, "wb") as f:
        if descr is None:
            np.lib.format.write_array(f, arr, version=version)
        else:  # a descr numpy would not write itself, e.g. ml_dtypes' "<V2"
            hdr = {"descr": descr, "fortran_order": False, "shape": arr.shape}
            np.lib.format.write_array_header_1_0(f, hdr)
            f.write(arr.tobytes())


def gen(d):
    jobs = []

    def add(name, arr, op, order, layout, blocks, **kw):
        path = os.path.join(d, name + ".npy")
        if not os.path.exists(path):
            save(path, arr, **kw)
        out = f"{name}.{op}.{order}.{layout}.{'x'.join(map(str, blocks))}.out.npy"
        jobs.append(dict(input=name + ".npy", output=out, op=op, order=order, layout=layout,
                         block="x".join(map(str, blocks)), k=len(blocks)))

    for descr in DTYPES:
        tag = descr.replace("<", "le").replace(">", "be").replace("|", "")
        for op in ("s2d", "d2s"):
            for layout in ("nchw", "nhwc"):
                arr = random_array(descr, shapes(op, layout, 2, [2, 2]))
                for order in ("dcr", "crd"):
                    add(f"{tag}_{op}_{layout}", arr, op, order, layout, [2, 2])
    # Header versions 2.0 and 3.0, Fortran order, an ml_dtypes bfloat16 file.
    for ver in ((2, 0), (3, 0)):
        arr = random_array("<f4", shapes("s2d", "nchw", 2, [2, 2]))
        add(f"f4_v{ver[0]}", arr, "s2d", "dcr", "nchw", [2, 2], version=ver)
    for descr in ("<f4", ">i2", "|S5", "<c16"):
        tag = descr.replace("<", "le").replace(">", "be").replace("|", "")
        for op in ("s2d", "d2s"):
            for layout in ("nchw", "nhwc"):
                arr = random_array(descr, shapes(op, layout, 2, [2, 3]))
                for order in ("dcr", "crd"):
                    add(f"fortran_{tag}_{op}_{layout}", arr, op, order, layout, [2, 3], fortran=True)
    arr = random_array("|V2", shapes("s2d", "nchw", 2, [2, 2]))
    add("bfloat16_mldtypes", arr, "s2d", "crd", "nchw", [2, 2], descr="<V2")
    # Rank 3 (1-D), rank 5 (3-D), rectangular and mixed blocks.
    for blocks in ([2], [3], [2, 3], [3, 1], [2, 2, 2], [1, 2, 3]):
        for op in ("s2d", "d2s"):
            for layout in ("nchw", "nhwc"):
                arr = random_array("<f4", shapes(op, layout, len(blocks), blocks))
                for order in ("dcr", "crd"):
                    name = f"k{len(blocks)}_{'x'.join(map(str, blocks))}_{op}_{layout}"
                    add(name, arr, op, order, layout, blocks)
    # 2 MiB of data: depthspace pads such headers so the data starts on a
    # 4096-byte page; numpy must still load the file as it is.
    arr = random_array("<f4", (2, 8, 128, 256))
    add("big_page_aligned", arr, "s2d", "dcr", "nchw", [2, 2])
    add("big_page_aligned", arr, "s2d", "crd", "nhwc", [2, 2])
    with open(os.path.join(d, "jobs.json"), "w") as f:
        json.dump(jobs, f, indent=1)


def header_dict(path):
    """The header dict as written, before numpy normalises the descr."""
    import ast
    import struct
    with open(path, "rb") as f:
        major = f.read(8)[6]
        n = struct.unpack("<H" if major == 1 else "<I", f.read(2 if major == 1 else 4))[0]
        return ast.literal_eval(f.read(n).decode("utf-8" if major == 3 else "latin1"))


def data_offset(path):
    """Where the element data of an npy file starts."""
    import struct
    with open(path, "rb") as f:
        major = f.read(8)[6]
        fixed, fmt = (10, "<H") if major == 1 else (12, "<I")
        return fixed + struct.unpack(fmt, f.read(fixed - 8))[0]


def check(d):
    with open(os.path.join(d, "jobs.json")) as f:
        jobs = json.load(f)
    bad = 0
    for j in jobs:
        x = np.load(os.path.join(d, j["input"]))
        blocks = [int(b) for b in j["block"].split("x")]
        want = reference(x, j["op"], j["order"], j["layout"], blocks)
        path = os.path.join(d, j["output"])
        got = np.load(path)  # must load unchanged, no allow_pickle
        out_h = header_dict(path)
        in_h = header_dict(os.path.join(d, j["input"]))
        problems = []
        if out_h["fortran_order"] or not got.flags.c_contiguous:
            problems.append("output is not C order")
        if out_h["descr"] != in_h["descr"]:
            problems.append(f"descr {out_h['descr']} != input's {in_h['descr']}")
        if got.shape != want.shape:
            problems.append(f"shape {got.shape} != numpy's {want.shape}")
        elif np.ascontiguousarray(want).tobytes() != got.tobytes():
            problems.append("bytes differ from numpy's reshape/transpose")
        if got.nbytes >= 1 << 20 and data_offset(path) % 4096:
            problems.append(f"data of a large output starts at {data_offset(path)}, not on a page")
        if problems:
            bad += 1
            print(f"FAIL {j['output']}: {'; '.join(problems)}")
    print(f"{len(jobs) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2]))
