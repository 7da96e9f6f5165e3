#!/usr/bin/env python3
"""Benchmark: a host run with and without per-micro-step replanning.

A one-layer MoE (test/e2e/check_sparse_exchange.py's model at a larger
size: 4096 tokens of width 256, 8 experts, top-2) whose routing is data
skewed differently in every micro-batch (each micro-batch's favourite
experts drawn Zipf-like, so the load swings from one micro-step to the
next), its tokens and experts split over 2 MPI ranks (4 experts at home on
each), is trained with SGD in f32 on the host target (release build), 4
micro-batches a step, three ways side by side:

  * static: expert parallel, every expert on its home rank;
  * planned: a forecast equal to the routing (the rollout's), R replica
    slots a device, the placement planned before every micro-step
    (hspmd-moe-placement), replicas resident from one micro-step to the
    next (hspmd-moe-resident-replicas: each plan after the previous one's
    lookup, only the changed slots fetched, gradients home once);
  * fetch-all: planned, without residency (moe-resident=false: every
    micro-step fetches its replicas and sends their gradients home);
  * wrong: planned from a forecast of other experts (a bad forecast
    costs balance, never correctness);
  * serial: planned, the same program, run with LOOM_OVERLAP=0: each
    micro-step's replica fetch (started right after the previous one
    completes by hspmd-overlap-fetches) runs whole where it starts
    instead of on the runtime's communication thread, so it no longer
    overlaps the previous micro-step's compute.

Printed: the tokens/s (median over steps 2..K), the ratio to static, the
bytes rank 0 sends a step, the losses' agreement, and the balance the
plans give: per micro-step, the largest rank's expert rows over the mean
(1.0 is perfect), from the plans read back from nn.moe_plan.

    test/bench/moe_placement_run.py [--build DIR] [--steps K] [--slots R]
        [--width W]
"""

import argparse
import os
import re
import statistics
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "test", "bench"))
import check_sparse_exchange as layer  # noqa: E402
from moe_exchange import check  # noqa: E402

layer.T, layer.K, layer.W, layer.E, layer.V = 4096, 2, 256, 8, 512
RANKS, MICRO = 2, 4


def routing(rng, steps):
    """experts[s, t, :] (distinct per token): micro-batch k of step s (rows
    k, k + MICRO, ...) prefers experts by its own Zipf-like popularity."""
    experts = np.zeros((steps, layer.T, layer.K), dtype=np.int64)
    for s in range(steps):
        for k in range(MICRO):
            weights = 1.0 / np.arange(1, layer.E + 1) ** 1.2
            p = np.empty(layer.E)
            p[rng.permutation(layer.E)] = weights / weights.sum()
            for t in range(k, layer.T, MICRO):
                experts[s, t] = rng.choice(layer.E, size=layer.K,
                                           replace=False, p=p)
    return experts


