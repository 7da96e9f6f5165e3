"""Writes a data folder for the bundled MLP example (loom-run --data, a run
configuration's `data`): x.npy, K batches of 64 x 128 f32 in [-1, 1), and
labels.npy, their classes in [0, 64); with --bad, labels of the wrong
shape."""
import os
import sys

import numpy as np

out, steps = sys.argv[1], int(sys.argv[2])
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
x = rng.uniform(-1, 1, (steps, 64, 128)).astype(np.float32)
labels = rng.integers(0, 64, (steps, 64)).astype(np.int64)
if "--bad" in sys.argv:
    labels = labels[:, :32]
np.save(os.path.join(out, "x.npy"), x)
np.save(os.path.join(out, "labels.npy"), labels)
