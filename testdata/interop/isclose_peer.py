"""numpy as the peer for depthspace compare's rules.

  isclose_peer.py DIR   for every case in DIR/cases.json, load the two .npy
                        files and save numpy's verdict per element (True:
                        the pair counts as equal) to the case's output file

A case's mode is
  isclose  numpy.isclose(b, a, rtol, atol, equal_nan=True): a, the first
           file, is the reference (numpy's second argument)
  upcast   the same on both arrays converted to float64 (complex128 for
           complex): the rule depthspace evaluates for float16/float32 data
  bits     the same bytes, element by element (both files are written in
           the same byte order)
Tolerances are strings ("1e-05", "+Inf"): JSON has no infinity.

Run by internal/compare/isclose_test.go with Debian's /usr/bin/python3.
"""
import json
import os
import sys

import numpy as np


def verdict(case, a, b):
    mode = case["mode"]
    if mode == "bits":
        n = a.size
        ra = np.frombuffer(a.tobytes(), dtype=np.uint8).reshape(n, a.dtype.itemsize)
        rb = np.frombuffer(b.tobytes(), dtype=np.uint8).reshape(n, b.dtype.itemsize)
        return (ra == rb).all(axis=1)
    if mode == "upcast":
        wide = np.complex128 if (a.dtype.kind == "c" or b.dtype.kind == "c") else np.float64
        a, b = a.astype(wide), b.astype(wide)
    with np.errstate(all="ignore"):
        return np.isclose(b, a, rtol=float(case["rtol"]), atol=float(case["atol"]), equal_nan=True)


def main(d):
    with open(os.path.join(d, "cases.json")) as f:
        cases = json.load(f)
    for case in cases:
        a = np.load(os.path.join(d, case["a"]))
        b = np.load(os.path.join(d, case["b"]))
        res = np.asarray(verdict(case, a, b), dtype=np.bool_).reshape(a.shape)
        np.save(os.path.join(d, case["out"]), res)
    print("numpy", np.__version__, len(cases), "cases")


if __name__ == "__main__":
    main(sys.argv[1])
