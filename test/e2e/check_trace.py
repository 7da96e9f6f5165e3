#!/usr/bin/env python3
"""Checks a Chrome trace from loom-run --trace: valid JSON, one named
process per rank, and for every rank complete ("X") spans of each step
phase on the compute thread (0) and of its collectives on the
communication thread (1), with non-negative durations. Prints, per rank,
the phases and collective kinds and how many spans of each.

    check_trace.py TRACE.json --ranks N --steps K
"""
import argparse
import collections
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    args = ap.parse_args()
    with open(args.trace) as f:
        events = json.load(f)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "process_name"}
    if sorted(names) != list(range(args.ranks)):
        sys.exit(f"FAIL: processes {sorted(names)}, expected 0..{args.ranks - 1}")
    spans = collections.defaultdict(collections.Counter)
    for e in events:
        if e.get("ph") != "X":
            continue
        if e["dur"] < 0:
            sys.exit(f"FAIL: negative duration in {e}")
        spans[(e["pid"], e["tid"])][e["name"]] += 1
    for rank in range(args.ranks):
        phases = spans[(rank, 0)]
        if not phases or any(n != args.steps for n in phases.values()):
            sys.exit(f"FAIL: rank {rank} phases {dict(phases)}, expected each "
                     f"{args.steps} times")
        comm = spans[(rank, 1)]
        print(f"rank {rank} ({names[rank]}): phases "
              + ", ".join(f"{k} {v}" for k, v in sorted(phases.items()))
              + "; collectives "
              + ", ".join(f"{k} {v}" for k, v in sorted(comm.items())))


if __name__ == "__main__":
    main()
