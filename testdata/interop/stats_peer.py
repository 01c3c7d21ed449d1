"""numpy peer for compare's error statistics.

gen DIR: writes pairs of arrays (float32, float64, float16, int64 beyond
2^53, complex64, uint8) with NaN, ±Inf, -0.0 and zeros sprinkled in, and
expected.json: for each pair, numpy's mean, median and quantile(q,
method='linear') of |B - A| over the pairs where both are finite.
check DIR: compares depthspace's --json reports (DIR/got_*.json tolerant,
DIR/got_exact_*.json bit for bit: mean and median only) with them:
median and quantile exactly, the mean to 1e-12 relative (numpy sums
pairwise, depthspace with a compensated sum).
"""
import json
import os
import sys

import numpy as np

Q = 0.9


def finite_abs(a, b):
    a64 = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    b64 = b.astype(np.complex128 if np.iscomplexobj(b) else np.float64)
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        # exact integer differences, as Python ints
        d = np.array([abs(int(x) - int(y)) for x, y in zip(a.ravel(), b.ravel())], dtype=np.float64)
        return d
    mask = np.isfinite(a64) & np.isfinite(b64)
    return np.abs(b64 - a64)[mask]


def gen(d):
    rng = np.random.default_rng(21)
    cases = {}
    for name, dt in (("f4", np.float32), ("f8", np.float64), ("f2", np.float16), ("c8", np.complex64)):
        for n in (1, 2, 7, 1000, 70001):
            a = rng.standard_normal(n).astype(dt)
            b = (a + rng.standard_normal(n).astype(dt) * 1e-2).astype(dt)
            if n >= 7:
                b[rng.integers(0, n, 3)] = a[rng.integers(0, n, 3)]  # some exact matches
                a[rng.integers(0, n, 2)] = 0
                b[rng.integers(0, n, 1)] = -0.0
                a[rng.integers(0, n, 1)] = np.nan
                b[rng.integers(0, n, 1)] = np.inf
            cases[f"{name}_{n}"] = (a, b)
    # Mostly equal: whole batches of equal bytes (with NaN, Inf and zeros
    # in them) between a few differences.
    for name, dt in (("f4", np.float32), ("f2", np.float16)):
        a = rng.standard_normal(70001).astype(dt)
        a[[5, 300, 70000]] = np.nan
        a[[7, 40000]] = np.inf
        a[[9, 1000, 2000]] = 0
        b = a.copy()
        b[[1234, 50000, 69999]] += dt(0.5)
        cases[f"{name}_sparse"] = (a, b)
    big = np.array([2**60 + i for i in range(0, 4000, 3)], dtype=np.int64)
    cases["i8_big"] = (big, big + rng.integers(-5, 5, big.size))
    # The same in Fortran order on one side: the element-by-element path
    # must measure the integers exactly too.
    bigf = big[:1332].reshape(36, 37)
    cases["i8_big_fortran"] = (np.asfortranarray(bigf), bigf + rng.integers(-5, 5, bigf.shape))
    u = rng.integers(0, 256, 50001).astype(np.uint8)
    cases["u1"] = (u, (u + rng.integers(0, 3, u.size)).astype(np.uint8))
    expected = {}
    for k, (a, b) in cases.items():
        np.save(os.path.join(d, f"a_{k}.npy"), a)
        np.save(os.path.join(d, f"b_{k}.npy"), b)
        v = finite_abs(a, b)
        expected[k] = {"mean": float(v.mean()) if v.size else None,
                       "median": float(np.median(v)) if v.size else None,
                       "quantile": float(np.quantile(v, Q, method="linear")) if v.size else None}
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump({"q": Q, "cases": expected}, f)


def check(d):
    exp = json.load(open(os.path.join(d, "expected.json")))
    bad = 0
    reports = 0
    for k, e in exp["cases"].items():
        # got_: tolerant, with the quantile; got_exact_: bit for bit,
        # whose report has the mean and median too.
        for prefix, stats in (("got_", ("median", "quantile")), ("got_exact_", ("median",))):
            got = json.load(open(os.path.join(d, f"{prefix}{k}.json")))
            reports += 1
            g = {"mean": got["mean_abs_diff"], "median": got["median_abs_diff"], "quantile": got.get("quantile_abs_diff")}
            for stat in stats:
                if g[stat] != e[stat]:
                    bad += 1
                    print("DIFFERENT", prefix + k, stat, g[stat], e[stat])
            if e["mean"] is None or g["mean"] is None or abs(g["mean"] - e["mean"]) > 1e-12 * abs(e["mean"]):
                bad += 1
                print("DIFFERENT", prefix + k, "mean", g["mean"], e["mean"])
    print(f"{len(exp['cases'])} pairs, {reports} reports, {bad} statistics different")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    {"gen": gen, "check": check}[sys.argv[1]](sys.argv[2])
