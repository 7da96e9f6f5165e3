#!/usr/bin/env python3
"""The training features of nn-training-step against an independent numpy
reference, in f64: a learning-rate schedule (linear warm-up, then a cosine
or linear decay to a floor, then the floor), parameter groups (their own
learning rate and weight decay), global-norm gradient clipping and
micro-batches, for SGD or AdamW, over 10 steps of loom-run --train on the
interpreter.

The model: pred = (x @ w + b) * g, loss = sum_r m_r sum_c (pred - t)^2 /
(3 sum_r m_r), m a per-row weight of the data (some 0: padding, whose
normaliser is the whole batch's, not a micro-batch's), with hand-written
gradients in numpy. Each step reads its own batch (loom-run
--data), the parameters start from the same files (--init-npy). Checks, each
failing on NaN or Inf: every step's loss and gradient norm, and the final
parameters, within --tolerance norm-wise; the norm was clipped on at least
half of the steps.

    check_optimizer_reference.py --opt loom-opt --run loom-run --work-dir DIR
        --options "optimizer=adamw lr=0.02 ..." [--clip C] [--rows 8]

--plant-fault FAULT plants a fault in the reference (for the test that
proves the checks bite): no-floor (the decay ends at 0, not min-lr),
group-decay (the groups keep the weight decay), clip-per-tensor (each
gradient clipped by its own norm), mean-of-means (each micro-batch's loss
normalised by its own rows).
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_layout import relative, run  # noqa: E402

MODEL = """
func.func @lin(%x: tensor<{r}x4xf64> {{nn.data}}, %w: tensor<4x3xf64> {{nn.param}},
               %b: tensor<3xf64> {{nn.param}}, %g: tensor<3xf64> {{nn.param}},
               %t: tensor<{r}x3xf64> {{nn.data}}, %m: tensor<{r}xf64> {{nn.data}})
    -> tensor<f64> {{
  %y = nn.matmul %x, %w : tensor<{r}x4xf64>, tensor<4x3xf64>
  %z = nn.add %y, %b : tensor<{r}x3xf64>, tensor<3xf64>
  %p = nn.mul %z, %g : tensor<{r}x3xf64>, tensor<3xf64>
  %d = nn.sub %p, %t : tensor<{r}x3xf64>, tensor<{r}x3xf64>
  %s = nn.mul %d, %d : tensor<{r}x3xf64>, tensor<{r}x3xf64>
  %row = nn.reduce sum %s dims = [1] : tensor<{r}x3xf64>
  %e = nn.mul %row, %m : tensor<{r}xf64>, tensor<{r}xf64>
  %sum = nn.reduce sum %e dims = [0] : tensor<{r}xf64>
  %count = nn.reduce sum %m dims = [0] : tensor<{r}xf64>
  %three = nn.fill 3.0 : tensor<f64>
  %n = nn.mul %count, %three : tensor<f64>, tensor<f64>
  %l = nn.div %sum, %n : tensor<f64>, tensor<f64>
  return %l : tensor<f64>
}}
"""

NAMES = ["w", "b", "g"]


def parse_options(text):
    opts = {}
    for word in re.findall(r"(\S+?)=('[^']*'|\S+)", text):
        opts[word[0]] = word[1].strip("'")
    return opts


def schedule(lr, t, warmup, decay, decay_steps, min_lr):
    if warmup and t <= warmup:
        return lr * t / warmup
    if decay == "constant":
        return lr
    p = (t - warmup) / decay_steps
    if p >= 1:
        return min_lr
    f = 1 - p if decay == "linear" else 0.5 * (1 + math.cos(math.pi * p))
    return min_lr + (lr - min_lr) * f


def grads(params, x, t, m, n):
    w, b, g = params
    z = x @ w + b
    d = z * g - t
    loss = float(np.sum(m[:, None] * d * d) / n)
    dp = 2 * d * m[:, None] / n
    dz = dp * g
    return loss, [x.T @ dz, dz.sum(0), (dp * z).sum(0)]


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--opt", "--run", "--work-dir", "--options"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--tolerance", type=float, default=1e-10)
    ap.add_argument("--plant-fault", default="",
                    choices=["", "no-floor", "group-decay",
                             "clip-per-tensor", "mean-of-means"])
    args = ap.parse_args()
    shutil.rmtree(args.work_dir, ignore_errors=True)
    os.makedirs(args.work_dir)
    opts = parse_options(args.options)
    rows, steps = args.rows, args.steps

    forward = os.path.join(args.work_dir, "forward.mlir")
    with open(forward, "w") as f:
        f.write(MODEL.format(r=rows))
    step_file = os.path.join(args.work_dir, "step.mlir")
    run([args.opt, forward, f"--loom-training-pipeline={args.options}",
         "-o", step_file])

    rng = np.random.default_rng(7)
    init = [rng.standard_normal((4, 3)) / 2, 0.1 * rng.standard_normal(3),
            1 + 0.1 * rng.standard_normal(3)]
    xs = rng.standard_normal((steps, rows, 4))
    ts = rng.standard_normal((steps, rows, 3))
    ms = rng.choice([0.0, 0.5, 1.0, 1.0], size=(steps, rows))
    init_dir = os.path.join(args.work_dir, "init")
    data_dir = os.path.join(args.work_dir, "data")
    out_dir = os.path.join(args.work_dir, "out")
    for d in (init_dir, data_dir, out_dir):
        os.makedirs(d)
    for k, value in enumerate(init):
        np.save(os.path.join(init_dir, f"param_{k}.npy"), value)
    np.save(os.path.join(data_dir, "x.npy"), xs)
    np.save(os.path.join(data_dir, "t.npy"), ts)
    np.save(os.path.join(data_dir, "m.npy"), ms)
    text = run([args.run, "--interpret", step_file, "--train", "--steps",
                str(steps), "--init-npy", init_dir, "--data", data_dir,
                "--output-dir", out_dir, "--json"])
    records = [json.loads(line) for line in text.splitlines()
               if line.startswith("{")]

    # The reference.
    optimizer = opts.get("optimizer", "adamw")
    lr = float(opts.get("lr", 1e-3))
    wd = float(opts.get("weight-decay", 0.0))
    beta1, beta2 = float(opts.get("beta1", 0.9)), float(opts.get("beta2",
                                                                   0.999))
    eps, momentum = float(opts.get("eps", 1e-8)), float(opts.get("momentum",
                                                                 0.0))
    warmup = int(opts.get("warmup-steps", 0))
    decay = opts.get("decay", "constant")
    decay_steps = int(opts.get("decay-steps", 0))
    min_lr = float(opts.get("min-lr", 0.0))
    if args.plant_fault == "no-floor":
        min_lr = 0.0
    clip = float(opts.get("clip-norm", 0.0))
    micro = int(opts.get("micro-batches", 1))
    hyper = [{"lr": lr, "wd": wd, "min_lr": min_lr} for _ in NAMES]
    for group in filter(None, opts.get("param-groups", "").split(";")):
        patterns, settings = group.split(":")
        values = dict(s.split("=") for s in settings.split())
        for k, name in enumerate(NAMES):
            if name in patterns.split(","):
                h = hyper[k]
                if "lr" in values:
                    h["lr"] = float(values["lr"])
                    h["min_lr"] = min_lr * h["lr"] / lr
                if "weight-decay" in values and \
                        args.plant_fault != "group-decay":
                    h["wd"] = float(values["weight-decay"])
    params = [p.copy() for p in init]
    first = [np.zeros_like(p) for p in params]
    second = [np.zeros_like(p) for p in params]
    ref_losses, ref_norms, clipped = [], [], 0
    for step in range(1, steps + 1):
        x, t, m = xs[step - 1], ts[step - 1], ms[step - 1]
        if args.plant_fault == "mean-of-means":
            # Each micro-batch normalised by its own weights, then averaged.
            loss, gs = 0.0, [np.zeros_like(p) for p in params]
            for k in range(micro):
                mk = m[k::micro]
                l, g = grads(params, x[k::micro], t[k::micro], mk,
                             3 * max(mk.sum(), 1e-300))
                loss += l / micro
                gs = [a + b / micro for a, b in zip(gs, g)]
        else:
            loss, gs = grads(params, x, t, m, 3 * m.sum())
        ref_losses.append(loss)
        norm = math.sqrt(sum(float(np.sum(g * g)) for g in gs))
        ref_norms.append(norm)
        if clip:
            if args.plant_fault == "clip-per-tensor":
                gs = [g * min(1.0, clip / (math.sqrt(float(np.sum(g * g))) +
                                           1e-6)) for g in gs]
            else:
                gs = [g * min(1.0, clip / (norm + 1e-6)) for g in gs]
            clipped += norm > clip
        for k, g in enumerate(gs):
            h = hyper[k]
            lr_t = schedule(h["lr"], step, warmup, decay, decay_steps,
                            h["min_lr"])
            if optimizer == "sgd":
                g = g + h["wd"] * params[k]
                first[k] = momentum * first[k] + g
                params[k] = params[k] - lr_t * first[k]
            else:
                params[k] = params[k] - lr_t * h["wd"] * params[k]
                first[k] = beta1 * first[k] + (1 - beta1) * g
                second[k] = beta2 * second[k] + (1 - beta2) * g * g
                m_hat = first[k] / (1 - beta1 ** step)
                v_hat = second[k] / (1 - beta2 ** step)
                params[k] = params[k] - lr_t * m_hat / (np.sqrt(v_hat) + eps)

    if len(records) != steps:
        sys.exit(f"FAIL: loom-run reported {len(records)} steps, not {steps}")
    loss_error = max(relative([r["loss"]], [l])
                     for r, l in zip(records, ref_losses))
    param_error = max(relative(np.load(os.path.join(out_dir,
                                                    f"param_{k}.npy")), p)
                      for k, p in enumerate(params))
    norm_error = 0.0
    if clip:
        if any("grad_norm" not in r for r in records):
            sys.exit("FAIL: loom-run reported no gradient norm")
        norm_error = max(relative([r["grad_norm"]], [v])
                         for r, v in zip(records, ref_norms))
        if not 2 * clipped >= steps:
            sys.exit(f"FAIL: the norm exceeded clip-norm {clip} on only "
                     f"{clipped} of {steps} steps; lower it")
    worst = max(loss_error, param_error, norm_error)
    if not worst <= args.tolerance:
        sys.exit(f"FAIL: against numpy: loss {loss_error:.2e}, parameters "
                 f"{param_error:.2e}, gradient norm {norm_error:.2e} (bound "
                 f"{args.tolerance:.0e})")
    print(f"{optimizer}, {steps} steps, {micro} micro-batch(es): loss error "
          f"{loss_error:.2e}, parameter error {param_error:.2e}, gradient "
          f"norm error {norm_error:.2e} (bound {args.tolerance:.0e}); "
          f"clipped on {clipped} of {steps} steps")


if __name__ == "__main__":
    main()
