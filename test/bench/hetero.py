#!/usr/bin/env python3
"""Benchmark: layouts over heterogeneous device groups.

1. Compile time across groups. The AdamW training step of a chain of N
   GPT-mini blocks (compile_time.py's model: Megatron-annotated, Q, K, V,
   W1 by columns, Wo, W2, b1 by rows; the step is built by
   `--loom-training-pipeline`, not timed), batch 48, partitioned by the
   passes compile_time.py times (propagate, insert and lower reshards,
   specialise, bucket; the sum of their `--mlir-timing` wall times, best of
   --repeat), on 48 devices laid out

     * heterogeneously: 16 device groups cycling through four kinds,
         DP2 x TP2 (4 devices), TP2 (2), DP2 (2), TP4 (4),
       the batch split across the groups by unequal shares
         6 2 4 3 | 4 3 2 4 | 6 1 4 2 | 2 1 2 2   (sum 48)
       (`#hspmd.union<split(0) shares [...]: ...>`), the Megatron weights
       `replicated` across the groups with each group's own states (TP2:
       S1:2 / S0:2, TP4: S1:4 / S0:4, DP2: D:2, DP2 x TP2: D:2, S1:2 ...);
       propagation makes one part per group and specialisation 16 local
       functions;
     * homogeneously: one group of the same 48 devices, data parallel 24 x
       tensor parallel 2 (compile_time.py's layout).

   Printed per N: seconds of each, the ratio heterogeneous / homogeneous,
   ms per block, and the passes' seconds. The partitioning runs under an
   address-space limit (--max-memory-gb, default 10) so that a compiler
   that needs more fails alone (its error printed verbatim) instead of
   exhausting a shared machine; a failure at one N does not stop the
   others. Before the timed N, --check-blocks (default 2) blocks go through
   the same: the heterogeneous step must come out as 16 group functions and
   run on 48 simulated ranks (`loom-run --simulate 48 --global-entry`)
   within --tolerance of the single-device step.

2. Simulated step time of an asymmetric batch split. Two device groups of
   one device each, a fast one (speed --fast, default 3) and a slow one
   (speed 1), run the GPT-mini AdamW training step (examples/gpt_mini.mlir,
   batch 8, f32) with the parameters replicated across the groups (their
   gradients summed across groups by `hspmd.exchange`), the batch split
     * asymmetrically: the module's `#hspmd.cluster` gives the two devices
       their speeds and `--hspmd-select-shares=alignment=1` chooses the
       shares (3:1 for speeds 3 and 1, i.e. 6:2);
     * evenly: shares [1, 1] as written (4:4).
   Each split is checked first: its partitioned step runs on 2 simulated
   ranks against the single-device step (f32, --tolerance) and its per-rank
   bytes must equal `--hspmd-comm-report`'s.

   Cost model, calibrated on this host:
     * compute(b): the interpreter's time for the single-device training
       step at batch b (`loom-run --interpret --repeat K`, the min per call,
       best of --rounds interleaved rounds; inputs as check_layout.py makes
       them). With one device per group, a group's specialised function is
       this computation at its share, plus the loss scaling by its share
       and the exchanges. compute(b) includes the AdamW update of every
       parameter, which each group does whole (the parameters are
       replicated), so that part does not shrink with the share.
     * a group g with share b_g and speed s_g computes for
       compute(b_g) / s_g;
     * its communication, for every collective kind in the comm report of
       its function: calls x latency + max(bytes sent, bytes received) /
       bandwidth (a full-duplex link; defaults 10 GB/s and 10 us per call,
       --bandwidth-gbs, --latency-us); no overlap with compute;
     * step time = max over groups (compute + communication);
     * ideal = compute(8) / (sum of speeds): the whole step's work spread
       perfectly over the speeds, no communication, no duplicated
       optimizer work.
   Printed: each split's per-group terms and step time, the ratio even /
   asymmetric, the ideal and the ratio asymmetric / ideal, and the best
   split k:8-k under the same model (compute is measured at every batch 1
   to 8; the exchanged bytes do not depend on the split). The interpreter
   is orders of magnitude slower than an accelerator while the link figures
   are an accelerator's, so communication weighs far less here than it
   would on hardware; the figure of interest is how well the shares balance
   compute.

    test/bench/hetero.py [--build DIR] [--blocks 100,1000] [--check-blocks 2]
        [--repeat R] [--max-memory-gb G] [--fast 3] [--bandwidth-gbs 10]
        [--latency-us 10] [--calls K] [--rounds 3] [--only compile|step]
"""

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "bench"))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
import compile_time as ct  # noqa: E402  (also puts test/examples on the path)
import gpt_mini_reference as ref  # noqa: E402
from check_layout import parse_args_of, shape_of  # noqa: E402

