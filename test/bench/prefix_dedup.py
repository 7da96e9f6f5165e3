#!/usr/bin/env python3
"""Prefix-sharing deduplication against the plain step (not in CI).

The model: a GPT (learned positions, pre-norm blocks, GELU MLP of 4x the
width) of width 256, 4 heads, 2 blocks, 1200 positions, vocabulary 256,
trained by PPO's clipped objective (examples/gpt_mini_ppo.mlir's loss) in
f32. Batches of 32 sample slots:

  grpo     4 prompts of 1000 tokens, 8 responses of 100 each per prompt
  agentic  seeded trajectory trees: 4 roots (a 400-token system prompt and
           task), branching in two at every tool call, three calls deep
           (segments of 50-250 tokens): 8 trajectories per root

Side by side, in one run, on 2 host MPI ranks, the same seeded batches:

  plain    the step over padded [32, 1100], data parallel (16 slots/rank);
  dedup    nn-prefix-dedup with 2 bins (one per rank), data parallel.

Both use the same host attention kernels (blocked GEMMs over the keys each
block of queries sees, on causal chains and on the trie: the speedup is
the rewrite's, not the kernel's). Printed per batch shape: the FLOPs each
side executes (matmuls on every row, padding included; attention on the
pairs the blocked kernels compute) and their
ratio against the analytic ratio (every FLOP of the step over T tokens vs
U trie nodes, attention pairs included), the measured step time speedup
(median of --steps, first step excluded as warm-up) against the analytic
ratio (goal: >= 0.8x), each side's arena (activations and buffers, per
rank) and the bins' reuse and balance.

    prefix_dedup.py --build BUILD [--steps 3] [--work-dir DIR] [--quick]

--quick: a smaller shape (prompts of 200, responses of 40, 8 slots) to try
the script.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

import numpy as np

WIDTH, HEADS, BLOCKS, POSITIONS, VOCAB = 256, 4, 2, 1200, 256


def model(batch, seq, width=WIDTH, heads=HEADS, blocks=BLOCKS,
          positions=POSITIONS, vocab=VOCAB, dtype="f32"):
    """A GPT with the PPO objective, as MLIR text."""
    t = lambda *dims: "tensor<" + "x".join(str(d) for d in dims) + "x" + dtype + ">"
    hd = width // heads
    mlp = 4 * width
    bs = f"{batch}x{seq}"
    args = [f"%tokens: tensor<{bs}xi64> {{nn.data}}",
            f"%targets: tensor<{bs}xi64> {{nn.data}}",
            f"%weights: {t(batch, seq)} {{nn.data}}",
            f"%advantages: {t(batch, seq)} {{nn.data}}",
            f"%old_logprobs: {t(batch, seq)} {{nn.data}}",
            f"%wte: {t(vocab, width)} {{nn.param}}",
            f"%wpe: {t(positions, width)} {{nn.param}}"]
    for l in range(blocks):
        args += [f"%l{l}_ln1_g: {t(width)} {{nn.param}}",
                 f"%l{l}_ln1_b: {t(width)} {{nn.param}}"]
        args += [f"%l{l}_w{n}: {t(width, width)} {{nn.param}}"
                 for n in "qkvo"]
        args += [f"%l{l}_ln2_g: {t(width)} {{nn.param}}",
                 f"%l{l}_ln2_b: {t(width)} {{nn.param}}",
                 f"%l{l}_w1: {t(width, mlp)} {{nn.param}}",
                 f"%l{l}_b1: {t(mlp)} {{nn.param}}",
                 f"%l{l}_w2: {t(mlp, width)} {{nn.param}}",
                 f"%l{l}_b2: {t(width)} {{nn.param}}"]
    args += [f"%lnf_g: {t(width)} {{nn.param}}",
             f"%lnf_b: {t(width)} {{nn.param}}",
             f"%whead: {t(width, vocab)} {{nn.param}}"]
    x3, h4 = t(batch, seq, width), t(batch, seq, heads, hd)
    w2 = t(batch, seq)
    body = [
        f"%tok = nn.embedding %wte, %tokens : {t(vocab, width)}, tensor<{bs}xi64>",
        f"%pos_ids = nn.iota dim = 1 : tensor<{bs}xi64>",
        f"%pos = nn.embedding %wpe, %pos_ids : {t(positions, width)}, tensor<{bs}xi64>",
        f"%x0 = nn.add %tok, %pos : {x3}, {x3}"]
    x = "%x0"
    for l in range(blocks):
        p = f"%b{l}_"
        body += [
            f"{p}h = nn.layer_norm {x} scale %l{l}_ln1_g bias %l{l}_ln1_b : {x3}, {t(width)}, {t(width)}"]
        for n in "qkv":
            body += [f"{p}{n} = nn.matmul {p}h, %l{l}_w{n} : {x3}, {t(width, width)}",
                     f"{p}{n}h = nn.reshape {p}{n} : {x3} to {h4}"]
        body += [
            f"{p}att = nn.attention {p}qh, {p}kh, {p}vh mask = causal : {h4}, {h4}, {h4}",
            f"{p}a = nn.reshape {p}att : {h4} to {x3}",
            f"{p}o = nn.matmul {p}a, %l{l}_wo : {x3}, {t(width, width)}",
            f"{p}x1 = nn.add {x}, {p}o : {x3}, {x3}",
            f"{p}h2 = nn.layer_norm {p}x1 scale %l{l}_ln2_g bias %l{l}_ln2_b : {x3}, {t(width)}, {t(width)}",
            f"{p}m = nn.matmul {p}h2, %l{l}_w1 : {x3}, {t(width, mlp)}",
            f"{p}m1 = nn.add {p}m, %l{l}_b1 : {t(batch, seq, mlp)}, {t(mlp)}",
            f"{p}g = nn.gelu {p}m1 : {t(batch, seq, mlp)}",
            f"{p}m2 = nn.matmul {p}g, %l{l}_w2 : {t(batch, seq, mlp)}, {t(mlp, width)}",
            f"{p}m3 = nn.add {p}m2, %l{l}_b2 : {x3}, {t(width)}",
            f"{p}x2 = nn.add {p}x1, {p}m3 : {x3}, {x3}"]
        x = f"{p}x2"
    lg = t(batch, seq, vocab)
    body += [
        f"%hf = nn.layer_norm {x} scale %lnf_g bias %lnf_b : {x3}, {t(width)}, {t(width)}",
        f"%logits = nn.matmul %hf, %whead : {x3}, {t(width, vocab)}",
        f"%lsm = nn.log_softmax %logits dim = 2 : {lg}",
        f"%labels = nn.reshape %targets : tensor<{bs}xi64> to tensor<{bs}x1xi64>",
        f"%lp1 = nn.gather %lsm, %labels dim = 2 : {lg}, tensor<{bs}x1xi64>",
        f"%lp = nn.reshape %lp1 : {t(batch, seq, 1)} to {w2}",
        f"%d = nn.sub %lp, %old_logprobs : {w2}, {w2}",
        f"%ratio = nn.exp %d : {w2}",
        f"%clipped = nn.clamp %ratio {{max = 1.2 : f64, min = 0.8 : f64}} : {w2}",
        f"%u = nn.mul %ratio, %advantages : {w2}, {w2}",
        f"%c = nn.mul %clipped, %advantages : {w2}, {w2}",
        f"%obj = nn.minimum %u, %c : {w2}, {w2}",
        f"%wobj = nn.mul %obj, %weights : {w2}, {w2}",
        f"%sum = nn.reduce sum %wobj dims = [0, 1] : {w2}",
        f"%n = nn.reduce sum %weights dims = [0, 1] : {w2}",
        f"%neg = nn.neg %sum : tensor<{dtype}>",
        f"%loss = nn.div %neg, %n : tensor<{dtype}>, tensor<{dtype}>",
        f"return %loss : tensor<{dtype}>"]
    return ("module {\n  func.func @gpt_ppo(" + ",\n      ".join(args) +
            f") -> tensor<{dtype}> {{\n" +
            "".join(f"    {line}\n" for line in body) + "  }\n}\n")


def sample(tokens, prompt, rng, advantage):
    mask = [0] * prompt + [1] * (len(tokens) - prompt)
    old = [0.0] + [float(v) for v in
                   rng.normal(-np.log(VOCAB), 0.3, len(tokens) - 1)]
    return {"tokens": [int(t) for t in tokens], "loss_mask": mask,
            "advantage": float(advantage), "old_logprobs": old}


def grpo_batch(rng, prompts, group, prompt_len, response_len):
    lines = []
    for _ in range(prompts):
        prompt = list(rng.integers(0, VOCAB, prompt_len))
        adv = rng.normal(size=group)
        adv = (adv - adv.mean()) / (adv.std() + 1e-6)
        for g in range(group):
            response = list(rng.integers(0, VOCAB, response_len))
            lines.append(sample(prompt + response, prompt_len, rng, adv[g]))
    return lines


def agentic_batch(rng, roots, root_len, depth, lo, hi):
    lines = []
    for _ in range(roots):
        leaves = [list(rng.integers(0, VOCAB, root_len))]
        for _ in range(depth):
            leaves = [path + list(rng.integers(0, VOCAB, rng.integers(lo, hi)))
                      for path in leaves for _ in range(2)]
        for path in leaves:
            lines.append(sample(path, root_len, rng, rng.normal()))
    return lines


def run(cmd, env=None):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(cmd[:3])} ... failed:\n"
                 f"{(proc.stdout + proc.stderr)[-3000:]}")
    return proc.stdout


def step_flops(rows, pairs, width=WIDTH, vocab=VOCAB, blocks=BLOCKS):
    """Forward + backward (3x the forward) FLOPs of a step computing `rows`
    token rows and `pairs` attention (query, key) pairs per block."""
    per_row = blocks * 24 * width * width + 2 * width * vocab
    per_pair = blocks * 4 * width
    return 3 * (rows * per_row + pairs * per_pair)


QUERY_BLOCK, RUN_GAP = 64, 16  # runtime/kernels/AttentionKernels.cpp


def blocked_pairs(ends):
    """The (query, key) pairs the host's blocked attention computes on one
    row of `len(ends)` keys under a tree mask (`ends`: subtree ends) or,
    with ends None, a causal mask of that length: per block of QUERY_BLOCK
    queries, its rows times the keys of the runs any of them sees (runs
    closer than RUN_GAP merged)."""
    n = len(ends) if not isinstance(ends, int) else ends
    total = 0
    for i0 in range(0, n, QUERY_BLOCK):
        i1 = min(n, i0 + QUERY_BLOCK)
        if isinstance(ends, int):
            total += (i1 - i0) * i1
            continue
        j = np.arange(i1)
        e = ends[:i1]
        keys = np.nonzero((e >= i0) & (e >= j))[0]
        if keys.size == 0:
            continue
        gaps = np.diff(keys) - 1
        covered = keys[-1] - keys[0] + 1 - gaps[gaps >= RUN_GAP].sum()
        total += (i1 - i0) * int(covered)
    return total


def train(bins, opt, run_tool, forward, data, work, ranks, steps, dedup,
          capacity):
    """Compiles and trains one side; returns (losses, step seconds per
    step (slowest rank), arena bytes per rank)."""
    os.makedirs(work, exist_ok=True)
    src = os.path.join(work, "forward.mlir")
    passes = ["--nn-name-arguments-from-source"]
    if dedup:
        passes.append(f"--nn-prefix-dedup=capacity={capacity} bins={ranks}")
    text = run([opt, forward] + passes)
    group = "[" + ", ".join(str(d) for d in range(ranks)) + "]"
    layout = f"#hspmd.union<{{{group}: [S0:{ranks}]}}>"
    text = re.sub(r"\{nn\.data, nn\.name",
                  "{hspmd.layout = " + layout + ", nn.data, nn.name", text)
    with open(src, "w") as f:
        f.write(text)
    step = os.path.join(work, "step.mlir")
    run([opt, src, "--loom-training-pipeline=optimizer=adamw lr=1e-4",
         "--loom-partition-pipeline", "-o", step])
    host = os.path.join(work, "host")
    shutil.rmtree(host, ignore_errors=True)
    out = run([run_tool, "--interpret", step, "--train", "--target", "host",
               "--ranks", str(ranks), "--steps", str(steps), "--data", data,
               "--work-dir", host])
    loss = [float(v) for v in re.findall(r"^step \d+ loss (\S+)", out, re.M)]
    seconds = None
    for r in range(ranks):
        with open(os.path.join(host, "out", f"rank{r}", "times.txt")) as f:
            t = [float(v) for v in f.read().split()]
        seconds = t if seconds is None else [max(a, b) for a, b in
                                             zip(seconds, t)]
    with open(os.path.join(host, "program.cpp")) as f:
        arena = int(re.search(r"arena of (\d+) bytes per device",
                              f.read()).group(1))
    return loss, seconds, arena


def causal_pairs(length):
    return length * (length + 1) // 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--work-dir", default="/tmp/loom-bench-dedup")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--shapes", default="grpo,agentic")
    args = ap.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    opt, run_tool, batch_tool = (os.path.join(bin_dir, n) for n in
                                 ("loom-opt", "loom-run", "loom-batch"))
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if args.quick:
        prompt_len, response_len, prompts, group = 200, 40, 2, 4
        root_len, depth, lo, hi, roots = 80, 2, 10, 40, 2
    else:
        prompt_len, response_len, prompts, group = 1000, 100, 4, 8
        root_len, depth, lo, hi, roots = 400, 3, 50, 251, 4
    rng = np.random.default_rng(0)
    for shape in args.shapes.split(","):
        work = os.path.join(args.work_dir, shape)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        files, batches = [], []
        for k in range(args.steps):
            if shape == "grpo":
                lines = grpo_batch(rng, prompts, group, prompt_len,
                                   response_len)
            else:
                lines = agentic_batch(rng, roots, root_len, depth, lo, hi)
            batches.append(lines)
            path = os.path.join(work, f"batch{k}.jsonl")
            with open(path, "w") as f:
                f.write("".join(json.dumps(s) + "\n" for s in lines))
            files.append(path)
        slots = len(batches[0])
        seq = max(len(s["tokens"]) for b in batches for s in b)
        # The capacity bucket: the largest bin of any step, rounded up to
        # 64 nodes (one compiled variant for every step of the run).
        data = os.path.join(work, "data")
        probe = run([batch_tool, "pack", data, "--batch", str(slots),
                     "--seq", str(seq), "--capacity", str(slots * seq),
                     "--bins", str(args.ranks), "--vocab", str(VOCAB)] + files)
        largest = max(int(n) for line in probe.splitlines()
                      if "nodes per bin" in line
                      for n in line.split("nodes per bin ")[1]
                      .split(" of")[0].split())
        capacity = -(-largest // 64) * 64
        packed = run([batch_tool, "pack", data, "--batch", str(slots),
                      "--seq", str(seq), "--capacity", str(capacity),
                      "--bins", str(args.ranks), "--vocab", str(VOCAB),
                      "--float", "f32"] + files)
        forward = os.path.join(work, "model.mlir")
        with open(forward, "w") as f:
            f.write(model(slots, seq))

        # Analytic: every token and pair of the batch, against the trie's.
        total = sum(len(s["tokens"]) for s in batches[0])
        plain_pairs = sum(causal_pairs(len(s["tokens"])) for s in batches[0])
        stats = run([batch_tool, "stats", files[0]])
        unique = int(re.search(r"unique U (\d+)", stats).group(1))
        trie_pairs = int(re.search(r"attention pairs \d+ -> (\d+)",
                                   stats).group(1))
        analytic = (step_flops(total, plain_pairs) /
                    step_flops(unique, trie_pairs))
        # Executed: every row of the padded batch / of the packed bins; the
        # pairs the blocked attention computes (causal blocks over every
        # padded row; the trie's blocks over the bins, each padding node
        # seeing itself).
        executed_plain = step_flops(slots * seq, slots * blocked_pairs(seq))
        ends = np.load(os.path.join(data, "trie_subtree_end.npy"))[0]
        executed_dedup = step_flops(ends.size,
                                    sum(blocked_pairs(row) for row in ends))

        plain = train(args.ranks, opt, run_tool, forward, data,
                      os.path.join(work, "plain"), args.ranks, args.steps,
                      False, capacity)
        dedup = train(args.ranks, opt, run_tool, forward, data,
                      os.path.join(work, "dedup"), args.ranks, args.steps,
                      True, capacity)
        loss_gap = max(abs(a - b) / max(abs(b), 1e-30)
                       for a, b in zip(dedup[0], plain[0]))
        t_plain = statistics.median(plain[1][1:] or plain[1])
        t_dedup = statistics.median(dedup[1][1:] or dedup[1])
        speedup = t_plain / t_dedup
        print(f"{shape}: {slots} samples, T {total}, U {unique} (T/U "
              f"{total / unique:.2f}), attention pairs {plain_pairs} -> "
              f"{trie_pairs}; plain [{slots}, {seq}], dedup "
              f"[{args.ranks}, {capacity}]")
        print(f"{shape}: analytic FLOP ratio {analytic:.2f}x; executed "
              f"plain {executed_plain / 1e9:.1f} GFLOP, dedup "
              f"{executed_dedup / 1e9:.1f} GFLOP: "
              f"{executed_plain / executed_dedup:.2f}x (padding and "
              f"recomputed prefixes included)")
        print(f"{shape}: step time plain {t_plain:.3f} s, dedup "
              f"{t_dedup:.3f} s: speedup {speedup:.2f}x = "
              f"{speedup / analytic:.2f} of the analytic ratio (goal >= 0.8)")
        print(f"{shape}: arena per rank plain {plain[2] / 2**20:.1f} MiB, "
              f"dedup {dedup[2] / 2**20:.1f} MiB ({plain[2] / dedup[2]:.2f}x "
              f"less)")
        print(f"{shape}: bins: " + " | ".join(
            l.split(": bins: ")[1] for l in packed.splitlines()
            if "bins:" in l)[:400])
        print(f"{shape}: losses plain {plain[0]} dedup {dedup[0]} (largest "
              f"relative gap {loss_gap:.1e}, f32)")


if __name__ == "__main__":
    main()
