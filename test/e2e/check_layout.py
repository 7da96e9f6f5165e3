#!/usr/bin/env python3
"""End-to-end check of one layout: a forward function with hspmd layouts on
some arguments goes through the training pipeline and the partitioning
pipeline (--loom-partition-pipeline: propagate, insert and lower reshards,
specialise, bucket); the
local function runs on N simulated ranks from the same global inputs as the
global training step on one device, and must match it.

Inputs by argument role (nn.param: N(0, 1/fan_in); nn.state: the first
moment N(0, 1e-4), the second moment |N(0, 1e-4)| (AdamW), step 3; integer
nn.data: tokens in [0, vocab) and targets (7 * token + 3) mod vocab; float
nn.data: N(0, 1)). Checks:
  * every result (loss, updated parameters, optimizer state) against the
    single-device interpreter, norm-wise relative error below --tolerance:
    both against the global function as it stands after the passes (loom-run
    --global-entry) and against the training step before any partitioning
    pass (so a pass that changed the global function is seen);
  * the bytes each rank sends and receives, as the simulator counts them,
    equal --hspmd-comm-report's, line by line;
  * --expect "[RANK] KIND CALLS BYTES" (repeatable): rank RANK (default 0)
    issues exactly CALLS collectives of KIND sending BYTES bytes in all.

Layouts may span several device groups: then every group runs its own
local function on its ranks (rank d is device d), and the report of every
group's function is compared.

With --host-steps K, the partitioned step is also compiled to C++ for the
host target and trained for K steps on N real MPI ranks (loom-run --train
--target host), against K steps of the global step on the interpreter
(loom-run --train, the same seeded initialisation and data): every step's
loss and the final parameters within --host-tolerance (norm-wise relative),
and the bytes and calls each rank's runtime counted equal K times the
communication report's, line by line.

    check_layout.py --opt loom-opt --run loom-run --work-dir DIR \
        --model FILE.mlir --ranks N [--optimizer adamw|sgd] [--f64] [--zero]
        [--layout ARG=LAYOUT ...] [--annotate VALUE=TYPE@LAYOUT ...]
        [--decompose-ce]
        [--expect "all_reduce 1 357888" ...]
        [--host-steps K [--host-tolerance 1e-9] [--targets host,ascend]]

Every comparison fails on NaN or Inf on either side.

--plant-fault FAULT (for the tests that prove these checks bite) plants one
fault: alter-global changes the global function's learning rate by 1e-3
(relative) after the reference is taken, as a faulty pass would
(alter-global-host does the same but skips the simulated ranks' comparison
with the reference, so that the host training's must catch it); nan-param,
loss-1e-6 and miscount make loom-run report a NaN in the first parameter,
every loss 1e-6 too high, or one byte more on rank 0 (LOOM_TEST_FAULT).

--targets host,ascend also trains the same K steps through the Ascend
target on Loom's CPU test double of the CANN libraries (loom-run
--ascend-double), with the same checks, and compares the Ascend run with
the host run (loss and parameters, the same bound).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(cmd[:3])} ... failed:\n"
                 f"{(proc.stdout + proc.stderr)[-3000:]}")
    return proc.stdout


def shape_of(ttype):
    m = re.match(r"tensor<((?:\d+x)*)(\w+)>", ttype)
    dims = [int(d) for d in m.group(1).split("x") if d]
    return dims, m.group(2)


def parse_args_of(text, name):
    """(type, attrs) of every argument of @name in printed IR."""
    m = re.search(r"func\.func @" + re.escape(name) + r"\((.*?)\) ->", text)
    args = []
    for part in re.split(r"(?:^|, )%arg\d+: ", m.group(1))[1:]:
        ttype = re.match(r"tensor<[^>]*>", part).group(0)
        args.append((ttype, part[len(ttype):]))
    return args


def draw_inputs(arguments, seed, vocab, work_dir):
    """Seeded global inputs of a step's arguments ((type, attrs) pairs), by
    role (see the module docstring), saved as WORK_DIR/arg<i>.npy: the
    loom-run --input flags."""
    rng = np.random.default_rng(seed)
    inputs, ints = [], []
    states_seen = {}
    for i, (ttype, attrs) in enumerate(arguments):
        dims, et = shape_of(ttype)
        dtype = {"f32": np.float32, "f64": np.float64, "i64": np.int64,
                 "i32": np.int32}[et]
        if "nn.param" in attrs:
            fan = dims[-2] if len(dims) >= 2 else 1
            value = rng.standard_normal(dims) / np.sqrt(fan)
            if len(dims) == 1:
                value = 1.0 + 0.1 * rng.standard_normal(dims)
        elif "nn.state" in attrs:
            k = int(re.search(r"nn.state = (\d+)", attrs).group(1))
            second = states_seen.get(k, 0) == 1
            states_seen[k] = states_seen.get(k, 0) + 1
            value = 1e-2 * rng.standard_normal(dims)
            if second:
                value = np.abs(value) ** 2
        elif "nn.step" in attrs:
            value = np.array(3)
        elif et.startswith("i"):
            # Token ids, then their targets (one pair per micro-batch
            # shape with micro-batch-shapes).
            if len(ints) % 2 == 1 and list(ints[-1].shape) == list(dims):
                value = (7 * ints[-1] + 3) % vocab
            else:
                value = rng.integers(0, vocab, size=dims)
            ints.append(value)
        else:
            value = rng.standard_normal(dims)
        path = os.path.join(work_dir, f"arg{i}.npy")
        np.save(path, np.asarray(value, dtype=dtype))
        inputs += ["--input", path]
    return inputs


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--opt", "--run", "--work-dir", "--model"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--optimizer", default="adamw")
    ap.add_argument("--f64", action="store_true")
    ap.add_argument("--layout", action="append", default=[],
                    help="ARG=#hspmd.union<...> for the forward argument "
                         "%%ARG")
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--annotate", action="append", default=[],
                    help="NAME=TYPE@LAYOUT: annotate the forward value "
                         "%%NAME")
    ap.add_argument("--zero", action="store_true",
                    help="split every optimizer state along dimension 0 "
                         "(ZeRO)")
    ap.add_argument("--decompose-ce", action="store_true",
                    help="decompose the cross-entropy into reductions "
                         "(--nn-decompose-cross-entropy) so the classes can "
                         "be split (vocabulary-parallel loss)")
    ap.add_argument("--train-options", default="",
                    help="more nn-training-step options of the step under "
                         "test (micro-batches=, clip-norm=, a schedule, "
                         "param-groups=); the reference is the same step "
                         "without micro-batches: one device, the whole batch")
    ap.add_argument("--batch", type=int, default=0,
                    help="the GPT-mini with this batch instead of 8 (every "
                         "tensor<8x...> and the normaliser rescaled)")
    ap.add_argument("--forecast", type=int, default=0,
                    help="give the model a forecast argument (after "
                         "%%targets; one row a sequence, one layer a "
                         "route) with this many replica slots a device, so "
                         "that its expert-parallel layers are placed per "
                         "micro-step (hspmd-moe-placement); the reference "
                         "takes the same argument unplanned")
    ap.add_argument("--tolerance", type=float, default=1e-10)
    ap.add_argument("--vocab", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--host-steps", type=int, default=0)
    ap.add_argument("--host-tolerance", type=float, default=1e-9)
    ap.add_argument("--plant-fault", default="",
                    choices=["", "alter-global", "alter-global-host",
                             "nan-param", "loss-1e-6", "miscount"])
    ap.add_argument("--targets", default="host",
                    help="with --host-steps: the targets to train on, "
                         "comma-separated (host, ascend: on the CPU test "
                         "double of CANN)")
    args = ap.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)

    with open(args.model) as f:
        text = f.read()
    if args.f64:
        text = text.replace("f32", "f64")
    if args.batch:
        text = text.replace("tensor<8x", f"tensor<{args.batch}x")
        text = text.replace("normalizer = 128.0",
                            f"normalizer = {16.0 * args.batch}")
    for spec in args.layout:
        arg, layout = spec.split("=", 1)
        pattern = r"(%" + re.escape(arg) + r": tensor<[^>]*> \{)"
        text, n = re.subn(pattern, r"\g<1>hspmd.layout = " +
                          layout.replace("\\", "\\\\") + ", ", text)
        if n != 1:
            sys.exit(f"error: no argument %{arg} with attributes in the model")
    for spec in args.annotate:
        # NAME=TYPE@LAYOUT: %NAME gets an hspmd.annotate right after its
        # definition, and every later use reads the annotated value.
        name, rest = spec.split("=", 1)
        ttype, layout = rest.split("@", 1)
        out, done = [], False
        for line in text.split("\n"):
            if not done and re.match(r"\s*%" + re.escape(name) + r" = ", line):
                out += [line, f"    %{name}_l = hspmd.annotate %{name} : "
                              f"{ttype} as {layout}"]
                done = True
                continue
            if done:
                line = re.sub(r"%" + re.escape(name) + r"\b(?!_l)",
                              f"%{name}_l", line)
            out.append(line)
        if not done:
            sys.exit(f"error: no value %{name} in the model")
        text = "\n".join(out)
    options = f"optimizer={args.optimizer} lr=1e-2 {args.train_options}"
    # The reference's forward: the same, but an unplanned forecast.
    reference_forward = text
    if args.forecast:
        text, reference_forward = add_forecast(text, args.forecast)
    forward = os.path.join(args.work_dir, "forward.mlir")
    with open(forward, "w") as f:
        f.write(text)
    stepped = os.path.join(args.work_dir, "step.mlir")
    run([args.opt, forward, f"--loom-training-pipeline={options}", "-o",
         stepped])
    # The reference: the training step before any partitioning pass, on
    # the whole batch at once.
    reference = os.path.join(args.work_dir, "reference.mlir")
    whole = re.sub(r"\bmicro-batches=\d+", "", options)
    unplanned = os.path.join(args.work_dir, "reference-forward.mlir")
    with open(unplanned, "w") as f:
        f.write(reference_forward)
    run([args.opt, unplanned, f"--loom-training-pipeline={whole}", "-o",
         reference])
    with open(reference) as f:
        reference_text = f.read()
    if args.plant_fault.startswith("alter-global"):
        altered, n = re.subn(
            r"\blr = ([-+0-9.eE]+) : f64",
            lambda m: f"lr = {float(m.group(1)) * (1 + 1e-3):.17e} : f64",
            reference_text)
        if not n:
            sys.exit("error: --plant-fault alter-global found no learning rate")
        with open(stepped, "w") as f:
            f.write(altered)
    elif args.plant_fault:
        os.environ["LOOM_TEST_FAULT"] = args.plant_fault
    if args.decompose_ce:
        decomposed = os.path.join(args.work_dir, "step-decomposed.mlir")
        run([args.opt, stepped, "--nn-decompose-cross-entropy", "-cse",
             "-o", decomposed])
        stepped = decomposed
    if args.zero:
        # ZeRO: every optimizer state whose dimension 0 divides among the
        # group is split along it; propagation reduce-scatters the gradients
        # into it and all-gathers the updated parameters.
        with open(stepped) as f:
            text = f.read()
        group = "[" + ", ".join(str(d) for d in range(args.ranks)) + "]"

        def split_state(m):
            dims, _ = shape_of(m.group(1))
            if not dims or dims[0] % args.ranks:
                return m.group(0)
            return (f"{m.group(1)} {{hspmd.layout = #hspmd.union<{{{group}: "
                    f"[S0:{args.ranks}]}}>, {m.group(2) or ''}nn.state")
        # (The state may carry its name first: {nn.name = "w.m", nn.state.)
        text = re.sub(r"(tensor<[^>]*>) \{(nn\.name = \"[^\"]*\", )?nn\.state",
                      split_state, text)
        with open(stepped, "w") as f:
            f.write(text)
    lowered = os.path.join(args.work_dir, "spmd.mlir")
    run([args.opt, stepped, "--loom-partition-pipeline", "-o", lowered])
    with open(lowered) as f:
        ir = f.read()
    step = re.search(r"func\.func @(\w+_train_step)\(", ir).group(1)
    if ([t for t, _ in parse_args_of(reference_text, step)] !=
            [t for t, _ in parse_args_of(ir, step)]):
        sys.exit(f"FAIL: the passes changed the arguments of @{step}")

    inputs = draw_inputs(parse_args_of(ir, step), args.seed, args.vocab,
                         args.work_dir)

    # One local function per device group (several when the layouts span
    # groups; loom-run then runs each on its group's ranks), or per cell of
    # devices where pipeline stages' groups overlap.
    locals_ = re.findall(r"func\.func @(" + re.escape(step) +
                         r"_(?:group|cell)\d+(?:_block\d+)?)\(", ir)
    entry = ["--entry", locals_[0]] if len(locals_) == 1 else []
    sim_dir = fresh(os.path.join(args.work_dir, "sim-results"))
    out = run([args.run, "--interpret", lowered, "--simulate",
               str(args.ranks)] + entry + [
               "--global-entry", step, "--tolerance", str(args.tolerance),
               "--comm-stats", "--output-dir", sim_dir] + inputs)
    errors = [float(e) for e in
              re.findall(r"norm-wise relative error (\S+)", out)]
    # The same inputs through the step before partitioning.
    ref_dir = fresh(os.path.join(args.work_dir, "reference-results"))
    run([args.run, "--interpret", reference, "--entry", step, "--output-dir",
         ref_dir] + inputs)
    count = 0
    while os.path.exists(os.path.join(ref_dir, f"result_{count}.npy")):
        count += 1
    if not count or count != len(errors):
        sys.exit(f"FAIL: @{step} before the passes has {count} results, the "
                 f"simulated run {len(errors)}")
    ref_errors = [relative(np.load(os.path.join(sim_dir, f"result_{i}.npy")),
                           np.load(os.path.join(ref_dir, f"result_{i}.npy")))
                  for i in range(count)]
    worst_ref = max(ref_errors)
    if (not worst_ref <= args.tolerance and
            args.plant_fault != "alter-global-host"):
        sys.exit(f"FAIL: the simulated ranks differ from @{step} before "
                 f"partitioning: worst norm-wise relative error "
                 f"{worst_ref:.2e} (bound {args.tolerance:.0e}), result "
                 f"#{ref_errors.index(worst_ref)}")
    sim = [line for line in out.splitlines() if line.startswith("rank ")]
    report = run([args.opt, lowered, "--hspmd-comm-report", "-o",
                  os.devnull])
    rep = []
    for local in locals_:
        section = report.split(f"comm report @{local}:")[1]
        section = section.split("comm report @")[0]
        rep += [line for line in section.splitlines()
                if line.startswith("rank ")]
    rank_order = lambda line: (int(line.split()[1]), line)
    sim, rep = sorted(sim, key=rank_order), sorted(rep, key=rank_order)
    # Sparse collectives move data-dependent bytes: the report bounds them.
    sim_exact, sim_sparse = split_bounded(sim, rep)
    rep_exact, rep_bound = split_bounded(rep, rep)
    if sim_exact != rep_exact:
        sys.exit("FAIL: simulator bytes differ from the comm report:\n" +
                 "\n".join(sim) + "\n---\n" + "\n".join(rep))
    check_within_bounds(sim_sparse, rep_bound, 1, "simulator")
    for line, bound in zip(sim_sparse, rep_bound):
        print(f"simulator {line} (report: {bound.split(': ')[1]})")
    for expect in args.expect:
        fields = expect.split()
        rank = fields.pop(0) if len(fields) == 4 else "0"
        kind, calls, sent = fields
        line = next((l for l in sim if l.startswith(f"rank {rank} {kind}:")),
                    "")
        m = re.search(r"calls (\d+), bytes sent (\d+)", line)
        got = (m.group(1), m.group(2)) if m else ("0", "0")
        if got != (calls, sent):
            sys.exit(f"FAIL: rank {rank} {kind}: calls {got[0]}, bytes sent "
                     f"{got[1]}; expected calls {calls}, bytes sent {sent}")
    # What each rank holds: the local function's parameter and optimizer
    # state arguments are blocks; in all they must be the global bytes over
    # the replication of each (checked per role against the global types).
    def held(name, role):
        total = 0
        for ttype, attrs in parse_args_of(ir, name):
            if role in attrs:
                dims, et = shape_of(ttype)
                total += int(np.prod(dims)) * (8 if et in ("f64", "i64")
                                               else 4)
        return total
    for local in locals_:
        group = "" if len(locals_) == 1 else f" (@{local})"
        for role, label in (("nn.param", "parameter"), ("nn.state", "state")):
            print(f"{label} bytes per rank{group} {held(local, role)} of "
                  f"{held(step, role)}")
    kinds = sorted({l.split()[2].rstrip(":") for l in sim})
    print(f"{step} on {args.ranks} ranks: {len(errors)} results, worst "
          f"norm-wise relative error {max(errors):.2e} (bound "
          f"{args.tolerance:.0e}); collectives {', '.join(kinds) or 'none'}; "
          f"simulator bytes equal the report" +
          (" (sparse ones within its bound)" if sim_sparse else ""))
    for line in sim:
        if line.startswith("rank 0 "):
            print("  " + line)
    print(f"against @{step} before partitioning: {count} results, worst "
          f"norm-wise relative error {worst_ref:.2e} (bound "
          f"{args.tolerance:.0e})")
    if args.host_steps:
        check_host(args, lowered, reference, step, rep)


def relative(a, b):
    """||a - b|| / ||b|| (||a - b|| when b is 0); infinite when a NaN or an
    Inf is anywhere on either side, the shapes differ, or the norms
    overflow."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape or not (np.isfinite(a).all() and
                                  np.isfinite(b).all()):
        return float("inf")
    scale = np.linalg.norm(b)
    error = float(np.linalg.norm(a - b) / (scale if scale else 1.0))
    return error if np.isfinite(error) else float("inf")


