"""onnx and numpy as independent peers for depthspace's ONNX and npz support.

  onnx_peer.py gen DIR     write ONNX TensorProto inputs with Debian's python3-onnx
                           (numpy_helper.from_array: raw_data; helper.make_tensor
                           with raw=False: the typed fields), npz archives with
                           numpy (savez and savez_compressed), and DIR/jobs.json:
                           the depthspace runs to make
  onnx_peer.py check DIR   load every output with numpy_helper.to_array or
                           np.load and compare it with numpy's own
                           reshape/transpose of the input

Run by internal/cli/interop8_test.go with /usr/bin/python3.
"""
import json
import os
import sys
import zipfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_peer import random_array, reference, shapes  # noqa: E402

# numpy dtype -> ONNX data_type, every fixed-size type both have.
ONNX_TYPES = {
    "<f4": TensorProto.FLOAT, "<f8": TensorProto.DOUBLE, "<f2": TensorProto.FLOAT16,
    "|i1": TensorProto.INT8, "<i2": TensorProto.INT16, "<i4": TensorProto.INT32, "<i8": TensorProto.INT64,
    "|u1": TensorProto.UINT8, "<u2": TensorProto.UINT16, "<u4": TensorProto.UINT32, "<u8": TensorProto.UINT64,
    "|b1": TensorProto.BOOL, "<c8": TensorProto.COMPLEX64, "<c16": TensorProto.COMPLEX128,
}
# onnx 1.12's to_array cannot read complex values from the typed fields.
TYPED_OK = [d for d in ONNX_TYPES if d[1] != "c"]


def finite(descr, shape):
    """Random values without NaN payloads (to_array/make_tensor may not keep them)."""
    arr = random_array(descr, shape)
    if arr.dtype.kind in "fc":
        arr = np.random.default_rng(7).standard_normal(arr.shape).astype(arr.dtype)
    return arr


def gen(d):
    jobs = []

    def add(kind, name, op, order, layout, blocks, out_ext):
        block = "x".join(map(str, blocks))
        jobs.append(dict(kind=kind, input=name, output=f"{name}.{op}.{order}.{layout}.{block}.out{out_ext}",
                         op=op, order=order, layout=layout, block=block))

    for descr in ONNX_TYPES:
        tag = descr.replace("<", "le").replace("|", "")
        for op in ("s2d", "d2s"):
            for layout in ("nchw", "nhwc"):
                arr = finite(descr, shapes(op, layout, 2, [2, 2]))
                # raw_data, as numpy_helper.from_array writes it
                name = f"raw_{tag}_{op}_{layout}.pb"
                with open(os.path.join(d, name), "wb") as f:
                    f.write(numpy_helper.from_array(arr, "x").SerializeToString())
                for order in ("dcr", "crd"):
                    add("onnx", name, op, order, layout, [2, 2], ".pb")
                if descr in TYPED_OK:
                    # the typed fields (float_data, int32_data, ...), as
                    # helper.make_tensor writes them
                    name = f"typed_{tag}_{op}_{layout}.pb"
                    vals = arr.flatten()  # make_tensor stores float16 as its bits
                    t = helper.make_tensor("x", ONNX_TYPES[descr], arr.shape, vals, raw=False)
                    with open(os.path.join(d, name), "wb") as f:
                        f.write(t.SerializeToString())
                    add("onnx", name, op, "dcr", layout, [2, 2], ".pb")
    # bfloat16 from the typed field (int32_data holds the bits).
    vals = np.random.default_rng(3).standard_normal(96).astype(np.float32)
    t = helper.make_tensor("bf", TensorProto.BFLOAT16, [2, 4, 4, 3], vals, raw=False)
    with open(os.path.join(d, "typed_bf16.pb"), "wb") as f:
        f.write(t.SerializeToString())
    add("onnx", "typed_bf16.pb", "s2d", "crd", "nhwc", [2, 2], ".pb")
    # An .npy output from an .pb input.
    add("onnx", "raw_lef4_s2d_nchw.pb", "s2d", "dcr", "nchw", [2, 2], ".npy")

    # npz: several members of different dtypes and shapes, stored and
    # deflated; every member must be d2s-able with block 2.
    members = {
        "image": finite("<f4", [1, 8, 2, 3]),
        "mask": random_array("|u1", [2, 4, 3, 3]),
        "big_endian": random_array(">i4", [1, 12, 1, 2]),
        "text": random_array("|S3", [1, 4, 2, 2]),
    }
    np.savez(os.path.join(d, "plain.npz"), **members)
    np.savez_compressed(os.path.join(d, "packed.npz"), **members)
    for name in ("plain.npz", "packed.npz"):
        for order in ("dcr", "crd"):
            add("npz", name, "d2s", order, "nchw", [2, 2], ".npz")
    with open(os.path.join(d, "jobs.json"), "w") as f:
        json.dump(jobs, f, indent=1)


def load_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t, numpy_helper.to_array(t)


def check(d):
    with open(os.path.join(d, "jobs.json")) as f:
        jobs = json.load(f)
    bad = 0
    for j in jobs:
        blocks = [int(b) for b in j["block"].split("x")]
        problems = []
        inp, out = os.path.join(d, j["input"]), os.path.join(d, j["output"])
        if j["kind"] == "onnx":
            tin, x = load_pb(inp)
            want = reference(x, j["op"], j["order"], j["layout"], blocks)
            if out.endswith(".pb"):
                tout, got = load_pb(out)
                if tout.data_type != tin.data_type:
                    problems.append(f"data_type {tout.data_type} != input's {tin.data_type}")
                if not tout.HasField("raw_data"):
                    problems.append("output has no raw_data")
                if tout.name != tin.name:
                    problems.append(f"name {tout.name!r} != {tin.name!r}")
            else:
                got = np.load(out)
            if got.shape != want.shape:
                problems.append(f"shape {got.shape} != numpy's {want.shape}")
            elif np.ascontiguousarray(want).tobytes() != np.ascontiguousarray(got).tobytes():
                problems.append("values differ from numpy's reshape/transpose")
        else:
            xs, ys = np.load(inp), np.load(out)
            if sorted(xs.files) != sorted(ys.files):
                problems.append(f"members {ys.files} != input's {xs.files}")
            for k in xs.files:
                if k not in ys.files:
                    continue
                want = reference(xs[k], j["op"], j["order"], j["layout"], blocks)
                got = ys[k]
                if got.dtype != want.dtype or got.shape != want.shape or want.tobytes() != got.tobytes():
                    problems.append(f"member {k}: {got.dtype}{got.shape} differs from numpy's {want.dtype}{want.shape}")
            kinds = {i.compress_type for i in zipfile.ZipFile(out).infolist()}
            want_kind = zipfile.ZIP_DEFLATED if "packed" in j["input"] else zipfile.ZIP_STORED
            if kinds != {want_kind}:
                problems.append(f"compression {kinds} != {{{want_kind}}} of the input")
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
