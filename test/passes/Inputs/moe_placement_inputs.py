"""Inputs of hspmd-moe-placement.mlir's layer, as PREFIX.NAME.npy: tokens,
random top-2 choices of 4 experts and gates, a forecast unrelated to them
that makes the plan replicate expert 0, and two expert weights."""

import sys

import numpy as np

prefix = sys.argv[1]
rng = np.random.default_rng(7)
values = {
    "x": rng.standard_normal((8, 16)),
    "e": rng.integers(0, 4, (8, 2)),
    "g": rng.random((8, 2)),
    "f": np.array([[[30, 1, 0, 1]]]),
    "w1": rng.standard_normal((4, 16, 12)),
    "w2": rng.standard_normal((4, 16, 12)),
}
for name, value in values.items():
    np.save(f"{prefix}.{name}.npy", value)
