"""Polygraphy's JSON encoding, written independently of depthspace from
NVIDIA TensorRT tools/Polygraphy/polygraphy/json/serde.py and
polygraphy/comparator/struct.py, with numpy, base64 and json only.

  pgpeer.py make DIR     writes the test files and DIR/manifest.json
                         (expected members: name, descr, shape, fortran,
                         the data bytes in the file's order, hex)
  pgpeer.py read FILE    loads FILE as Polygraphy's load_json would and
                         prints its structure as JSON; also checks the
                         file is exactly json.dumps(indent=4) of itself and
                         each array exactly np.save's bytes.
"""
import base64
import io
import json
import os
import sys

import numpy as np

TAB = " " * 4  # polygraphy.constants.TAB
LEGACY = "__polygraphy_encoded_"  # serde.legacy_str_from_type
LEGACY_MARKER = "polygraphy_serialized_json_type"  # constants.LEGACY_TYPE_MARKER


# --- encoder (serde.py: Encoder.register(np.ndarray), struct.py) ---
def enc_array(a):
    f = io.BytesIO()
    np.save(f, a, allow_pickle=False)
    return {"array": base64.b64encode(f.getvalue()).decode(), "polygraphy_class": "ndarray"}


def enc_output(a, wrap):
    if wrap is None:
        return enc_array(a)
    return {"values": enc_array(a), "polygraphy_class": wrap}


def iteration(outs, runtime, runner, wrap="LazyArray"):
    return {
        "outputs": {k: enc_output(v, wrap) for k, v in outs},
        "runtime": runtime,
        "runner_name": runner,
        "polygraphy_class": "IterationResult",
    }


def run_results(runners):
    return {"lst": [[name, its] for name, its in runners], "polygraphy_class": "RunResults"}


def dump(obj):
    return json.dumps(obj, indent=TAB)  # serde.to_json


# --- test data ---
rng = np.random.default_rng(26)
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128", ">f4", ">i8", "S3", "<U2", "V2"]


def arr(dt, shape=(2, 3, 4)):
    dt = np.dtype(dt)
    n = int(np.prod(shape))
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    return np.frombuffer(rng.bytes(n * dt.itemsize), dtype=dt).reshape(shape).copy()


def member(name, a):
    fortran = bool(a.flags.f_contiguous and not a.flags.c_contiguous)
    return {"name": name, "descr": np.lib.format.dtype_to_descr(a.dtype), "shape": list(a.shape),
            "fortran": fortran, "hex": a.tobytes(order="F" if fortran else "C").hex()}


def make(d):
    manifest = {}

    def write(fname, obj, members):
        with open(os.path.join(d, fname), "w") as f:
            f.write(dump(obj))
        manifest[fname] = members

    # Every dtype np.save writes, one runner, one iteration: names bare.
    outs = [("out_" + dt.replace(">", "be").replace("<", "le"), arr(dt)) for dt in DTYPES]
    outs += [("scalar", np.float32(2.5).reshape(())), ("empty", np.zeros((0, 3), np.int16)),
             ("fortran_f4", np.asfortranarray(arr("float32", (3, 5, 2)))),
             ("fortran_c16", np.asfortranarray(arr("complex128", (4, 3)))),
             ("big", arr("float32", (70000,)))]
    write("dtypes.json", run_results([("onnxrt-runner-N0-07/07/26-13:42:10",
                                       [iteration(outs, 0.0123456789, "onnxrt-runner-N0-07/07/26-13:42:10")])]),
          [member(n, a) for n, a in outs])

    # Several runners, several iterations: RUNNER/ITER/name.
    runners, members = [], []
    for r in ["onnxrt-runner-N0-07/07/26-13:42:10", "trt-runner-N0-07/07/26-13:42:10"]:
        its = []
        for i in range(2):
            o = [("logits", arr("float32", (1, 10))), ("probs", arr("float16", (1, 10)))]
            its.append(iteration(o, 0.5 + i, r))
            members += [member(f"{r}/{i}/{n}", a) for n, a in o]
        runners.append((r, its))
    write("runners.json", run_results(runners), members)

    # One runner, three iterations: ITER/name.
    its, members = [], []
    for i in range(3):
        o = [("y", arr("int32", (2, 2)))]
        its.append(iteration(o, None if i == 1 else 1e-3, "custom_runner"))
        members += [member(f"{i}/y", a) for n, a in o]
    write("iterations.json", run_results([("custom_runner", its)]), members)

    # Two runners, one iteration each: RUNNER/name.
    runners, members = [], []
    for r in ["a", "b"]:
        o = [("z", arr("uint8", (4,)))]
        runners.append((r, [iteration(o, 0.0, r)]))
        members += [member(f"{r}/z", a) for n, a in o]
    write("two_runners.json", run_results(runners), members)

    # Older Polygraphy: the LazyNumpyArray alias, and outputs given
    # directly as arrays.
    o = [("x", arr("float64", (3,)))]
    write("lazynumpy.json", run_results([("r", [iteration(o, 1.0, "r", wrap="LazyNumpyArray")])]),
          [member("x", o[0][1])])
    o = [("x", arr("int64", (2, 1))), ("w", np.asfortranarray(arr("int16", (2, 3))))]
    write("direct.json", run_results([("r", [iteration(o, 1.0, "r", wrap=None)])]),
          [member(n, a) for n, a in o])

    # Input lists (--save-inputs, data to-input): one dict per iteration.
    feeds = [[("input_ids", arr("int64", (1, 8))), ("mask", arr("bool", (1, 8)))] for _ in range(2)]
    write("inputs.json", [{n: enc_array(a) for n, a in f} for f in feeds],
          [member(f"{i}/{n}", a) for i, f in enumerate(feeds) for n, a in f])
    write("inputs1.json", [{n: enc_array(a) for n, a in feeds[0]}],
          [member(n, a) for n, a in feeds[0]])

    # Polygraphy 0.29 and older: class markers "__polygraphy_encoded_CLASS":
    # "polygraphy_serialized_json_type" and arrays as np.savez's npz bytes
    # taken as latin-1 text (serde.py of TensorRT 7.2's Polygraphy).
    def legacy_array(a):
        f = io.BytesIO()
        np.savez(f, a)
        return {"array": f.getvalue().decode("latin-1"), LEGACY + "ndarray": LEGACY_MARKER}

    o = [("a", arr("float32", (2, 3))), ("b", np.asfortranarray(arr("int16", (3, 2)))), ("c", arr("bool", (5,)))]
    it = {"outputs": {n: {"values": legacy_array(a), LEGACY + "LazyNumpyArray": LEGACY_MARKER} for n, a in o},
          "runtime": 0.25, "runner_name": "r", LEGACY + "IterationResult": LEGACY_MARKER}
    write("legacy.json", {"lst": [["r", [it]]], LEGACY + "RunResults": LEGACY_MARKER},
          [member(n, a) for n, a in o])
    # An npy file as latin-1 text, which serde.py's fallback reads too.
    a = arr("uint16", (4, 2))
    f = io.BytesIO()
    np.save(f, a)
    write("latin1_npy.json", [{"x": {"array": f.getvalue().decode("latin-1"), "polygraphy_class": "ndarray"}}],
          [member("x", a)])

    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(manifest, f)


