#!/usr/bin/env python3
"""Dynamic graph switching on 2 host ranks, measured (not in CI).

The LLaMA-mini (f32) compiled under two strategies on 2 ranks, data
parallel ("dp": the batch split, weights replicated) and Megatron tensor
parallel ("tp": attention and MLP weights split, the batch replicated), at
two sequence lengths, 8 and 16 (a step per strategy and length, as
test/e2e/check_switching.py --lengths builds them). A seeded stream of
batches of mixed lengths (each step's batch at one length) is trained four
ways on the same data, side by side:

  static dp, static tp   every step under one strategy;
  measured               each step under the strategy of least step time at
                         its length as measured on this machine (the median
                         step time per strategy and length of the static
                         runs, first steps excluded; a table, not a fitted
                         model: two lengths);
  alternating            dp and tp in turn (the most switches).

Printed: per strategy and length the median step time; per run its total
step time, its switches' total time and bytes, and the ratio of the best
static run's total to it. On a CPU pair of ranks the strategies differ
little and a switch costs a full exchange of the split weights through
MPI: the figures say what switching costs here, not what it gains on
accelerators (test/bench/step_planner.cpp models that).

    switching_host.py --build BUILD [--steps 24] [--work-dir DIR]
"""

import argparse
import json
import os
import shutil
import statistics
import sys

import numpy as np

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
sys.path.insert(0, os.path.join(root, "test", "e2e"))
from check_layout import run  # noqa: E402
from check_switching import build_module, parse_strategies  # noqa: E402

STRATEGIES = [
    "dp:tokens|targets=<{[0, 1]: [S0:2]}>",
    "tp:l*_wq|l*_wk|l*_wv|l*_w_gate|l*_w_up=<{[0, 1]: [S1:2]}>;"
    "l*_wo|l*_w_down=<{[0, 1]: [S0:2]}>",
]


def train(args, lowered, data, name):
    """The steps of `data` on 2 host ranks: per step (seconds, switch
    seconds, switch bytes, whether the variant changed before it)."""
    text = run([args.run, "--interpret", lowered, "--train", "--target",
                "host", "--ranks", "2", "--steps", str(args.steps), "--data",
                data, "--json", "--work-dir",
                os.path.join(args.work_dir, "host-" + name)])
    steps = []
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        seconds = record["tokens"] / record["tokens_per_s"]
        steps.append((seconds, record.get("switch_s", 0.0),
                      record.get("switch_bytes", 0), "switch_s" in record))
    if len(steps) != args.steps:
        sys.exit(f"error: {name}: {len(steps)} steps of {args.steps}")
    return steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--work-dir", default="/tmp/loom-switching-bench")
    args = ap.parse_args()
    args.opt = os.path.join(args.build, "bin", "loom-opt")
    args.run = os.path.join(args.build, "bin", "loom-run")
    shutil.rmtree(args.work_dir, ignore_errors=True)
    os.makedirs(args.work_dir)
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")

    with open(os.path.join(root, "examples", "llama_mini.mlir")) as f:
        model = f.read()
    lengths_used = [8, 16]
    strategies = parse_strategies(STRATEGIES, model)
    _, text, batch = build_module(model, strategies, "dp", 2, lengths_used)
    forward = os.path.join(args.work_dir, "forward.mlir")
    with open(forward, "w") as f:
        f.write(text)
    stepped = os.path.join(args.work_dir, "step.mlir")
    run([args.opt, forward, "--loom-training-pipeline=optimizer=adamw lr=1e-2",
         "-o", stepped])
    lowered = os.path.join(args.work_dir, "spmd.mlir")
    run([args.opt, stepped, "--loom-partition-pipeline", "-o", lowered])

    rng = np.random.default_rng(3)
    lengths = [int(rng.choice(lengths_used)) for _ in range(args.steps)]
    batches = [rng.integers(0, 64, size=(batch, L)) for L in lengths]

    def folders(name, schedule):
        base = os.path.join(args.work_dir, "data-" + name)
        for n, (tokens, strategy) in enumerate(zip(batches, schedule), 1):
            folder = os.path.join(base, f"step{n}")
            os.makedirs(folder)
            np.save(os.path.join(folder, "tokens.npy"), tokens)
            np.save(os.path.join(folder, "targets.npy"), (7 * tokens + 3) % 64)
            with open(os.path.join(folder, "strategy"), "w") as f:
                f.write(strategy + "\n")
        return base

    runs, schedules = {}, {}
    for name in ("dp", "tp"):
        schedules[name] = [name] * args.steps
        runs[name] = train(args, lowered, folders(name, schedules[name]), name)
    # Cost models from the static runs: the median step time per
    # (strategy, length), the first step excluded (warm-up).
    model_time = {}
    for name in ("dp", "tp"):
        for L in lengths_used:
            times = [runs[name][n][0] for n in range(1, args.steps)
                     if lengths[n] == L]
            model_time[(name, L)] = statistics.median(times) if times else 0
    fitted = [min(("dp", "tp"), key=lambda s: model_time[(s, L)])
              for L in lengths]
    schedules["measured"] = fitted
    runs["measured"] = train(args, lowered, folders("measured", fitted),
                             "measured")
    alternating = ["dp" if n % 2 == 0 else "tp" for n in range(args.steps)]
    schedules["alternating"] = alternating
    runs["alternating"] = train(args, lowered,
                                folders("alternating", alternating),
                                "alternating")

    print(f"LLaMA-mini f32 on 2 host ranks, {args.steps} steps of batches "
          f"[{batch}, L], L in {lengths_used} (seeded: "
          f"{lengths.count(8)} of length 8)")
    for (name, L), seconds in sorted(model_time.items()):
        print(f"  median step time {name} at L={L}: {seconds * 1e3:.2f} ms")
    totals = {name: sum(step[0] + step[1] for step in steps[1:])
              for name, steps in runs.items()}
    best = min(totals["dp"], totals["tp"])
    for name, steps in runs.items():
        switch_s = sum(step[1] for step in steps[1:])
        moved = sum(step[2] for step in steps)
        # (Strategy changes; a change of length under one strategy is a
        # change of program too, of nothing, and not counted.)
        plan = schedules[name]
        switches = sum(1 for n in range(1, len(plan)) if plan[n] != plan[n - 1])
        print(f"  {name:12s} total {totals[name]:.3f} s (steps 2..), switches "
              f"{switches}, {moved} bytes, {switch_s:.3f} s; best static / "
              f"this {best / totals[name]:.3f}")


if __name__ == "__main__":
    main()
