"""Training data of hspmd-moe-resident-replicas.mlir's layer, 3 steps, in
DIR/NAME.npy: tokens, each token's two distinct experts of 4 (skewed, so
that the plans replicate), gates, and the forecast (each token's own
routing), so that the two micro-steps' plans share some slots."""

import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(11)
steps, tokens = 3, 8
experts = np.stack([
    np.stack([rng.choice(4, size=2, replace=False, p=[0.5, 0.3, 0.1, 0.1])
              for _ in range(tokens)]) for _ in range(steps)]).astype(np.int64)
forecast = np.zeros((steps, tokens, 1, 4), dtype=np.int64)
for s in range(steps):
    for t in range(tokens):
        forecast[s, t, 0, experts[s, t]] += 1
np.save(os.path.join(out, "x.npy"), rng.standard_normal((steps, tokens, 4)))
np.save(os.path.join(out, "experts.npy"), experts)
np.save(os.path.join(out, "gates.npy"), rng.random((steps, tokens, 2)))
np.save(os.path.join(out, "forecast.npy"), forecast)
