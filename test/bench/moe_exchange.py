#!/usr/bin/env python3
"""Benchmark: expert parallelism's sparse exchange against the dense one.

The MoE GPT-mini (examples/moe_gpt_mini.mlir's model: 4 experts, top-2;
and a wider variant: 8 experts, top-2, width 128, 64 tokens a sequence),
its tokens and expert weights split over 2 MPI ranks (expert parallel,
data parallel outside), is trained with AdamW in f32 on the host target
twice in the same run: partitioned with `moe-sparse=false` (the dense
reduce-scatter and all-to-alls propagation derives) and with the default
(hspmd-moe-sparse-exchange: the routed rows alone, both ways). Printed per
size: the bytes rank 0 sends a step by collective kind (the runtime's
counters over K steps, divided by K), the training throughput (tokens per
second, the median over steps 2..K) and the ratios sparse / dense.

    test/bench/moe_exchange.py [--build DIR] [--steps K] [--sizes mini,wide]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "examples"))
import moe_gpt_mini_reference as moe  # noqa: E402

SIZES = {
    "mini": moe.Config(),
    "wide": moe.Config(batch=8, seq=64, vocab=256, width=128, heads=4,
                       layers=2, ffn=512, experts=8, topk=2),
}
RANKS = 2


def check(command):
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(command[:4])} ... failed:\n"
                 f"{(proc.stdout + proc.stderr)[-3000:]}")
    return proc.stdout


def model(cfg):
    """The forward function with expert parallel layouts on its tokens,
    targets and expert weights (the rest duplicated by propagation)."""
    split = "#hspmd.union<{[0, 1]: [S0:2]}>"
    text = moe.module_text(cfg, "f32")
    names = ["tokens", "targets"] + [f"l{i}_w{j}" for i in range(cfg.layers)
                                     for j in (1, 2)]
    for name in names:
        text, n = re.subn(rf"(%{name}: tensor<[^>]*>) {{(nn\.\w+)}}",
                          rf"\1 {{\2, hspmd.layout = {split}}}", text)
        if n != 1:
            sys.exit(f"error: no argument %{name} in the model")
    return text


def run(build, work, cfg, sparse, steps):
    opt = os.path.join(build, "bin", "loom-opt")
    loom_run = os.path.join(build, "bin", "loom-run")
    tag = "sparse" if sparse else "dense"
    forward = os.path.join(work, "forward.mlir")
    with open(forward, "w") as f:
        f.write(model(cfg))
    step = os.path.join(work, "step.mlir")
    check([opt, forward, "--loom-training-pipeline=optimizer=adamw lr=1e-3",
           "-o", step])
    spmd = os.path.join(work, f"{tag}.mlir")
    check([opt, step, "--loom-partition-pipeline=moe-sparse="
           + ("true" if sparse else "false"), "-o", spmd])
    out = check([loom_run, "--interpret", spmd, "--train", "--target", "host",
                 "--ranks", str(RANKS), "--global-entry",
                 f"{moe.NAME}_train_step", "--steps", str(steps), "--vocab",
                 str(cfg.vocab), "--work-dir", os.path.join(work, tag),
                 "--comm-stats"])
    rates = [float(r) for r in re.findall(r"tokens/s (\S+)", out)]
    losses = [float(v) for v in re.findall(r"^step \d+ loss (\S+)", out, re.M)]
    sent = {}
    for kind, calls, nbytes in re.findall(
            r"^rank 0 (\w+): calls (\d+), bytes sent (\d+)", out, re.M):
        sent[kind] = int(nbytes) // steps
    return statistics.median(rates[1:] or rates), sent, losses


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build-release"))
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--sizes", default="mini,wide")
    args = ap.parse_args()
    for size in args.sizes.split(","):
        cfg = SIZES[size]
        with tempfile.TemporaryDirectory() as work:
            dense_rate, dense, dense_loss = run(args.build, work, cfg, False,
                                               args.steps)
            sparse_rate, sparse, sparse_loss = run(args.build, work, cfg, True,
                                                   args.steps)
        worst = max(abs(a - b) / abs(b) for a, b in zip(sparse_loss,
                                                         dense_loss))
        print(f"{size}: {cfg.describe()}, expert parallel on {RANKS} ranks, "
              f"f32, {args.steps} steps (losses of the two within "
              f"{worst:.1e} relative)")
        print(f"  {'kind':<24}{'dense B/step':>14}{'sparse B/step':>15}")
        for kind in sorted(set(dense) | set(sparse)):
            print(f"  {kind:<24}{dense.get(kind, 0):>14}"
                  f"{sparse.get(kind, 0):>15}")
        total_d, total_s = sum(dense.values()), sum(sparse.values())
        print(f"  {'all':<24}{total_d:>14}{total_s:>15}   sparse / dense "
              f"{total_s / total_d:.3f}")
        print(f"  tokens/s: dense {dense_rate:.0f}, sparse {sparse_rate:.0f},"
              f" sparse / dense {sparse_rate / dense_rate:.2f}")


if __name__ == "__main__":
    main()