def forecast_of(experts, wrong):
    forecast = np.zeros(experts.shape[:2] + (1, layer.E), dtype=np.int64)
    for s, t, j in np.ndindex(*experts.shape):
        e = experts[s, t, j]
        forecast[s, t, 0, (e + layer.E // 2) % layer.E if wrong else e] += 1
    return forecast


def train(build, work, tag, slots, data, steps, resident=True,
          overlap=True):
    opt = os.path.join(build, "bin", "loom-opt")
    loom_run = os.path.join(build, "bin", "loom-run")
    path = lambda name: os.path.join(work, f"{tag}-{name}")
    text = layer.model(RANKS, slots).replace("f64", "f32")
    with open(path("forward.mlir"), "w") as f:
        f.write(text)
    check([opt, path("forward.mlir"), "--loom-training-pipeline=optimizer="
           f"sgd lr=1e-2 micro-batches={MICRO}" +
           ("" if resident else " moe-resident=false"), "-o",
           path("step.mlir")])
    check([opt, path("step.mlir"), "--loom-partition-pipeline", "-o",
           path("spmd.mlir")])
    os.environ["LOOM_OVERLAP"] = "1" if overlap else "0"
    out = check([loom_run, "--interpret", path("spmd.mlir"), "--train",
                 "--target", "host", "--ranks", str(RANKS), "--global-entry",
                 "moe_layer_train_step", "--steps", str(steps), "--data", data,
                 "--work-dir", path("run"), "--comm-stats"])
    os.environ.pop("LOOM_OVERLAP")
    rates = [float(r) for r in re.findall(r"tokens/s (\S+)", out)]
    losses = [float(v) for v in re.findall(r"^step \d+ loss (\S+)", out, re.M)]
    sent = sum(int(b) for b in re.findall(r"^rank 0 \w+: calls \d+, bytes "
                                          r"sent (\d+)", out, re.M)) // steps
    return statistics.median(rates[1:] or rates), sent, losses


def balance(work, experts, forecast, slots, chained=True):
    """Per micro-step, the largest rank's expert rows over the mean, under
    the plans (read back from nn.moe_plan; each after the previous
    micro-step's lookup when `chained`, as resident replicas plan) and
    under the home placement; and the share of slots a plan keeps."""
    class Args:
        pass
    args = Args()
    args.run = os.path.join(BUILD, "bin", "loom-run")
    args.ranks, args.placement = RANKS, slots
    args.expert_bytes = layer.W * layer.W * 4
    path = lambda name: os.path.join(work, name)
    planned, static, kept = [], [], []
    for s in range(experts.shape[0]):
        previous = None
        for k in range(MICRO):
            rows = slice(k, None, MICRO)
            hosts, lookup = layer.plan_of(args, forecast[s, rows], path,
                                          previous)
            if previous is not None:
                kept.append(float(np.mean(lookup == previous)))
            if chained:
                previous = lookup
            counts = np.bincount(experts[s, rows].reshape(-1),
                                 minlength=layer.E)
            load = np.zeros(RANKS)
            for e in range(layer.E):
                reps = [p for p in range(len(hosts)) if hosts[p] == e]
                for i, p in enumerate(reps):
                    load[p // slots] += (counts[e] // len(reps) +
                                         (i < counts[e] % len(reps)))
            planned.append(load.max() / load.mean())
            home = counts.reshape(RANKS, -1).sum(1)
            static.append(home.max() / home.mean())
    return (statistics.mean(static), statistics.mean(planned),
            statistics.mean(kept) if kept else 0.0)


def main():
    global BUILD
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build-release"))
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--slots", type=int, default=6)
    ap.add_argument("--width", type=int, default=layer.W)
    args = ap.parse_args()
    layer.W = args.width
    BUILD = args.build
    rng = np.random.default_rng(11)
    experts = routing(rng, args.steps)
    tokens = rng.integers(0, layer.V, size=(args.steps, layer.T),
                          dtype=np.int64)
    with tempfile.TemporaryDirectory() as work:
        results = {}
        for tag, slots, wrong, resident, overlap in (
                ("static", 0, False, True, True),
                ("planned", args.slots, False, True, True),
                ("serial", args.slots, False, True, False),
                ("fetch-all", args.slots, False, False, True),
                ("wrong", args.slots, True, True, True)):
            data = os.path.join(work, f"{tag}-data")
            os.makedirs(data)
            np.save(os.path.join(data, "tokens.npy"), tokens)
            np.save(os.path.join(data, "experts.npy"), experts)
            if slots:
                np.save(os.path.join(data, "forecast.npy"),
                        forecast_of(experts, wrong))
            results[tag] = train(args.build, work, tag, slots, data,
                                 args.steps, resident, overlap)
        static_balance, planned_balance, kept = balance(
            work, experts, forecast_of(experts, False), args.slots)
        _, all_balance, _ = balance(work, experts,
                                    forecast_of(experts, False), args.slots,
                                    chained=False)
        _, wrong_balance, _ = balance(
            work, experts, forecast_of(experts, True), args.slots)
    base = results["static"]
    print(f"one MoE layer: {layer.T} tokens x width {layer.W}, {layer.E} "
          f"experts, top-{layer.K}, {RANKS} host ranks, {MICRO} micro-batches"
          f" a step, {args.slots} replica slots a device, f32, "
          f"{args.steps} steps")
    print(f"  {'run':<10}{'tokens/s':>12}{'/ static':>10}{'B/step':>12}"
          f"{'loss vs static':>16}{'max/mean rows':>15}")
    for tag, bal in (("static", static_balance),
                     ("planned", planned_balance),
                     ("serial", planned_balance),
                     ("fetch-all", all_balance), ("wrong", wrong_balance)):
        rate, sent, losses = results[tag]
        worst = max(abs(a - b) / abs(b) for a, b in zip(losses, base[2]))
        print(f"  {tag:<10}{rate:>12.0f}{rate / base[0]:>10.2f}{sent:>12}"
              f"{worst:>16.1e}{bal:>15.3f}")
    print(f"  resident plans keep {kept:.0%} of the slots from one "
          f"micro-step to the next")
    print(f"  overlapped fetches: planned / serial tokens/s "
          f"{results['planned'][0] / results['serial'][0]:.2f}")


if __name__ == "__main__":
    main()
