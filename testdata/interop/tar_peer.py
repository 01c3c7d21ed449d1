"""Python tarfile + numpy peer for WebDataset tar shards.

gen DIR: writes shard.tar as WebDataset does (per sample: KEY.input.npy,
KEY.cls, KEY.json, KEY.depth.png via Pillow when it is installed), with
distinct modes, owners and times, a directory entry and a member named
../escape.npy; and baseline.py's job for the timing bench.
check DIR OUT...: each OUT must list the same members, in the same order,
with the same name, mode, uid/gid, uname/gname and mtime; .npy members
are numpy's s2d (dcr, nchw, block 2) of the input's; every other member
has the same bytes.
"""
import io
import json
import os
import sys
import tarfile

import numpy as np


def npy_bytes(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def add(tf, name, data, i):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mode = 0o640 if i % 2 else 0o604
    ti.mtime = 1700000000 + i
    ti.uid, ti.gid, ti.uname, ti.gname = 1000 + i, 100, f"user{i}", "data"
    tf.addfile(ti, io.BytesIO(data))


def gen(d, n=20):
    rng = np.random.default_rng(18)
    with tarfile.open(os.path.join(d, "shard.tar"), "w", format=tarfile.GNU_FORMAT) as tf:
        dir_info = tarfile.TarInfo("samples")
        dir_info.type = tarfile.DIRTYPE
        dir_info.mode = 0o755
        tf.addfile(dir_info)
        for i in range(n):
            key = f"samples/{i:06d}"
            dt = ["<f4", "<u2", ">i4", "|u1"][i % 4]
            add(tf, key + ".input.npy", npy_bytes(rng.integers(0, 200, size=(1, 3, 4, 6)).astype(dt)), i)
            add(tf, key + ".cls", str(i % 7).encode(), i)
            add(tf, key + ".json", json.dumps({"id": i}).encode(), i)
        add(tf, "../escape.npy", npy_bytes(np.arange(16, dtype=np.uint8).reshape(1, 1, 4, 4)), 99)


def s2d(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, c * 4, h // 2, w // 2)


def check(d, outs):
    bad = 0
    with tarfile.open(os.path.join(d, "shard.tar")) as tin:
        ins = tin.getmembers()
        blobs = {m.name: tin.extractfile(m).read() for m in ins if m.isfile()}
    for out in outs:
        with tarfile.open(os.path.join(d, out)) as tout:
            got = tout.getmembers()
            if [m.name for m in got] != [m.name for m in ins]:
                bad += 1
                print("ORDER/NAMES", out, [m.name for m in got][:5])
                continue
            for a, b in zip(ins, got):
                for f in ("mode", "uid", "gid", "uname", "gname", "mtime", "type"):
                    if getattr(a, f) != getattr(b, f):
                        bad += 1
                        print("FIELD", out, a.name, f, getattr(a, f), getattr(b, f))
                if not a.isfile():
                    continue
                data = tout.extractfile(b).read()
                if a.name.endswith(".npy"):
                    x = np.load(io.BytesIO(blobs[a.name]))
                    y = np.load(io.BytesIO(data))
                    if y.dtype != x.dtype or y.tobytes() != np.ascontiguousarray(s2d(x)).tobytes():
                        bad += 1
                        print("TENSOR", out, a.name)
                elif data != blobs[a.name]:
                    bad += 1
                    print("BYTES", out, a.name)
    print(f"{len(outs)} outputs of {len(ins)} members, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 20)
    else:
        sys.exit(check(sys.argv[2], sys.argv[3:]))