# Benchmark 1: the four kinds of group the 16 cycle through, as (devices,
# data-parallel degree, tensor-parallel degree), and the batch shares.
KINDS = [(4, 2, 2), (2, 1, 2), (2, 2, 1), (4, 1, 4)]
GROUPS = 16
SHARES = [6, 2, 4, 3, 4, 3, 2, 4, 6, 1, 4, 2, 2, 1, 2, 2]
BATCH = 48
HOMOGENEOUS = (24, 2)  # dp x tp on the same 48 devices


def run(cmd, what):
    """stdout of cmd; on failure exit with its output's tail verbatim."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: {what} failed (exit {proc.returncode}):\n"
                 f"$ {' '.join(cmd)}\n{(proc.stdout + proc.stderr)[-3000:]}")
    return proc.stdout + proc.stderr


def hetero_layouts(cfg):
    """Megatron layouts of cfg's chain over the 16 groups of KINDS."""
    assert sum(SHARES) == cfg.batch and len(SHARES) == GROUPS
    data, col, row = [], [], []
    first = 0
    for g in range(GROUPS):
        devices, dp, tp = KINDS[g % len(KINDS)]
        assert SHARES[g] % dp == 0, "a share must divide among the group's DP"
        group = "[" + ", ".join(str(d) for d in range(first,
                                                        first + devices)) + "]"
        first += devices

        def states(*axes):
            return "{" + group + ": [" + ", ".join(a for a in axes if a) + "]}"
        s0 = f"S0:{dp}" if dp > 1 else ""
        ddp = f"D:{dp}" if dp > 1 else ""
        dtp = f"D:{tp}" if tp > 1 else ""
        data.append(states(s0, dtp))
        col.append(states(ddp, f"S1:{tp}" if tp > 1 else ""))
        row.append(states(ddp, f"S0:{tp}" if tp > 1 else ""))
    shares = ", ".join(str(s) for s in SHARES)
    return ct.megatron_layouts(
        cfg,
        f"#hspmd.union<split(0) shares [{shares}]: {', '.join(data)}>",
        f"#hspmd.union<replicated: {', '.join(col)}>",
        f"#hspmd.union<replicated: {', '.join(row)}>"), first


