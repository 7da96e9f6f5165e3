#!/usr/bin/env python3
"""Training from RL batch files, plain and prefix-deduplicated, end to end.

Writes --steps seeded GRPO-shaped batches (JSON Lines: P prompts, each with
G responses; loss masks on the responses, group-normalised advantages, old
log-probabilities near the model's), packs them with `loom-batch pack`
(the deduplicated side cut into --ranks data-parallel bins), and trains

  * the plain step (the model as written, over padded [batch, seq]) on the
    interpreter: the reference;
  * the deduplicated step (nn-prefix-dedup, one bin per rank, the bins
    split across the ranks: data parallel) compiled for the host target on
    --ranks real MPI ranks (loom-run --train --target host);

from the same seeded initialisation and the same batches. With --buckets
C1,C2,... the deduplicated side is one compiled variant per shape bucket
(nn-prefix-dedup buckets=), each step packed at the smallest bucket that
holds it (loom-batch pack --buckets) and run on the variant its shapes fit,
on the interpreter and on the ranks (one program library per variant, the
parameters and state moving between them); at least two variants must
run. --optimizer adamw: the step counters must continue across variants
(bias correction). Every step's loss
and the final parameters must agree within --tolerance (norm-wise relative;
NaN or Inf fails). --plant-fault positions packs the deduplicated side
with every node's position off by one past the root (the error the check
must catch).

    check_dedup.py --opt loom-opt --run loom-run --batch-tool loom-batch \\
        --work-dir DIR --model FILE.mlir [--f64] [--ranks 2] [--steps 5]
"""

import argparse
import json
import os
import re
import sys

import numpy as np

from check_layout import fresh, losses, param_errors, relative, run


