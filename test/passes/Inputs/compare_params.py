"""Compares the param_K.npy files of two loom-run --train output folders:
prints each one's norm-wise relative error and fails above TOL, on a
missing file, or on NaN/Inf.

    compare_params.py DIR DIR_REFERENCE TOL
"""

import os
import sys

import numpy as np

got, want, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
k = 0
while os.path.exists(os.path.join(want, f"param_{k}.npy")):
    a = np.load(os.path.join(got, f"param_{k}.npy"))
    b = np.load(os.path.join(want, f"param_{k}.npy"))
    error = float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))
    print(f"param_{k}: norm-wise relative error {error:.2e} (bound {tol:.0e})")
    # `not x <= y`: NaN fails.
    if a.shape != b.shape or not np.all(np.isfinite(a)) or not error <= tol:
        sys.exit(f"FAIL: param_{k} differs")
    k += 1
if k == 0:
    sys.exit(f"FAIL: no param_0.npy in {want}")