def memory_limit(gb):
    """A preexec_fn capping the child's address space at `gb` GiB."""
    def limit():
        cap = int(gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    return limit


def compiler_error(proc):
    """The verbatim head of a failed run's output (up to the stack dump)
    and the stack frames in Loom's own code."""
    text = proc.stdout + proc.stderr
    head, _, dump = text.partition("Stack dump:")
    frames = [line.strip() for line in dump.splitlines()
              if re.search(r"loom::|\(anonymous namespace\)|"
                           r"mlir::ArrayAttr::get|function_interface_impl",
                           line)]
    return (f"exit {proc.returncode}\n{head.strip()[-2000:]}" +
            ("\nStack dump, frames in Loom and the attribute they build:\n"
             + "\n".join(frames[:8]) if frames else ""))


def timed(args, step, repeat):
    """(best seconds, its per-pass seconds) of PASSES on `step` under the
    memory limit, or (None, error text) if a run fails."""
    best, best_passes = None, None
    for _ in range(repeat):
        proc, passes = ct.run_passes(args.opt, step,
                                     memory_limit(args.max_memory_gb))
        if proc.returncode != 0:
            return None, compiler_error(proc)
        seconds = sum(passes.values())
        if best is None or seconds < best:
            best, best_passes = seconds, passes
    return best, best_passes


def build_steps(opt, blocks, work):
    """The heterogeneous and homogeneous AdamW steps of `blocks` blocks."""
    cfg = ref.Config(batch=BATCH, layers=blocks)
    text = ref.module_text(cfg, "f32")
    layouts, devices = hetero_layouts(cfg)
    dp, tp = HOMOGENEOUS
    assert devices == dp * tp
    het = ct.build_step(opt, ct.apply_layouts(text, layouts), work,
                        f"het_{blocks}")
    hom = ct.build_step(opt, ct.annotate(text, cfg, dp, tp), work,
                        f"hom_{blocks}")
    return het, hom


def check_small(args, work):
    """--check-blocks blocks: both partition, the heterogeneous step into
    one function per group, and it runs on 48 simulated ranks."""
    n = args.check_blocks
    het_step, hom_step = build_steps(args.opt, n, work)
    out = os.path.join(work, f"het_{n}_out.mlir")
    run([args.opt, het_step, *ct.PASSES, "-o", out],
        f"partitioning {n} blocks on {GROUPS} groups")
    run([args.opt, hom_step, *ct.PASSES, "-o", os.devnull],
        f"partitioning {n} blocks on one group")
    with open(out) as f:
        ir = f.read()
    local = re.findall(r"func\.func @gpt_mini_train_step_group\d+\(", ir)
    if len(local) != GROUPS:
        sys.exit(f"error: {n} blocks on {GROUPS} groups gave {len(local)} "
                 f"group functions of the step, expected {GROUPS}")
    inputs = make_inputs(ir, "gpt_mini_train_step", work, f"het_{n}")
    sim = run([args.run, "--interpret", out, "--simulate", str(BATCH),
               "--global-entry", "gpt_mini_train_step", "--tolerance",
               str(args.tolerance)] + inputs,
              f"simulating {n} blocks on {GROUPS} groups")
    errors = [float(e) for e in
              re.findall(r"norm-wise relative error (\S+)", sim)]
    print(f"   check, {n} blocks: {len(local)} group functions of the step; "
          f"on {BATCH} simulated ranks {len(errors)} results, worst "
          f"norm-wise relative error {max(errors):.1e} (bound "
          f"{args.tolerance:g})")


def bench_compile(args, work):
    dp, tp = HOMOGENEOUS
    kinds = ", ".join(
        " x ".join(x for x in (f"DP{k[1]}" if k[1] > 1 else "",
                               f"TP{k[2]}" if k[2] > 1 else "") if x) +
        f" ({k[0]})" for k in KINDS)
    print(f"1. compile time across groups: partitioning passes, best of "
          f"{args.repeat}; AdamW step of N GPT-mini blocks, batch {BATCH}, "
          f"48 devices, each run limited to {args.max_memory_gb:g} GiB")
    print(f"   heterogeneous: {GROUPS} groups cycling {kinds}; batch "
          f"shares {SHARES}; Megatron weights replicated across groups")
    print(f"   homogeneous: one group, DP{dp} x TP{tp}")
    check_small(args, work)
    print(f"{'N':>6} {'ops':>8} {'hetero s':>9} {'homo s':>8} "
          f"{'hetero/homo':>12} {'ms/block het':>13} {'ms/block hom':>13}",
          flush=True)
    for n in [int(b) for b in args.blocks.split(",")]:
        start = time.time()
        het_step, hom_step = build_steps(args.opt, n, work)
        het, het_passes = timed(args, het_step, args.repeat)
        hom, hom_passes = timed(args, hom_step, args.repeat)
        ops = ct.count_ops(het_step)
        for path in (het_step, hom_step):
            os.remove(path)
        if het is None or hom is None:
            print(f"{n:>6} {ops:>8} {'FAILED' if het is None else '%.3f' % het:>9} "
                  f"{'FAILED' if hom is None else '%.3f' % hom:>8} "
                  f"{'-':>12} {'-':>13} "
                  f"{'-' if hom is None else '%.2f' % (hom / n * 1e3):>13}")
            for what, err in (("heterogeneous", het_passes),
                              ("homogeneous", hom_passes)):
                if isinstance(err, str):
                    print(f"   error: partitioning {n} blocks "
                          f"({what}) failed, {err}")
        else:
            print(f"{n:>6} {ops:>8} {het:>9.3f} {hom:>8.3f} "
                  f"{het / hom:>12.2f} {het / n * 1e3:>13.2f} "
                  f"{hom / n * 1e3:>13.2f}")
            print("   per pass, s (hetero / homo): " + "; ".join(
                f"{p.replace('Pass', '')} {het_passes.get(p, 0):.3f} / "
                f"{hom_passes.get(p, 0):.3f}"
                for p in sorted(set(het_passes) | set(hom_passes),
                                key=lambda p: -het_passes.get(p, 0))))
        print(f"   (N = {n}: {time.time() - start:.0f} s of wall time, "
              f"training pipelines included)", flush=True)


# Inputs (both benchmarks), then benchmark 2.

def make_inputs(ir, func, work, tag, seed=0, vocab=64):
    """check_layout.py's inputs for @func's arguments: parameters
    N(0, 1/fan_in) (vectors 1 + N(0, 0.01)), AdamW moments N(0, 1e-4) and
    |N(0, 1e-4)|^2, step 3, tokens in [0, vocab), targets (7 t + 3) mod
    vocab. Returns the --input flags."""
    rng = np.random.default_rng(seed)
    flags, ints, seen = [], [], {}
    for i, (ttype, attrs) in enumerate(parse_args_of(ir, func)):
        dims, et = shape_of(ttype)
        dtype = {"f32": np.float32, "f64": np.float64, "i64": np.int64,
                 "i32": np.int32}[et]
        if "nn.param" in attrs:
            value = rng.standard_normal(dims) / np.sqrt(
                dims[-2] if len(dims) >= 2 else 1)
            if len(dims) == 1:
                value = 1.0 + 0.1 * rng.standard_normal(dims)
        elif "nn.state" in attrs:
            k = int(re.search(r"nn.state = (\d+)", attrs).group(1))
            value = 1e-2 * rng.standard_normal(dims)
            if seen.get(k, 0) == 1:
                value = np.abs(value) ** 2
            seen[k] = seen.get(k, 0) + 1
        elif "nn.step" in attrs:
            value = np.array(3)
        elif et.startswith("i"):
            value = (rng.integers(0, vocab, size=dims) if not ints
                     else (7 * ints[0] + 3) % vocab)
            ints.append(value)
        else:
            value = rng.standard_normal(dims)
        path = os.path.join(work, f"{tag}_arg{i}.npy")
        np.save(path, np.asarray(value, dtype=dtype))
        flags += ["--input", path]
    return flags


def rank_lines(text):
    return sorted((line for line in text.splitlines()
                   if line.startswith("rank ")),
                  key=lambda line: (int(line.split()[1]), line))


def comm_of(lines):
    """{rank: [(kind, calls, sent, received)]} from `rank R KIND: calls C,
    bytes sent S, received V` lines."""
    out = {}
    for line in lines:
        m = re.match(r"rank (\d+) (\w+): calls (\d+), bytes sent (\d+), "
                     r"received (\d+)", line)
        out.setdefault(int(m.group(1)), []).append(
            (m.group(2), int(m.group(3)), int(m.group(4)), int(m.group(5))))
    return out


def split_step(args, shares, work):
    """Partition the GPT-mini step over groups {0} (speed --fast) and {1}
    (speed 1) with the batch split by `shares` (None: chosen by
    --hspmd-select-shares from the cluster's speeds); check it on the
    simulator. Returns (shares, {rank: comm}, worst error)."""
    with open(os.path.join(ROOT, "examples", "gpt_mini.mlir")) as f:
        text = f.read()
    cluster = ("module attributes {hspmd.cluster = #hspmd.cluster<["
               f'#hspmd.device<0, "fast", speed = {args.fast:.1f}, mem = 80, '
               'node = 0>, #hspmd.device<1, "slow", speed = 1.0, mem = 80, '
               "node = 0>]>} {")
    assert "module {" in text
    text = text.replace("module {", cluster, 1)
    cfg = ref.Config()
    groups = "{[0]: []}, {[1]: []}"
    written = shares or (1, 1)
    data = f"#hspmd.union<split(0) shares [{written[0]}, {written[1]}]: " \
           f"{groups}>"
    layouts = {"tokens": data, "targets": data}
    for name, _ in cfg.param_shapes():
        layouts[name] = f"#hspmd.union<replicated: {groups}>"
    tag = "selected" if shares is None else f"split{shares[0]}_{shares[1]}"
    step = ct.build_step(args.opt, ct.apply_layouts(text, layouts), work, tag)
    if shares is None:
        selected = os.path.join(work, f"{tag}_shares.mlir")
        run([args.opt, step, "--hspmd-select-shares=alignment=1", "-o",
             selected], "--hspmd-select-shares")
        with open(selected) as f:
            chosen = set(re.findall(r"split\(0\) shares \[(\d+), (\d+)\]",
                                    f.read()))
        if len(chosen) != 1:
            sys.exit(f"error: --hspmd-select-shares left shares {chosen}")
        shares = tuple(int(x) for x in chosen.pop())
        step = selected
    out = os.path.join(work, f"{tag}_out.mlir")
    run([args.opt, step, *ct.PASSES, "-o", out],
        f"partitioning the GPT-mini step split {shares[0]}:{shares[1]}")
    with open(out) as f:
        ir = f.read()
    inputs = make_inputs(ir, "gpt_mini_train_step", work, tag)
    sim = run([args.run, "--interpret", out, "--simulate", "2",
               "--global-entry", "gpt_mini_train_step", "--tolerance",
               str(args.tolerance), "--comm-stats"] + inputs,
              f"simulating the {shares[0]}:{shares[1]} split")
    report = run([args.opt, out, "--hspmd-comm-report", "-o", os.devnull],
                 "--hspmd-comm-report")
    rep = []
    for g in range(2):
        section = report.split(f"comm report @gpt_mini_train_step_group{g}:")
        if len(section) < 2:
            sys.exit(f"error: no comm report for @gpt_mini_train_step_group"
                     f"{g}:\n{report[-2000:]}")
        rep += rank_lines(section[1].split("comm report @")[0])
    rep = sorted(rep, key=lambda line: (int(line.split()[1]), line))
    if rank_lines(sim) != rep:
        sys.exit("error: simulator bytes differ from the comm report:\n" +
                 "\n".join(rank_lines(sim)) + "\n---\n" + "\n".join(rep))
    worst = max(float(e) for e in
                re.findall(r"norm-wise relative error (\S+)", sim))
    return shares, comm_of(rep), worst


def time_compute(args, batches, work):
    """{batch: min seconds per call} of the single-device step."""
    steps = {}
    for b in batches:
        cfg = ref.Config(batch=b)
        step = ct.build_step(args.opt, ref.module_text(cfg, "f32"), work,
                             f"single_b{b}")
        with open(step) as f:
            ir = f.read()
        steps[b] = (step, make_inputs(ir, "gpt_mini_train_step", work,
                                      f"single_b{b}"))
    best = {}
    for _ in range(args.rounds):
        for b, (step, inputs) in steps.items():
            out = run([args.run, "--interpret", step, "--entry",
                       "gpt_mini_train_step", "--repeat", str(args.calls)] +
                      inputs, f"timing the step at batch {b}")
            m = re.search(r"min ([0-9.e+-]+) s", out)
            if not m:
                sys.exit(f"error: no timing line from --repeat:\n{out[-1000:]}")
            best[b] = min(best.get(b, float("inf")), float(m.group(1)))
    return best


def bench_step(args, work):
    fast, slow = args.fast, 1.0
    bw, lat = args.bandwidth_gbs * 1e9, args.latency_us * 1e-6
    print(f"\n2. simulated step time, GPT-mini AdamW step (batch 8, f32) on "
          f"two 1-device groups, speeds {fast:g} (fast) and {slow:g}")
    print(f"   link {args.bandwidth_gbs:g} GB/s, {args.latency_us:g} us per "
          f"call; compute = interpreter time of the single-device step at "
          f"the group's batch (min of {args.calls} calls, best of "
          f"{args.rounds} rounds) / speed")
    splits = {}
    for name, shares in (("asymmetric", None), ("even", (1, 1))):
        shares, comm, worst = split_step(args, shares, work)
        batches = tuple(8 * x // sum(shares) for x in shares)
        label = f"{name} {batches[0]}:{batches[1]}"
        splits[label] = (batches, comm)
        how = ("shares chosen by --hspmd-select-shares" if name ==
               "asymmetric" else "shares as written")
        print(f"   {label} (shares [{shares[0]}, {shares[1]}], {how}): on 2 "
              f"simulated ranks worst norm-wise relative error {worst:.1e} "
              f"(bound {args.tolerance:g}); simulator bytes equal the comm "
              f"report")
    needed = list(range(1, 9))  # every split k:8-k, for the best one
    compute = time_compute(args, needed, work)
    print("   host compute per call: " + ", ".join(
        f"batch {b} {compute[b] * 1e3:.3f} ms" for b in sorted(compute)))
    times = {}
    for label, (batches, comm) in splits.items():
        total = 0
        for g, (speed, b) in enumerate(zip((fast, slow), batches)):
            comp = compute[b] / speed
            calls = sum(c[1] for c in comm.get(g, []))
            sent = sum(c[2] for c in comm.get(g, []))
            recv = sum(c[3] for c in comm.get(g, []))
            com = sum(c[1] * lat + max(c[2], c[3]) / bw
                      for c in comm.get(g, []))
            total = max(total, comp + com)
            kinds = ", ".join(sorted({c[0] for c in comm.get(g, [])}))
            print(f"   {label} group {g} (speed {speed:g}, batch {b}): "
                  f"compute {comp * 1e3:.3f} ms + comm {com * 1e3:.3f} ms "
                  f"({calls} calls {kinds}, {sent} B sent, {recv} B "
                  f"received) = {(comp + com) * 1e3:.3f} ms")
        times[label] = total
    (asym_label, asym), (even_label, even) = times.items()
    # The best split under the model (the exchanged bytes do not depend on
    # the split: every group exchanges its whole gradient).
    asym_comm = next(iter(splits.values()))[1]

    def step_of(k):
        return max(compute[b] / speed + sum(
            c[1] * lat + max(c[2], c[3]) / bw for c in asym_comm.get(g, []))
            for g, (speed, b) in enumerate(((fast, k), (slow, 8 - k))))
    best = min(range(1, 8), key=step_of)
    ideal = compute[8] / (fast + slow)
    print(f"   step time: {asym_label} {asym * 1e3:.3f} ms, {even_label} "
          f"{even * 1e3:.3f} ms, even/asymmetric {even / asym:.2f}")
    print(f"   ideal (batch-8 compute / {fast + slow:g}) {ideal * 1e3:.3f} "
          f"ms, asymmetric/ideal {asym / ideal:.2f}")
    print(f"   best split under the model: {best}:{8 - best}, "
          f"{step_of(best) * 1e3:.3f} ms (asymmetric/best "
          f"{asym / step_of(best):.2f})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build-release"))
    ap.add_argument("--blocks", default="100,1000",
                    help="comma-separated chain lengths to time")
    ap.add_argument("--check-blocks", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--max-memory-gb", type=float, default=10.0)
    ap.add_argument("--fast", type=float, default=3.0)
    ap.add_argument("--bandwidth-gbs", type=float, default=10.0)
    ap.add_argument("--latency-us", type=float, default=10.0)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--only", choices=("compile", "step"))
    args = ap.parse_args()
    args.opt = os.path.join(args.build, "bin", "loom-opt")
    args.run = os.path.join(args.build, "bin", "loom-run")
    for tool in (args.opt, args.run):
        if not os.access(tool, os.X_OK):
            sys.exit(f"error: {tool} not found; build it first "
                     "(test/bench/run.sh does)")
    with tempfile.TemporaryDirectory() as work:
        if args.only != "step":
            bench_compile(args, work)
        if args.only != "compile":
            bench_step(args, work)


if __name__ == "__main__":
    main()