def make_batch(rng, prompts, group, vocab, seq):
    lines = []
    for _ in range(prompts):
        prompt = [int(t) for t in rng.integers(0, vocab, rng.integers(3, 7))]
        advantages = rng.normal(size=group)
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-6)
        for g in range(group):
            room = seq - len(prompt)
            response = [int(t) for t in
                        rng.integers(0, vocab, rng.integers(2, room + 1))]
            tokens = prompt + response
            mask = [0] * len(prompt) + [1] * len(response)
            old = [0.0] + [float(v) for v in
                           rng.normal(-np.log(vocab), 0.3, len(tokens) - 1)]
            lines.append(json.dumps({
                "tokens": tokens, "loss_mask": mask, "weight": 1.0,
                "advantage": float(advantages[g]), "old_logprobs": old}))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--opt", "--run", "--batch-tool", "--work-dir", "--model"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--f64", action="store_true")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--capacity", type=int, default=64)
    ap.add_argument("--tolerance", type=float, default=1e-9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plant-fault", default="", choices=["", "positions"])
    ap.add_argument("--buckets", default="")
    ap.add_argument("--optimizer", default="sgd", choices=["sgd", "adamw"])
    args = ap.parse_args()
    work = args.work_dir
    os.makedirs(work, exist_ok=True)
    batch, seq, vocab = 8, 16, 64

    rng = np.random.default_rng(args.seed)
    files = []
    for k in range(args.steps):
        path = os.path.join(work, f"batch{k}.jsonl")
        with open(path, "w") as f:
            f.write(make_batch(rng, 2, 4, vocab, seq))
        files.append(path)
    data = fresh(os.path.join(work, "data"))
    size = (["--buckets", args.buckets] if args.buckets else
            ["--capacity", str(args.capacity)])
    packed = run([args.batch_tool, "pack", data, "--batch", str(batch),
                  "--seq", str(seq), "--bins", str(args.ranks), "--vocab",
                  str(vocab)] + size + files)
    print(packed, end="")
    if args.plant_fault == "positions":
        folders = ([os.path.join(data, f"step{k + 1}")
                    for k in range(args.steps)] if args.buckets else [data])
        for folder in folders:
            path = os.path.join(folder, "trie_positions.npy")
            positions = np.load(path)
            np.save(path, np.where(positions > 0, positions + 1,
                                   positions).clip(max=seq - 1))

    with open(args.model) as f:
        text = f.read()
    if args.f64:
        text = text.replace("f32", "f64")
    forward = os.path.join(work, "forward.mlir")
    with open(forward, "w") as f:
        f.write(text)
    train = ("--loom-training-pipeline=optimizer=adamw lr=1e-2"
             if args.optimizer == "adamw" else
             "--loom-training-pipeline=optimizer=sgd lr=5e-2")

    # The plain step on the interpreter.
    plain = os.path.join(work, "plain.mlir")
    run([args.opt, forward, "--nn-name-arguments-from-source", train, "-o",
         plain])
    ref_dir = fresh(os.path.join(work, "train-plain"))
    ref = run([args.run, "--interpret", plain, "--train", "--steps",
               str(args.steps), "--seed", str(args.seed), "--data", data,
               "--output-dir", ref_dir])

    # The deduplicated step, its bins split across the ranks.
    dedup = os.path.join(work, "dedup.mlir")
    size = (f"buckets={args.buckets}" if args.buckets else
            f"capacity={args.capacity}")
    run([args.opt, forward, "--nn-name-arguments-from-source",
         f"--nn-prefix-dedup={size} bins={args.ranks}", "-o", dedup])
    if args.buckets:
        # One variant per bucket, on the interpreter.
        stepped = os.path.join(work, "dedup-variants.mlir")
        run([args.opt, dedup, train, "-o", stepped])
        variants_dir = fresh(os.path.join(work, "train-variants"))
        variants = run([args.run, "--interpret", stepped, "--train",
                        "--steps", str(args.steps), "--seed", str(args.seed),
                        "--data", data, "--output-dir", variants_dir])
        compare(args, variants, ref, variants_dir, ref_dir,
                f"{used_variants(variants)} on the interpreter")
    with open(dedup) as f:
        text = f.read()
    group = "[" + ", ".join(str(d) for d in range(args.ranks)) + "]"
    layout = f"#hspmd.union<{{{group}: [S0:{args.ranks}]}}>"
    text, n = re.subn(r"\{nn\.data, nn\.name",
                      "{hspmd.layout = " + layout + ", nn.data, nn.name",
                      text)
    if not n:
        sys.exit("FAIL: no data arguments to split in the deduplicated step")
    with open(dedup, "w") as f:
        f.write(text)
    stepped = os.path.join(work, "dedup-step.mlir")
    run([args.opt, dedup, train, "--loom-partition-pipeline", "-o", stepped])
    host_dir = fresh(os.path.join(work, "train-host"))
    host = run([args.run, "--interpret", stepped, "--train", "--target",
                "host", "--ranks", str(args.ranks), "--steps",
                str(args.steps), "--seed", str(args.seed), "--data", data,
                "--work-dir", os.path.join(work, "host"), "--output-dir",
                host_dir])

    what = f"{args.ranks} ranks"
    if args.buckets:
        what += ", " + used_variants(host)
    compare(args, host, ref, host_dir, ref_dir, what)


def used_variants(output):
    """The variants the steps of a run used, as text; at least two."""
    used = sorted(set(re.findall(r" variant @(\S+)", output)))
    if len(used) < 2:
        sys.exit(f"FAIL: the steps ran {len(used)} variant(s) "
                 f"({', '.join(used)}); the check needs at least two")
    return f"{len(used)} variants ({', '.join(used)})"


def compare(args, host, ref, host_dir, ref_dir, what):
    """Every step's loss and the final parameters of the deduplicated run
    against the plain one."""
    loss, ref_loss = losses(host), losses(ref)
    if len(loss) != args.steps or len(ref_loss) != args.steps:
        sys.exit(f"FAIL: expected {args.steps} losses, got {len(ref_loss)} "
                 f"(plain) and {len(loss)} (deduplicated)")
    loss_error = max(relative([h], [r]) for h, r in zip(loss, ref_loss))
    param_error, k = param_errors(host_dir, ref_dir, what)
    if (not loss_error <= args.tolerance or
            not param_error <= args.tolerance):
        sys.exit(f"FAIL: deduplicated training differs from the plain "
                 f"step: loss {loss_error:.2e}, parameters "
                 f"{param_error:.2e} (bound {args.tolerance:.0e})")
    print(f"deduplicated on {what} against plain: {args.steps} "
          f"steps, {k} parameters: loss error {loss_error:.2e}, parameter "
          f"error {param_error:.2e} (bound {args.tolerance:.0e})")


if __name__ == "__main__":
    main()
