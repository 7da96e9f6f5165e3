#!/usr/bin/env python3
"""Benchmark: compile time of the partitioning passes against the number of
blocks and the number of devices.

For a chain of N transformer blocks (the GPT-mini's block: causal attention
and a GELU MLP, Megatron-annotated: Q, K, V, W1 by columns, Wo, W2, b1 by
rows) it builds the AdamW training step (`--loom-training-pipeline`, not
timed) and then times the partitioning passes (`--loom-partition-pipeline`:
propagate, insert and lower reshards, specialise, bucket; from
`--mlir-timing`), on

  * 4 devices: data parallel 2 x tensor parallel 2;
  * one group of 1024 devices: data parallel 256 x tensor parallel 4 (the
    batch is 256, so every device has one sequence).

Growth in N should be linear (seconds per block flat) and growth in devices
flat (the 1024-device step compiles in about the time of the 4-device one).

    test/bench/compile_time.py [--build DIR] [--blocks 2,167,1000] [--repeat R]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "examples"))
import gpt_mini_reference as ref  # noqa: E402

PASSES = ["--loom-partition-pipeline"]
COLUMNS = ("wq", "wk", "wv", "w1")
ROWS = ("wo", "w2", "b1")


def apply_layouts(text, layouts):
    """Attach `hspmd.layout = LAYOUT` to every forward argument %ARG in
    `layouts` (ARG -> layout text)."""
    for arg, layout in layouts.items():
        text = re.sub(r"(%" + arg + r": tensor<[^>]*> \{)",
                      r"\g<1>hspmd.layout = " + layout + ", ", text)
    return text


def megatron_layouts(cfg, data, col, row):
    """The tokens and targets laid out as `data` (none if None), every
    block's Q, K, V, W1 as `col` and Wo, W2, b1 as `row`; the other
    parameters (norms, biases b2, embeddings, head) get no layout."""
    layouts = {}
    if data:
        layouts["tokens"] = layouts["targets"] = data
    for layer in range(cfg.layers):
        for name in COLUMNS:
            layouts[f"l{layer}_{name}"] = col
        for name in ROWS:
            layouts[f"l{layer}_{name}"] = row
    return layouts


def annotate(text, cfg, dp, tp):
    devices = dp * tp
    group = "[" + ", ".join(str(d) for d in range(devices)) + "]"

    def union(states):
        return f"#hspmd.union<{{{group}: [{states}]}}>"
    data = union(f"S0:{dp}, D:{tp}") if dp > 1 else None
    col = union(f"D:{dp}, S1:{tp}") if dp > 1 else union(f"S1:{tp}")
    row = union(f"D:{dp}, S0:{tp}") if dp > 1 else union(f"S0:{tp}")
    return apply_layouts(text, megatron_layouts(cfg, data, col, row))


def build_step(opt, forward_text, work, tag):
    """Write the forward function and build its AdamW training step
    (`--loom-training-pipeline`, not timed); returns the step's path."""
    forward = os.path.join(work, f"fw_{tag}.mlir")
    step = os.path.join(work, f"step_{tag}.mlir")
    with open(forward, "w") as f:
        f.write(forward_text)
    subprocess.run([opt, forward, "--loom-training-pipeline="
                    "optimizer=adamw lr=1e-2", "-o", step], check=True)
    return step


def run_passes(opt, step, preexec_fn=None):
    """One run of PASSES on `step` with --mlir-timing: the finished process
    and {pass name: wall seconds}."""
    proc = subprocess.run([opt, step, *PASSES, "--mlir-timing",
                           "--mlir-timing-display=list", "-o", os.devnull],
                          capture_output=True, text=True,
                          preexec_fn=preexec_fn)
    passes = {}
    for m in re.finditer(r"^\s*([0-9.]+) \(\s*[0-9.]+%\)\s+(\w+Pass)$",
                         proc.stderr, re.M):
        passes[m.group(2)] = passes.get(m.group(2), 0.0) + float(m.group(1))
    return proc, passes


def time_step_passes(opt, step, repeat, what):
    """Best of `repeat` runs of PASSES on `step`: the sum of the passes'
    wall times from --mlir-timing, in seconds. Exits with the compiler's
    error (verbatim tail) if a run fails."""
    best = None
    for _ in range(repeat):
        proc, passes = run_passes(opt, step)
        if proc.returncode != 0:
            sys.exit(f"error: partitioning {what} "
                     f"failed:\n{proc.stderr[-2000:]}")
        seconds = sum(passes.values())
        best = seconds if best is None else min(best, seconds)
    return best


def count_ops(step):
    return sum(1 for line in open(step) if " = " in line)


def time_passes(args, blocks, dp, tp, work):
    cfg = ref.Config(batch=max(dp, 8), layers=blocks)
    step = build_step(args.opt, annotate(ref.module_text(cfg, "f32"), cfg,
                                         dp, tp),
                      work, f"{blocks}_{dp}x{tp}")
    best = time_step_passes(args.opt, step, args.repeat,
                            f"{blocks} blocks on {dp}x{tp}")
    return best, count_ops(step)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build-release"))
    ap.add_argument("--blocks", default="2,167,1000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    args.opt = os.path.join(args.build, "bin", "loom-opt")
    if not os.access(args.opt, os.X_OK):
        sys.exit(f"error: {args.opt} not found; build it first "
                 "(test/bench/run.sh does)")
    blocks = [int(b) for b in args.blocks.split(",")]
    print("partitioning passes through specialisation, best of "
          f"{args.repeat}; AdamW training step of N GPT-mini blocks")
    print(f"{'N':>5} {'ops':>7} {'4 dev s':>9} {'1024 dev s':>11} "
          f"{'ms/block (4)':>13} {'1024/4':>7}")
    with tempfile.TemporaryDirectory() as work:
        first = None
        for n in blocks:
            t4, ops = time_passes(args, n, 2, 2, work)
            t1024, _ = time_passes(args, n, 256, 4, work)
            per_block = t4 / n * 1e3
            first = first or per_block
            print(f"{n:>5} {ops:>7} {t4:>9.3f} {t1024:>11.3f} "
                  f"{per_block:>13.2f} {t1024 / t4:>7.2f}", flush=True)
    print("linear in N: ms/block stays flat; flat in devices: 1024/4 near 1")


if __name__ == "__main__":
    main()