def fresh(path):
    """`path` as an empty folder (a file left by an earlier run must not
    stand in for one this run failed to write)."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def add_forecast(text, slots):
    """The model with a forecast argument after %targets (sequences x
    layers x experts, i64: drawn like any integer data, so a forecast unrelated to
    the routing) marked for placement, and the same without the mark."""
    routes = re.findall(r"nn\.moe_route \S+ num_experts = (\d+)", text)
    if not routes:
        sys.exit("error: --forecast needs a model with nn.moe_route")
    # One row a sequence: a micro-batch plans from the sum of its rows.
    rows = re.search(r"%tokens: tensor<(\d+)x", text)
    if not rows:
        sys.exit("error: --forecast needs a %tokens argument")
    ttype = f"tensor<{rows.group(1)}x{len(routes)}x{routes[0]}xi64>"
    # After %targets's attributes (balanced braces: layouts hold some).
    at = text.find("%targets: tensor<")
    brace = text.find("{", at)
    if at < 0 or brace < 0:
        sys.exit("error: --forecast needs a %targets argument")
    depth, end = 0, brace
    while True:
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        end += 1
        if depth == 0:
            break
    head, tail = text[:end] + ", %forecast: " + ttype, text[end:]
    planned = head + f" {{nn.data, nn.moe_forecast = {slots} : i64}}" + tail
    plain = head + " {nn.data}" + tail
    return planned, plain


def train_on(args, lowered, step, target):
    """K steps of the partitioned step on real ranks for `target`: the
    output of loom-run and its output folder."""
    out_dir = fresh(os.path.join(args.work_dir, f"train-{target}"))
    cmd = [args.run, "--interpret", lowered, "--train", "--target", target,
           "--ranks", str(args.ranks), "--global-entry", step, "--steps",
           str(args.host_steps), "--seed", str(args.seed), "--vocab",
           str(args.vocab), "--work-dir", os.path.join(args.work_dir, target),
           "--output-dir", out_dir, "--comm-stats"]
    if target == "ascend":
        cmd.append("--ascend-double")
    return run(cmd), out_dir


def losses(text):
    return [float(v) for v in re.findall(r"^step \d+ loss (\S+)", text, re.M)]


def grad_norms(text):
    return [float(v) for v in
            re.findall(r"^step \d+ loss \S+ grad_norm (\S+)", text, re.M)]


def param_errors(out_dir, ref_dir, what):
    """The worst relative error of the parameters a run wrote
    (param_<k>.npy) against a reference run's, and how many there are."""
    worst, k = 0.0, 0
    while os.path.exists(os.path.join(ref_dir, f"param_{k}.npy")):
        worst = max(worst, relative(
            np.load(os.path.join(out_dir, f"param_{k}.npy")),
            np.load(os.path.join(ref_dir, f"param_{k}.npy"))))
        k += 1
    if not k:
        sys.exit(f"FAIL: no parameters were written ({what})")
    return worst, k


