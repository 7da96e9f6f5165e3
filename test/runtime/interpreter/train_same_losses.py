"""Compares two `loom-run --train --json` logs: the same steps with
bit-identical, finite loss values (tokens/s is ignored)."""
import json
import math
import sys


def losses(path):
    with open(path) as f:
        return [(o["step"], float(o["loss"]))
                for o in (json.loads(l) for l in f if l.strip())]


a, b = losses(sys.argv[1]), losses(sys.argv[2])
if not a:
    sys.exit("no steps")
if not all(math.isfinite(v) for _, v in a + b):
    sys.exit("non-finite losses")
if [(s, repr(v)) for s, v in a] != [(s, repr(v)) for s, v in b]:
    sys.exit(f"the runs differ: {a[:3]} ... vs {b[:3]} ...")
print(f"{len(a)} identical losses")
