#!/usr/bin/env python3
"""End-to-end check of dynamic graph switching: a forward function whose
arguments carry strategy sets (#hspmd.strategies, one layout per strategy)
goes through the training pipeline and the partitioning pipeline, which
makes one step per strategy (hspmd-specialize-strategies: @<step>_<name>);
then

  * every strategy's step runs on N simulated ranks from the same global
    inputs as the training step before any partitioning pass, every result
    (loss, updated parameters, optimizer state) within --tolerance
    norm-wise;
  * the strategies' steps are compiled to C++ for the host target and
    trained on N real MPI ranks for the steps of --schedule (loom-run
    --train --target host --strategies ...), switching strategy between
    steps as the schedule says: every step's loss and the final parameters
    within --host-tolerance of the same steps of the unpartitioned step on
    the interpreter (the same seeded initialisation and data);
  * every switch moved exactly the bytes of its compiled plan
    (hspmd-switch-plans on the partitioned module: the volume printed for
    that ordered pair of strategies), and the ranks' switch bytes in all
    equal the sum of the plans' volumes over the schedule's switches.

    check_switching.py --opt loom-opt --run loom-run --work-dir DIR \\
        --model FILE.mlir --ranks N [--f64] \\
        --strategy "NAME:ARG=LAYOUT;ARG=LAYOUT..." ... --optimizer NAME \\
        --schedule a,b,a,c [--tolerance 1e-10] [--host-tolerance 1e-9]

--lengths L,L,... (one per step of the schedule) gives each step's sequence
length: the model is compiled once more per other length (a copy of its
function, @<name>_s<L>, with the batch's [B, S] shapes and the loss
normaliser rescaled: for models without learned positions), so there is one
step per (strategy, length), and the host run reads each step's batch from a
per-step folder with its strategy (loom-run --data DIR: DIR/step<n>/ holds
tokens.npy, targets.npy and strategy); the reference is the same module
without strategy sets on the same folders.

ARG may be several patterns separated by '|', each a shell pattern over the
forward function's argument names (l*_wq|l*_wk: every layer's wq and wk).
An argument a strategy does not name is replicated on all N devices under
it (#hspmd.union<{[0, ..., N-1]: [D:N]}>); one that no strategy names gets
no set (propagation lays it out in each strategy's step). Every comparison
fails on NaN or Inf on either side.

--plant-fault skip-switch (for the test that proves the checks bite) makes
the schedule's first switch the identity in the driver (LOOM_TEST_FAULT):
the parameters stay in the old layout, the training must differ.
"""

import argparse
import fnmatch
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_layout import (draw_inputs, fresh, losses, param_errors,  # noqa
                          parse_args_of, relative, run)


def strategy_sets(strategies, optimizer, ranks):
    """ARG -> the #hspmd.strategies<...> text of every argument named."""
    everything = "<{[" + ", ".join(str(d) for d in range(ranks)) + \
        f"]: [D:{ranks}]}}>"
    named = []
    for _, layouts in strategies:
        for arg in layouts:
            if arg not in named:
                named.append(arg)
    sets = {}
    for arg in named:
        members = []
        for name, layouts in strategies:
            layout = layouts.get(arg, everything)
            members.append(f'"{name}" = {layout}')
        sets[arg] = ("#hspmd.strategies<[" + ", ".join(members) +
                     f'], optimizer = "{optimizer}">')
    return sets


def compiled_plans(text, step):
    """{(from, to): volume} of the `switch plans @STEP (compiled)` section."""
    section = text.split(f"switch plans @{step} (compiled)")
    if len(section) < 2:
        sys.exit(f"FAIL: hspmd-switch-plans printed no compiled plans of "
                 f"@{step}:\n" + text[-2000:])
    plans = {}
    for m in re.finditer(r'switch "(\w+)" -> "(\w+)"\n\s+volume (\d+) bytes',
                         section[1].split("switch plans @")[0]):
        plans[(m.group(1), m.group(2))] = int(m.group(3))
    return plans


