#!/usr/bin/env python3
"""Compares the outputs of two runs of the program driver
(runtime/driver/Driver.h): DIR/loss.bin (f64 per step) and every
DIR/arg<i>.bin both wrote, as raw arrays of --dtype.

    compare_runs.py A B --dtype f64 [--tolerance T]

Each pair must have the same size and a norm-wise relative difference
|a - b| / |b| of at most T (default 1e-12; both all-zero passes); a NaN or
Inf in either fails. Prints one line and exits 1 on a failure.
"""

import argparse
import os
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--dtype", default="f64", choices=["f32", "f64"])
    ap.add_argument("--tolerance", type=float, default=1e-12)
    args = ap.parse_args()
    dtype = np.float64 if args.dtype == "f64" else np.float32
    names = sorted(n for n in os.listdir(args.b) if n.endswith(".bin"))
    if "loss.bin" not in names:
        print(f"FAIL: {args.b} has no loss.bin")
        return 1
    worst, compared = 0.0, 0
    for name in names:
        path = os.path.join(args.a, name)
        if not os.path.exists(path):
            print(f"FAIL: {path} is missing")
            return 1
        kind = np.float64 if name == "loss.bin" else dtype
        a = np.fromfile(path, dtype=kind)
        b = np.fromfile(os.path.join(args.b, name), dtype=kind)
        if a.shape != b.shape:
            print(f"FAIL: {name}: {a.size} against {b.size} elements")
            return 1
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            print(f"FAIL: {name} holds NaN or Inf")
            return 1
        norm = np.linalg.norm(b)
        diff = np.linalg.norm(a - b)
        error = diff / norm if norm > 0 else diff
        worst = max(worst, error)
        compared += 1
    verdict = "ok" if worst <= args.tolerance else "FAIL"
    print(f"{compared} arrays, worst norm-wise relative difference "
          f"{worst:.2e} (bound {args.tolerance:g}): {verdict}")
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
