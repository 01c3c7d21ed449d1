"""numpy peer for safetensors, with the format's few-line reference reader
and writer (an 8-byte little-endian length, a JSON header, the data).

gen DIR: writes safetensors files of every dtype the format has (BF16 and
the FP8 types as their bytes) and jobs.json; check DIR: reads every output
depthspace wrote and compares each tensor with numpy's own
reshape/transpose of the input (members not picked by --member: the same
bytes), the names, their order and __metadata__.
"""
import json
import os
import struct
import sys

import numpy as np

TYPES = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "U16": "<u2", "I16": "<i2", "U32": "<u4",
         "I32": "<i4", "U64": "<u8", "I64": "<i8", "F16": "<f2", "BF16": "<u2", "F32": "<f4",
         "F64": "<f8", "C64": "<c8", "F8_E4M3": "uint8", "F8_E5M2": "uint8", "F8_E8M0": "uint8"}


def write(path, tensors, meta):
    """tensors: list of (name, safetensors dtype, array)."""
    h, blobs, off = {}, [], 0
    if meta:
        h["__metadata__"] = meta
    for name, dt, a in tensors:
        b = np.ascontiguousarray(a).tobytes()
        h[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    j = json.dumps(h).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(j)) + j + b"".join(blobs))


def read(path):
    """Returns (metadata, [(name, dtype, array)] in data order)."""
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    data = b[8 + n:]
    meta = h.pop("__metadata__", None)
    out = []
    for name, e in sorted(h.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        a, z = e["data_offsets"]
        arr = np.frombuffer(data[a:z], dtype=TYPES[e["dtype"]]).reshape(e["shape"])
        out.append((name, e["dtype"], arr))
    return meta, out


def s2d(x, b):  # dcr, nchw
    n, c, h, w = x.shape
    return x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h // b, w // b)


def gen(d):
    rng = np.random.default_rng(16)
    tensors = []
    for i, dt in enumerate(TYPES):
        npdt = np.dtype(TYPES[dt])
        raw = rng.integers(0, 256, size=(2, 3, 4, 6) if i % 2 else (1, 2, 2, 4), dtype=np.uint8)
        nbytes = raw.size * npdt.itemsize
        a = np.frombuffer(rng.bytes(nbytes), dtype=npdt).reshape(raw.shape)
        if dt == "BOOL":
            a = a.astype(bool)
        tensors.append((f"t{i}.{dt.lower()}", dt, a))
    write(os.path.join(d, "all.safetensors"), tensors, {"format": "pt", "source": "numpy peer"})
    jobs = [
        {"Op": "s2d", "Order": "dcr", "Layout": "nchw", "Block": "2", "Input": "all.safetensors",
         "Output": "s2d.safetensors", "Extra": []},
        {"Op": "s2d", "Order": "dcr", "Layout": "nchw", "Block": "2", "Input": "all.safetensors",
         "Output": "some.safetensors", "Extra": ["--member", "t1*", "--member", "*.f32"]},
    ]
    with open(os.path.join(d, "jobs.json"), "w") as f:
        json.dump(jobs, f)


def check(d):
    meta_in, ins = read(os.path.join(d, "all.safetensors"))
    bad = 0
    for out, picked in (("s2d.safetensors", lambda n: True),
                        ("some.safetensors", lambda n: n.startswith("t1") or n.endswith(".f32"))):
        meta, outs = read(os.path.join(d, out))
        if meta != meta_in:
            bad += 1
            print("METADATA", out, meta)
        if [o[0] for o in outs] != [i[0] for i in ins]:
            bad += 1
            print("ORDER", out, [o[0] for o in outs])
        for (name, dt, x), (oname, odt, y) in zip(ins, outs):
            want = s2d(x, 2) if picked(name) else x
            if odt != dt or y.shape != want.shape or y.tobytes() != np.ascontiguousarray(want).tobytes():
                bad += 1
                print("DIFFERENT", out, name, dt, odt, y.shape, want.shape)
    print(f"{2 * len(ins)} tensors, {bad} different")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    {"gen": gen, "check": check}[sys.argv[1]](sys.argv[2])