def compare_runs(args, text, out_dir, ref_text, ref_dir, what):
    """Loss and parameter errors of a run against a reference run."""
    loss, ref_loss = losses(text), losses(ref_text)
    if len(ref_loss) != args.host_steps or len(loss) != args.host_steps:
        sys.exit(f"FAIL: expected {args.host_steps} losses, got "
                 f"{len(ref_loss)} and {len(loss)} ({what})")
    loss_error = max(relative([h], [r]) for h, r in zip(loss, ref_loss))
    param_error, k = param_errors(out_dir, ref_dir, what)
    # With clipping, the global gradient norm of every step.
    norm, ref_norm = grad_norms(text), grad_norms(ref_text)
    if len(norm) != len(ref_norm) or (norm and len(norm) != args.host_steps):
        sys.exit(f"FAIL: {len(norm)} gradient norms against "
                 f"{len(ref_norm)} ({what})")
    if norm:
        norm_error = max(relative([h], [r]) for h, r in zip(norm, ref_norm))
        loss_error = max(loss_error, norm_error)
    # `not x <= bound` so that a NaN fails as well.
    if (not loss_error <= args.host_tolerance or
            not param_error <= args.host_tolerance):
        sys.exit(f"FAIL: {what}: loss {loss_error:.2e}, parameters "
                 f"{param_error:.2e} (bound {args.host_tolerance:.0e})")
    return loss_error, param_error, k