# --- reader (serde.py: Decoder, from_json with object_pairs_hook) ---
class Lazy:
    def __init__(self, cls, arr):
        self.cls, self.arr = cls, arr


def hook(pairs):
    d = dict(pairs)
    cls = d.pop("polygraphy_class", None)
    for k in list(d):  # the legacy marker, checked first as Decoder does
        if k.startswith(LEGACY) and d[k] == LEGACY_MARKER:
            cls = k[len(LEGACY):]
            del d[k]
    if cls == "ndarray":
        try:
            raw = base64.b64decode(d["array"].encode(), validate=True)
            a = np.load(io.BytesIO(raw), allow_pickle=False)
            # np.save of what was read gives the same bytes: the preamble is numpy's.
            assert enc_array(a)["array"] == d["array"], "npy preamble differs from np.save's"
        except Exception:
            a = np.load(io.BytesIO(d["array"].encode("latin-1")), allow_pickle=False)
            if not isinstance(a, np.ndarray):
                a = list(a.values())[0]
        return a
    if cls in ("LazyArray", "LazyNumpyArray"):
        return Lazy(cls, d["values"])
    if cls == "IterationResult":
        return {"iteration": True, "outputs": d["outputs"], "runtime": d["runtime"], "runner_name": d["runner_name"]}
    if cls == "RunResults":
        return {"runresults": [tuple(x) for x in d["lst"]]}
    assert cls is None, cls
    return d


def summary_outputs(outs):
    res = []
    for name, v in outs.items():
        wrap = None
        if isinstance(v, Lazy):
            wrap, v = v.cls, v.arr
        assert isinstance(v, np.ndarray)
        res.append({"name": name, "wrapper": wrap, "descr": np.lib.format.dtype_to_descr(v.dtype),
                    "shape": list(v.shape), "hex": v.tobytes().hex()})
    return res


def read(path):
    text = open(path, encoding="utf-8").read()
    # Exactly what json.dumps(indent=4) writes of the same structure.
    plain = json.loads(text)
    assert dump(plain) == text, "not json.dumps(indent=4) layout"
    obj = json.loads(text, object_pairs_hook=hook)
    if isinstance(obj, list):
        out = {"kind": "inputs", "iterations": [summary_outputs(f) for f in obj]}
    else:
        out = {"kind": "RunResults", "runners": [
            {"name": name, "iterations": [
                {"outputs": summary_outputs(it["outputs"]), "runtime": it["runtime"], "runner_name": it["runner_name"]}
                for it in its]}
            for name, its in obj["runresults"]]}
    print(json.dumps(out))


if __name__ == "__main__":
    {"make": make, "read": read}[sys.argv[1]](sys.argv[2])
