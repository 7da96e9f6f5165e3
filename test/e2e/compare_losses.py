#!/usr/bin/env python3
"""Compares the per-step losses of two loom-run --train logs.

    compare_losses.py REFERENCE RUN [--tolerance 1e-12]

Every step of REFERENCE must appear in RUN with a loss within --tolerance
relative error (NaN or Inf on either side fails); prints the worst error
and "ok" or "FAIL", and exits non-zero on failure.
"""

import argparse
import math
import re
import sys


def losses(path):
    with open(path) as f:
        return {int(step): float(loss) for step, loss in
                re.findall(r"^step (\d+) loss (\S+)", f.read(), re.M)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("run")
    ap.add_argument("--tolerance", type=float, default=1e-12)
    args = ap.parse_args()
    ref, got = losses(args.reference), losses(args.run)
    worst, ok = 0.0, bool(ref) and set(ref) == set(got)
    for step, value in ref.items():
        other = got.get(step, float("nan"))
        if not (math.isfinite(value) and math.isfinite(other)):
            ok, worst = False, float("inf")
            continue
        error = abs(other - value) / max(abs(value), 1e-300)
        worst = max(worst, error)
    ok = ok and worst <= args.tolerance
    print(f"{len(ref)} steps: worst relative loss error {worst:.1e} (bound "
          f"{args.tolerance:.0e}): {'ok' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
