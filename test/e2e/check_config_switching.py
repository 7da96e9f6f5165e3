#!/usr/bin/env python3
"""A switching run from a run configuration with length buckets, checked
against one device.

`loom-run --config CONFIG MODEL --work-dir DIR` plans every step (the
strategy, and the bucket its batch's longest sequence fits: a step of the
forward's T tokens runs as T / L sequences of L at bucket L), writes each
step's synthetic data and strategy into DIR/switching-steps/step<n>/ and
trains on the configuration's ranks, switching strategies and shapes. The
reference is the unpartitioned training step of MODEL built with one
micro-batch composition per bucket the run used (loom-opt
--loom-training-pipeline="TRAINING micro-batch-shapes=..."), trained by the
interpreter on the same step folders (without their strategy files): every
step's loss and the final parameters within --tolerance, norm-wise relative
(f32: the partitioned kernels sum in other orders), NaN or Inf failing.

    check_config_switching.py --opt loom-opt --run loom-run --config FILE \\
        --model FILE.mlir --training "optimizer=adamw lr=0.01" \\
        --work-dir DIR [--tolerance 1e-4] [--plant-fault skip-switch]

--plant-fault skip-switch makes the driver leave the first switch's target
parameters as they were (LOOM_TEST_FAULT): the run must then differ.
"""

import argparse
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_layout import fresh, losses, param_errors, relative, run  # noqa

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--opt", "--run", "--config", "--model", "--training",
                 "--work-dir"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--plant-fault", default="", choices=["", "skip-switch"])
    args = ap.parse_args()
    work = fresh(args.work_dir)

    if args.plant_fault:
        os.environ["LOOM_TEST_FAULT"] = args.plant_fault
    out = os.path.join(work, "run-out")
    log = run([args.run, "--config", args.config, args.model, "--work-dir",
               os.path.join(work, "run"), "--output-dir", out,
               "--comm-stats"])
    os.environ.pop("LOOM_TEST_FAULT", None)
    print(log, end="")
    plans = [(step, strategy, bucket, shape) for step, bucket, shape, strategy
             in re.findall(r"^plan step (\d+): \d+ sequences, bucket (\d+) "
                           r"\((\d+x\d+)\), strategy (\w+),", log, re.M)]
    got = losses(log)
    if not plans or len(plans) != len(got):
        sys.exit(f"FAIL: {len(plans)} planned steps, {len(got)} trained")

    # The reference: the same folders without the strategies.
    steps = os.path.join(work, "run", "switching-steps")
    reference_steps = os.path.join(work, "reference-steps")
    for step, _, _, _ in plans:
        source = os.path.join(steps, f"step{step}")
        target = os.path.join(reference_steps, f"step{step}")
        os.makedirs(target)
        for name in os.listdir(source):
            if name.endswith(".npy"):
                shutil.copy(os.path.join(source, name), target)
    shapes = []
    for _, _, _, shape in plans:
        if shape not in shapes:
            shapes.append(shape)
    step_ir = os.path.join(work, "reference-step.mlir")
    run([args.opt, args.model,
         f"--loom-training-pipeline={args.training} "
         f"micro-batch-shapes={';'.join(shapes)}", "-o", step_ir])
    ref_out = os.path.join(work, "reference-out")
    ref_log = run([args.run, "--interpret", step_ir, "--train", "--data",
                   reference_steps, "--steps", str(len(plans)),
                   "--output-dir", ref_out])
    expected = losses(ref_log)

    loss_error = relative(np.array(got), np.array(expected))
    param_error, count = param_errors(out, ref_out, "the configuration run")
    strategies = sorted({strategy for _, strategy, _, _ in plans})
    buckets = sorted({int(bucket) for _, _, bucket, _ in plans})
    ok = max(loss_error, param_error) <= args.tolerance
    print(f"config switching: {len(plans)} steps under strategies "
          f"{', '.join(strategies)} at buckets "
          f"{', '.join(map(str, buckets))}, {count} parameters: loss error "
          f"{loss_error:.1e}, parameter error {param_error:.1e} (bound "
          f"{args.tolerance:.0e}): {'ok' if ok else 'FAIL'}")
    if not ok:
        sys.exit("FAIL: the configuration's switching run differs from one "
                 "device")


if __name__ == "__main__":
    main()