def parse_strategies(specs, model):
    """[(name, {argument: layout})] of the "NAME:ARG=LAYOUT;..." specs,
    argument patterns matched against the model's argument names."""
    arg_names = re.findall(r"%(\w+): tensor<[^>]*> \{", model)
    strategies = []
    for spec in specs:
        name, rest = spec.split(":", 1)
        layouts = {}
        for item in filter(None, rest.split(";")):
            arg, layout = item.split("=", 1)
            for pattern in arg.strip().split("|"):
                matched = fnmatch.filter(arg_names, pattern)
                if not matched:
                    sys.exit(f"error: strategy {name}: no argument of the "
                             f"model matches '{pattern}'")
                for one in matched:
                    layouts[one] = layout.strip()
        strategies.append((name, layouts))
    return strategies


def with_lengths(plain, lengths):
    """The model and, for every length of `lengths` but its own, a copy of
    its function at that sequence length (@<name>_s<L>: the [B, S] shapes
    and the loss normaliser rescaled); and the batch size."""
    batch, own = map(int, re.search(r"%tokens: tensor<(\d+)x(\d+)xi64>",
                                     plain).groups())
    if lengths and plain.count("func.func @") != 1:
        sys.exit("error: --lengths takes a model of one function")
    body = plain[plain.index("func.func"):plain.rindex("}")]
    name = re.search(r"func\.func @(\w+)\(", body).group(1)
    for length in sorted(set(lengths) - {own}):
        copy = body.replace(f"func.func @{name}(",
                            f"func.func @{name}_s{length}(")
        copy = copy.replace(f"tensor<{batch}x{own}x",
                            f"tensor<{batch}x{length}x")
        copy, n = re.subn(r"normalizer = [0-9.eE+-]+ : f64",
                          f"normalizer = {float(batch * length)} : f64", copy)
        if n != 1:
            sys.exit("error: --lengths takes a model with one loss "
                     "normaliser")
        plain = plain[:plain.rindex("}")] + copy + "}\n"
    return plain, batch


