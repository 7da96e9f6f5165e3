#!/usr/bin/env python3
"""The device library calls a device target's runtime made against the ones
the communication report predicts, call by call.

A partitioned training step (the output of --loom-partition-pipeline) trains for
K steps on N ranks of a device target (loom-run --train --target ascend
--ascend-double --comm-calls; CUDA the same where there are GPUs). Each
rank's runtime records, at every NCCL/HCCL call site, what it passed: the
library call, the data type, the element count, the communicator's members
and the peer (runtime/host/DeviceSupport.h, recordLibraryCall).
`loom-opt --hspmd-comm-report=calls=1` predicts those calls from the
program alone. For every rank and every step, the recorded calls must
equal the predicted ones exactly, in order; a rank or a step with calls
the report does not predict fails too, and so does a program without any
call (nothing would be compared).

    check_calls.py --opt loom-opt --run loom-run --step STEP.mlir \\
        --ranks N --steps K --work-dir DIR [--target ascend] \\
        [--global-entry F] [--library PROGRAM.so] [--seed S] [--vocab V]

--library reuses a program library built before from the same step
(loom-run --library). Exchanges between device groups are staged through host memory
over MPI and make no library call; their bytes are the host runtime's
counters (check_layout.py compares those with the report).
"""

import argparse
import collections
import os
import re
import subprocess
import sys


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(cmd[:3])} ... failed:\n"
                 f"{(proc.stdout + proc.stderr)[-3000:]}")
    return proc.stdout


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--opt", "--run", "--step", "--work-dir"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    # (Not cluster: the report predicts library calls for every group, and
    # host groups make none; mixed clusters are not compared yet.)
    ap.add_argument("--target", default="ascend", choices=["ascend", "cuda"])
    ap.add_argument("--global-entry")
    ap.add_argument("--library")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=64)
    args = ap.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)

    entry = args.global_entry
    if not entry:
        with open(args.step) as f:
            m = re.search(r"func\.func @(\w+_train_step)\(", f.read())
        if not m:
            sys.exit("error: no @..._train_step in the step; pass "
                     "--global-entry")
        entry = m.group(1)

    # What the report predicts, per rank (device id), in program order: the
    # calls of the programs loom-run runs, the specialisations of the
    # entry (one per device group or cell).
    report = run([args.opt, args.step, "--hspmd-comm-report=calls=1", "-o",
                  os.devnull])
    predicted = collections.defaultdict(list)
    program = re.compile(re.escape(entry) + r"_(?:group|cell)\d+(?:_block\d+)?")
    section = None
    for line in report.splitlines():
        m = re.match(r"comm report @(\w+):", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"call rank (\d+) (#\d+ .*)$", line)
        if m and section and program.fullmatch(section):
            predicted[int(m.group(1))].append(m.group(2))
    if not predicted:
        sys.exit("FAIL: the report predicts no device library call (nothing "
                 "to compare)")

    # What the runtime recorded, per rank and step.
    cmd = [args.run, "--interpret", args.step, "--train", "--target",
           args.target, "--ranks", str(args.ranks), "--global-entry", entry,
           "--steps", str(args.steps), "--seed", str(args.seed), "--vocab",
           str(args.vocab), "--work-dir", args.work_dir, "--comm-calls"]
    if args.target == "ascend":
        cmd.append("--ascend-double")
    if args.library:
        cmd += ["--library", args.library]
    out = run(cmd)
    recorded = collections.defaultdict(list)
    for line in out.splitlines():
        if not line.startswith("call "):
            continue
        m = re.match(r"call rank (\d+) step (\d+) (#\d+ .*)$", line)
        if not m:
            sys.exit(f"FAIL: a malformed call line from loom-run: {line}")
        recorded[(int(m.group(1)), int(m.group(2)))].append(m.group(3))

    ranks, steps = range(args.ranks), range(1, args.steps + 1)
    for rank, step in sorted(recorded):
        if rank not in ranks or step not in steps:
            sys.exit(f"FAIL: rank {rank} recorded library calls at step "
                     f"{step}, outside ranks 0..{args.ranks - 1} and steps "
                     f"1..{args.steps}:\n  " +
                     "\n  ".join(recorded[(rank, step)][:5]))
    for rank in sorted(predicted):
        if rank not in ranks:
            sys.exit(f"FAIL: the report predicts calls on rank {rank}, "
                     f"outside the {args.ranks} ranks run")
    for rank in ranks:
        want = predicted.get(rank, [])
        for step in steps:
            got = recorded.get((rank, step), [])
            if got == want:
                continue
            at = next((i for i, (g, w) in enumerate(zip(got, want))
                       if g != w), min(len(got), len(want)))
            show = lambda calls: "\n    ".join(calls[max(0, at - 2):at + 3]) \
                or "(none)"
            sys.exit(f"FAIL: rank {rank} step {step}: the runtime's library "
                     f"calls differ from the report's at record {at + 1} "
                     f"({len(got)} recorded, {len(want)} predicted):\n"
                     f"  runtime:\n    {show(got)}\n"
                     f"  report:\n    {show(want)}")
    per_step = sum(len(calls) for calls in predicted.values())
    kinds = collections.Counter(
        re.match(r"#\d+ \w+: (\w+)", call).group(1)
        for calls in predicted.values() for call in calls)
    print(f"{args.target} library calls: {args.steps} steps on {args.ranks} "
          f"ranks, {per_step} per step over all ranks ("
          + ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
          + "): equal the report's, call by call")


if __name__ == "__main__":
    main()