def split_bounded(lines, report):
    """`lines` of the kinds the report bounds (`bytes sent at most`, the
    sparse collectives whose bytes depend on the data) apart from the
    others: (others, bounded kinds' lines)."""
    kinds = {" ".join(l.split(":")[0].split()[:3]) for l in report
             if "at most" in l}
    exact = [l for l in lines if " ".join(l.split(":")[0].split()[:3])
             not in kinds]
    return exact, [l for l in lines if l not in exact]


def check_within_bounds(lines, bounds, steps, who):
    """Each of `lines` (`rank R KIND: calls C, bytes sent S, received V`)
    within its report line's bound times `steps`: the same calls, bytes
    within the bound, and some bytes moved (a count at least)."""
    numbers = lambda l: [int(x) for x in re.findall(r"\d+", l.split(":")[1])]
    limit = {l.split(":")[0]: numbers(l) for l in bounds}
    if sorted(limit) != sorted(l.split(":")[0] for l in lines):
        sys.exit(f"FAIL: {who} sparse collectives differ from the comm "
                 "report's:\n" + "\n".join(lines) + "\n---\n" +
                 "\n".join(bounds))
    for line in lines:
        calls, sent, received = numbers(line)
        bcalls, bsent, breceived = limit[line.split(":")[0]]
        # Something moves where anything can (a count at least).
        moved = lambda n, bound: (0 < n or bound == 0) and n <= bound * steps
        if not (calls == bcalls * steps and moved(sent, bsent) and
                moved(received, breceived)):
            sys.exit(f"FAIL: {who} {line} is not within the report's bound "
                     f"x {steps} (calls {bcalls}, bytes sent at most "
                     f"{bsent}, received at most {breceived})")


