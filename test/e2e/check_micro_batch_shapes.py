#!/usr/bin/env python3
"""Micro-batches of their own shapes against an independent reference.

One GPT-mini AdamW step (f64) built with micro-batch-shapes=2x16*2,4x8*2
(two micro-batches of 2 sequences of 16 tokens, two of 4 sequences of 8)
is compared with the plain step (no micro-batches) of a model that pads
every sequence to 16 and gives the padding zero weight in the
cross-entropy: with causal attention, a sequence of 8 tokens computes what
the first 8 positions of a padded one do, and zero weights drop the rest,
so both steps compute the same loss, gradients and update. Every result
within --tolerance (norm-wise relative; NaN fails).

    check_micro_batch_shapes.py --opt loom-opt --run loom-run \
        --model gpt_mini.mlir --work-dir DIR [--plant-fault unweighted]

--plant-fault unweighted gives the padding weight 1 (the check must fail).
"""

import argparse
import os
import re
import subprocess
import sys

import numpy as np


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def args_of(text, name):
    head = re.search(r"func\.func @" + name + r"\((.*?)\)\s*->", text, re.S)
    return re.findall(r"%[\w]+: tensor<([^>]*)> \{([^}]*)\}", head.group(1))


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--opt", "--run", "--model", "--work-dir"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--tolerance", type=float, default=1e-12)
    ap.add_argument("--plant-fault", default="")
    a = ap.parse_args()
    os.makedirs(a.work_dir, exist_ok=True)
    text = open(a.model).read().replace("f32", "f64")
    long_rows, short_rows, short_len = 4, 8, 8
    shapes = "2x16*2,4x8*2"
    mixed_fwd = os.path.join(a.work_dir, "forward.mlir")
    open(mixed_fwd, "w").write(text)
    options = "optimizer=adamw lr=1e-2 weight-decay=0.1"
    mixed = os.path.join(a.work_dir, "mixed.mlir")
    run([a.opt, mixed_fwd, f"--loom-training-pipeline={options} "
         f"micro-batch-shapes={shapes}", "-o", mixed])
    # The padded model: 12 rows of 16, weighted.
    rows = long_rows + short_rows
    padded_text = text.replace("tensor<8x", f"tensor<{rows}x")
    padded_text = padded_text.replace(
        "%targets: tensor<12x16xi64> {nn.data},",
        "%targets: tensor<12x16xi64> {nn.data},\n"
        "      %weights: tensor<12x16xf64> {nn.data},")
    padded_text, n = re.subn(r"nn\.cross_entropy %logits, %targets",
                             "nn.cross_entropy %logits, %targets weights "
                             "%weights", padded_text)
    padded_text = re.sub(r"(tensor<12x16x64xf64>, tensor<12x16xi64>)$",
                         r"\1, tensor<12x16xf64>", padded_text, flags=re.M)
    if n != 1:
        sys.exit("error: no cross-entropy to weight in the model")
    padded_fwd = os.path.join(a.work_dir, "padded-forward.mlir")
    open(padded_fwd, "w").write(padded_text)
    padded = os.path.join(a.work_dir, "padded.mlir")
    run([a.opt, padded_fwd, f"--loom-training-pipeline={options}", "-o",
         padded])

    rng = np.random.default_rng(7)
    step = "gpt_mini_train_step"
    mixed_args = args_of(open(mixed).read(), step)
    padded_args = args_of(open(padded).read(), step)
    data = {
        "tokens_2x16": rng.integers(0, 64, (long_rows, 16)),
        "tokens_4x8": rng.integers(0, 64, (short_rows, short_len)),
    }
    for key in list(data):
        data[key.replace("tokens", "targets")] = (7 * data[key] + 3) % 64
    # The padded batch: the long rows, then the short rows padded (any
    # token, weight 0).
    def pad(x):
        out = rng.integers(0, 64, (short_rows, 16))
        out[:, :short_len] = x
        return out
    tokens = np.concatenate([data["tokens_2x16"], pad(data["tokens_4x8"])])
    targets = np.concatenate([data["targets_2x16"], pad(data["targets_4x8"])])
    weights = np.ones((rows, 16))
    if a.plant_fault != "unweighted":
        weights[long_rows:, short_len:] = 0.0
    data.update(tokens=tokens, targets=targets, weights=weights)

    shared = {}
    def inputs(arg_list, tag):
        paths = []
        for i, (ttype, attrs) in enumerate(arg_list):
            named = re.search(r'nn\.name = "([^"]*)"', attrs)
            name = named.group(1) if named else f"#{i}"
            dims = [int(d) for d in ttype.split("x")[:-1]]
            et = ttype.split("x")[-1]
            if "nn.data" in attrs:
                value = data[name]
            elif name not in shared:
                if "nn.step" in attrs:
                    shared[name] = np.array(3)
                elif name.endswith(".v"):
                    shared[name] = np.abs(1e-2 * rng.standard_normal(dims))**2
                elif name.endswith(".m"):
                    shared[name] = 1e-2 * rng.standard_normal(dims)
                else:
                    fan = dims[-2] if len(dims) >= 2 else 1
                    shared[name] = (rng.standard_normal(dims) / np.sqrt(fan)
                                    if len(dims) >= 2 else
                                    1.0 + 0.1 * rng.standard_normal(dims))
                value = shared[name]
            else:
                value = shared[name]
            dtype = np.int64 if et == "i64" else np.float64
            path = os.path.join(a.work_dir, f"{tag}{i}.npy")
            np.save(path, np.asarray(value, dtype=dtype))
            paths += ["--input", path]
        return paths

    results = {}
    for tag, module, arg_list in (("mixed", mixed, mixed_args),
                                  ("padded", padded, padded_args)):
        out = os.path.join(a.work_dir, f"{tag}-results")
        os.makedirs(out, exist_ok=True)
        for f in os.listdir(out):
            os.remove(os.path.join(out, f))
        run([a.run, "--interpret", module, "--entry", step, "--output-dir",
             out] + inputs(arg_list, tag))
        k, got = 0, []
        while os.path.exists(os.path.join(out, f"result_{k}.npy")):
            got.append(np.load(os.path.join(out, f"result_{k}.npy")))
            k += 1
        results[tag] = got
    m, p = results["mixed"], results["padded"]
    if not m or len(m) != len(p):
        sys.exit(f"FAIL: {len(m)} results against {len(p)}")
    worst = 0.0
    for x, y in zip(m, p):
        den = np.linalg.norm(y.ravel())
        err = np.linalg.norm((x - y).ravel()) / (den if den else 1.0)
        worst = max(worst, err) if np.isfinite(err) else float("nan")
    if not worst <= a.tolerance:
        sys.exit(f"FAIL: micro-batches of two lengths differ from the padded "
                 f"step: worst norm-wise relative error {worst:.2e} (bound "
                 f"{a.tolerance:.0e})")
    print(f"micro-batches 2x16*2,4x8*2 against the padded step: {len(m)} "
          f"results, worst norm-wise relative error {worst:.2e} (bound "
          f"{a.tolerance:.0e})")


if __name__ == "__main__":
    main()