def build_module(plain, strategies, optimizer, ranks, lengths):
    """(the model at every length, the same with the strategy sets on its
    arguments, the batch size)."""
    plain, batch = with_lengths(plain, lengths)
    functions = plain.count("func.func @")
    text = plain
    for arg, attr in strategy_sets(strategies, optimizer, ranks).items():
        pattern = r"(%" + re.escape(arg) + r": tensor<[^>]*> \{)"
        text, n = re.subn(pattern, r"\g<1>hspmd.layout = " +
                          attr.replace("\\", "\\\\") + ", ", text)
        if n != functions:
            sys.exit(f"error: no argument %{arg} with attributes in the model")
    return plain, text, batch


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--opt", "--run", "--work-dir", "--model", "--optimizer",
                 "--schedule"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--f64", action="store_true")
    ap.add_argument("--strategy", action="append", default=[],
                    help="NAME:ARG=LAYOUT;ARG=LAYOUT... (in the set's order)")
    ap.add_argument("--tolerance", type=float, default=1e-10)
    ap.add_argument("--host-tolerance", type=float, default=1e-9)
    ap.add_argument("--vocab", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plant-fault", default="", choices=["", "skip-switch"])
    ap.add_argument("--lengths", default="",
                    help="the sequence length of each step (see above)")
    args = ap.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)

    with open(args.model) as f:
        plain = f.read()
    strategies = parse_strategies(args.strategy, plain)
    names = [name for name, _ in strategies]
    schedule = args.schedule.split(",")
    if len(strategies) < 2 or args.optimizer not in names or \
            any(s not in names for s in schedule):
        sys.exit("error: --strategy twice or more, --optimizer and "
                 "--schedule naming them")

    if args.f64:
        plain = plain.replace("f32", "f64")
    lengths = [int(x) for x in args.lengths.split(",")] if args.lengths else []
    if lengths and len(lengths) != len(schedule):
        sys.exit("error: --lengths gives one length per step of --schedule")
    plain, text, batch = build_module(plain, strategies, args.optimizer,
                                      args.ranks, lengths)
    forward = os.path.join(args.work_dir, "forward.mlir")
    with open(forward, "w") as f:
        f.write(text)
    plain_forward = os.path.join(args.work_dir, "forward-plain.mlir")
    with open(plain_forward, "w") as f:
        f.write(plain)
    options = "--loom-training-pipeline=optimizer=adamw lr=1e-2"
    stepped = os.path.join(args.work_dir, "step.mlir")
    run([args.opt, forward, options, "-o", stepped])
    reference = os.path.join(args.work_dir, "reference.mlir")
    run([args.opt, plain_forward, options, "-o", reference])
    with open(reference) as f:
        reference_text = f.read()
    step = re.search(r"func\.func @(\w+_train_step)\(", reference_text).group(1)
    lowered = os.path.join(args.work_dir, "spmd.mlir")
    run([args.opt, stepped, "--loom-partition-pipeline", "-o", lowered])
    with open(lowered) as f:
        ir = f.read()
    ref_types = [t for t, _ in parse_args_of(reference_text, step)]

    # Inputs: as check_layout.py draws them.
    inputs = draw_inputs(parse_args_of(reference_text, step), args.seed,
                         args.vocab, args.work_dir)
    ref_dir = fresh(os.path.join(args.work_dir, "reference-results"))
    run([args.run, "--interpret", reference, "--entry", step, "--output-dir",
         ref_dir] + inputs)
    count = 0
    while os.path.exists(os.path.join(ref_dir, f"result_{count}.npy")):
        count += 1

    # 1. Every strategy's step on simulated ranks.
    for name in names:
        variant = f"{step}_{name}"
        if f"hspmd.strategy = \"{name}\"" not in ir or \
                f"func.func @{variant}(" not in ir:
            sys.exit(f"FAIL: the partitioned module has no @{variant} "
                     f"marked hspmd.strategy = \"{name}\"")
        if [t for t, _ in parse_args_of(ir, variant)] != ref_types:
            sys.exit(f"FAIL: @{variant} has other arguments than @{step}")
        locals_ = re.findall(r"func\.func @(" + re.escape(variant) +
                             r"_(?:group|cell)\d+(?:_block\d+)?)\(", ir)
        entry = ["--entry", locals_[0]] if len(locals_) == 1 else []
        sim_dir = fresh(os.path.join(args.work_dir, f"sim-{name}"))
        run([args.run, "--interpret", lowered, "--simulate", str(args.ranks)]
            + entry + ["--global-entry", variant, "--tolerance",
                       str(args.tolerance), "--output-dir", sim_dir] + inputs)
        errors = [relative(np.load(os.path.join(sim_dir, f"result_{i}.npy")),
                           np.load(os.path.join(ref_dir, f"result_{i}.npy")))
                  for i in range(count)]
        worst = max(errors) if errors else float("inf")
        if not worst <= args.tolerance:
            sys.exit(f"FAIL: strategy \"{name}\" on {args.ranks} simulated "
                     f"ranks differs from @{step}: worst norm-wise relative "
                     f"error {worst:.2e} (bound {args.tolerance:.0e})")
        groups = f", {len(locals_)} device groups" if len(locals_) > 1 else ""
        print(f"strategy {name}: {count} results on {args.ranks} simulated "
              f"ranks{groups}, worst norm-wise relative error {worst:.2e} "
              f"(bound {args.tolerance:.0e})")

    # 2. The compiled plans.
    plans = compiled_plans(run([args.opt, lowered, "--hspmd-switch-plans",
                                "-o", os.devnull]), step)
    for a in names:
        for b in names:
            if a != b and (a, b) not in plans:
                sys.exit(f"FAIL: no compiled plan of the switch {a} -> {b}")

    # 3. The schedule on real ranks against the interpreter.
    steps = str(len(schedule))
    ref_train = fresh(os.path.join(args.work_dir, "train-ref"))
    common = ["--steps", steps, "--seed", str(args.seed), "--vocab",
              str(args.vocab)]
    data, ref_data = [], []
    if lengths:
        # Per-step folders: the batch at the step's length, and (for the
        # switching run) its strategy.
        host_dir = fresh(os.path.join(args.work_dir, "data"))
        ref_dir_data = fresh(os.path.join(args.work_dir, "data-ref"))
        rng = np.random.default_rng(args.seed + 1)
        for n, (length, strategy) in enumerate(zip(lengths, schedule), 1):
            tokens = rng.integers(0, args.vocab, size=(batch, length))
            for root in (host_dir, ref_dir_data):
                folder = os.path.join(root, f"step{n}")
                os.makedirs(folder)
                np.save(os.path.join(folder, "tokens.npy"), tokens)
                np.save(os.path.join(folder, "targets.npy"),
                        (7 * tokens + 3) % args.vocab)
            with open(os.path.join(host_dir, f"step{n}", "strategy"), "w") as f:
                f.write(strategy + "\n")
        data, ref_data = ["--data", host_dir], ["--data", ref_dir_data]
    entry = [] if lengths else ["--entry", step]
    ref = run([args.run, "--interpret", reference, "--train"] + entry +
              common + ref_data + ["--output-dir", ref_train])
    if args.plant_fault:
        os.environ["LOOM_TEST_FAULT"] = args.plant_fault
    out_dir = fresh(os.path.join(args.work_dir, "train-host"))
    chosen = data if lengths else ["--strategies", args.schedule]
    text = run([args.run, "--interpret", lowered, "--train", "--target",
                "host", "--ranks", str(args.ranks)] + chosen + common +
               ["--work-dir", os.path.join(args.work_dir, "host"),
                "--output-dir", out_dir, "--comm-stats"])
    lines = re.findall(r"^step (\d+) loss .* strategy (\w+)(?: switch (\d+) "
                       r"bytes (\S+) s)?$", text, re.M)
    if len(lines) != len(schedule):
        sys.exit(f"FAIL: {len(lines)} step lines with a strategy for "
                 f"{len(schedule)} steps:\n{text[-3000:]}")
    moved = 0
    switches = []
    for (n, strategy, volume, _), expected in zip(lines, schedule):
        n = int(n)
        if strategy != expected:
            sys.exit(f"FAIL: step {n} ran strategy {strategy}, the schedule "
                     f"says {expected}")
        previous = schedule[n - 2] if n > 1 else None
        if previous is None or previous == strategy:
            # (Another length under the same strategy is another step, whose
            # parameters lie alike: a switch of nothing.)
            if volume and (int(volume) or not lengths):
                sys.exit(f"FAIL: step {n} switched ({volume} bytes) where "
                         "the strategy did not change")
            continue
        want = plans[(previous, strategy)]
        if volume == "" or int(volume) != want:
            sys.exit(f"FAIL: the switch {previous} -> {strategy} before step "
                     f"{n} moved {volume or 'nothing'} bytes; its plan "
                     f"{want}")
        moved += want
        switches.append(f"{previous}->{strategy} {want}")
    sent = sum(int(b) for b in
               re.findall(r"^rank \d+ switch: switches \d+, bytes sent (\d+)",
                          text, re.M))
    received = sum(int(b) for b in
                   re.findall(r"^rank \d+ switch: .*received (\d+)$", text,
                              re.M))
    if sent != moved or received != moved:
        sys.exit(f"FAIL: the ranks sent {sent} and received {received} "
                 f"switch bytes; the plans {moved}")
    host_loss, ref_loss = losses(text), losses(ref)
    if len(host_loss) != len(schedule) or len(ref_loss) != len(schedule):
        sys.exit(f"FAIL: {len(host_loss)} and {len(ref_loss)} losses for "
                 f"{len(schedule)} steps")
    loss_error = max(relative([h], [r]) for h, r in zip(host_loss, ref_loss))
    param_error, k = param_errors(out_dir, ref_train, "switching run")
    if not (loss_error <= args.host_tolerance and
            param_error <= args.host_tolerance):
        sys.exit(f"FAIL: the switching run differs from one device: loss "
                 f"{loss_error:.2e}, parameters {param_error:.2e} (bound "
                 f"{args.host_tolerance:.0e})")
    used = sorted(set(schedule))
    shapes = (f" at lengths {', '.join(map(str, sorted(set(lengths))))}"
              if lengths else "")
    print(f"host: {steps} steps on {args.ranks} ranks under "
          f"{len(used)} strategies ({', '.join(used)}){shapes}, "
          f"{len(switches)} switches, {k} parameters: loss error "
          f"{loss_error:.2e}, parameter error {param_error:.2e} (bound "
          f"{args.host_tolerance:.0e})")
    print(f"switch bytes equal the compiled plans: {moved} in all "
          f"({'; '.join(switches)})")


if __name__ == "__main__":
    main()
