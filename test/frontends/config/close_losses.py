"""Compares two `loom-run --train --json` logs: the same steps, every loss
finite and within a relative tolerance (default 1e-4, for f32 runs whose
kernels sum in different orders); prints the largest difference. A NaN or
an Inf on either side fails."""
import json
import math
import sys


def losses(path):
    with open(path) as f:
        return [(o["step"], float(o["loss"]))
                for o in (json.loads(l) for l in f if l.strip().startswith("{"))]


a, b = losses(sys.argv[1]), losses(sys.argv[2])
tolerance = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-4
if not a or [s for s, _ in a] != [s for s, _ in b]:
    sys.exit(f"the runs have different steps: {a} vs {b}")
bad = [(s, x, y) for (s, x), (_, y) in zip(a, b)
       if not (math.isfinite(x) and math.isfinite(y))]
if bad:
    sys.exit(f"non-finite losses (step, first, second): {bad[:3]}")
worst = max(abs(x - y) / abs(y) if y else abs(x - y)
            for (_, x), (_, y) in zip(a, b))
if not worst <= tolerance:
    sys.exit(f"losses differ by {worst:.2e} (relative) > {tolerance:.0e}")
print(f"{len(a)} losses agree within {tolerance:.0e}")