def check_host(args, lowered, reference, step, report):
    """K steps on real ranks (each of --targets) against K of the step
    before partitioning on the interpreter; with host and ascend, also the
    two against each other."""
    steps = str(args.host_steps)
    ref_dir = fresh(os.path.join(args.work_dir, "train-ref"))
    ref = run([args.run, "--interpret", reference, "--train", "--entry", step,
               "--steps", steps, "--seed", str(args.seed), "--vocab",
               str(args.vocab), "--output-dir", ref_dir])
    # The runtime's counters must be K times the report.
    expected = []
    report, bounds = split_bounded(report, report)
    for line in report:
        m = re.match(r"(rank \d+ \w+): calls (\d+), bytes sent (\d+), "
                     r"received (\d+)", line)
        if m.group(2) == "0":
            continue
        n = args.host_steps
        expected.append(f"{m.group(1)}: calls {int(m.group(2)) * n}, bytes "
                        f"sent {int(m.group(3)) * n}, received "
                        f"{int(m.group(4)) * n}")
    expected.sort()
    runs = {}
    for target in args.targets.split(","):
        text, out_dir = train_on(args, lowered, step, target)
        runs[target] = (text, out_dir)
        loss_error, param_error, k = compare_runs(
            args, text, out_dir, ref, ref_dir,
            f"{target} training differs from the interpreter")
        counted = sorted(l for l in text.splitlines() if l.startswith("rank "))
        counted, sparse = split_bounded(counted, bounds)
        check_within_bounds(sparse, bounds, args.host_steps,
                            f"{target} runtime")
        for line in sparse:
            print(f"{target} {line} in {steps} steps")
        if counted != expected:
            sys.exit(f"FAIL: {target} runtime bytes differ from the comm "
                     "report x steps:\n" + "\n".join(counted) + "\n---\n" +
                     "\n".join(expected))
        print(f"{target}: {steps} steps on {args.ranks} ranks, {k} "
              f"parameters: loss error {loss_error:.2e}, parameter error "
              f"{param_error:.2e} (bound {args.host_tolerance:.0e}); runtime "
              f"bytes equal the report x {steps}")
        clip = re.search(r"clip-norm=(\S+)", args.train_options)
        if clip:
            norms = grad_norms(text)
            clipped = sum(n > float(clip.group(1)) for n in norms)
            # `not x >= y` so that NaN norms fail as well.
            if not (len(norms) == args.host_steps and
                    2 * clipped >= args.host_steps):
                sys.exit(f"FAIL: the gradient norm exceeded clip-norm "
                         f"{clip.group(1)} on {clipped} of {len(norms)} "
                         f"steps; at least half must be clipped")
            print(f"{target}: gradient norm equal to one device's (within "
                  f"the bound), clipped on {clipped} of {steps} steps")
    if "host" in runs and "ascend" in runs:
        loss_error, param_error, _ = compare_runs(
            args, *runs["ascend"], *runs["host"],
            "the ascend target differs from the host target")
        print(f"ascend against host: loss error {loss_error:.2e}, parameter "
              f"error {param_error:.2e} (bound {args.host_tolerance:.0e})")


if __name__ == "__main__":
    main()
