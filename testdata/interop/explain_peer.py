"""Runs the recipes `depthspace explain` prints, in numpy (and einops when
it is installed), on the inputs depthspace transformed.

  explain_peer.py check DIR   for each job of DIR/jobs.json: x = np.load(input),
                              y = the printed numpy expression (and the einops
                              call, and for space-to-depth the slicing),
                              compared byte for byte with np.load(output),
                              depthspace's own result

Run by internal/cli/interop8_test.go with /usr/bin/python3.
"""
import json
import os
import sys

import numpy as np

try:
    from einops import rearrange
except ImportError:  # Debian has no einops package; the Go tests check that spelling
    rearrange = None


def check(d):
    with open(os.path.join(d, "jobs.json")) as f:
        jobs = json.load(f)
    bad = 0
    for j in jobs:
        x = np.load(os.path.join(d, j["input"]))
        want = np.load(os.path.join(d, j["output"]))
        problems = []
        spellings = [("numpy", j["numpy"])]
        if rearrange is not None and j["einops"]:
            spellings.append(("einops", j["einops"]))
        if j.get("slicing"):
            spellings.append(("slicing", j["slicing"].removeprefix("y = ")))
        for name, expr in spellings:
            y = eval(expr, {"x": x, "np": np, "rearrange": rearrange})
            if y.shape != want.shape:
                problems.append(f"{name}: shape {y.shape} != depthspace's {want.shape}")
            elif np.ascontiguousarray(y).tobytes() != want.tobytes():
                problems.append(f"{name}: bytes differ from depthspace's")
        if problems:
            bad += 1
            print(f"FAIL {j['input']} {j['args']}: {'; '.join(problems)}")
    print(f"{len(jobs) - bad} passed, {bad} failed" + ("" if rearrange else " (einops not installed: numpy only)"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(check(sys.argv[2]))
