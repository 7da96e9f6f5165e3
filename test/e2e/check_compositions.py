#!/usr/bin/env python3
"""Steps of different micro-batch compositions, trained as one stream.

GPT-mini (f64) is built with several compositions of micro-batch shapes
(nn-training-step micro-batch-shapes=C1;C2;..., each composition a list of
ROWSxLENGTH*COUNT holding the forward's 128 tokens): one variant of the
step per composition, every variant taking one data argument per shape of
any composition (no rows where its composition has none). --steps seeded
steps, each of a composition chosen in turn, are written as per-step
folders (DIR/step<n>/tokens_RxL.npy, ...; a shape the step has no
micro-batch of has no file) and trained

  * on the interpreter, each step on the variant its files fit;
  * with --ranks N, data parallel on N real MPI ranks (host target, the
    rows of every micro-batch split across them; one program library per
    variant, parameters and optimizer state moving between them);

against the reference: the plain step (no micro-batches) of a model that
pads every sequence to 16 tokens and every step to 16 rows and gives the
padding zero weight in the cross-entropy, over the same data (causal
attention: a short sequence computes what the first positions of a padded
one do). Every loss, every reported gradient norm and the final parameters
within --tolerance (norm-wise relative; NaN or Inf fails), and every step
reports its composition's tokens. At least two variants must run.

    check_compositions.py --opt loom-opt --run loom-run --model gpt_mini.mlir \\
        --work-dir DIR [--ranks 2] [--plant-fault unweighted]

--plant-fault unweighted gives the padding weight 1 (the check must fail);
stray adds an array of a shape no composition has to step 2, missing drops
one of step 2's arrays (loom-run must refuse both, naming the step).
"""

import argparse
import json
import os
import re
import sys

import numpy as np

from check_layout import fresh, param_errors, relative, run

ROWS = 16  # the padded reference's rows (the most any composition holds)
SEQ = 16   # the longest sequence


def parse(compositions):
    """[[(rows, length, count), ...], ...] from C1;C2;..."""
    out = []
    for text in compositions.split(";"):
        shapes = []
        for entry in text.split(","):
            shape, _, count = entry.partition("*")
            rows, length = (int(v) for v in shape.split("x"))
            shapes.append((rows, length, int(count or 1)))
        out.append(shapes)
    return out


def padded_model(text):
    """The model at ROWS x SEQ with a weights argument on the loss."""
    text = text.replace("tensor<8x", f"tensor<{ROWS}x")
    text = text.replace(
        f"%targets: tensor<{ROWS}x{SEQ}xi64> {{nn.data}},",
        f"%targets: tensor<{ROWS}x{SEQ}xi64> {{nn.data}},\n"
        f"      %weights: tensor<{ROWS}x{SEQ}xf64> {{nn.data}},")
    text, n = re.subn(r"nn\.cross_entropy %logits, %targets",
                      "nn.cross_entropy %logits, %targets weights %weights",
                      text)
    text = re.sub(rf"(tensor<{ROWS}x{SEQ}x64xf64>, "
                  rf"tensor<{ROWS}x{SEQ}xi64>)$",
                  rf"\1, tensor<{ROWS}x{SEQ}xf64>", text, flags=re.M)
    if n != 1 or "%weights" not in text:
        sys.exit("error: no cross-entropy to weight in the model")
    return text


def write_steps(args, compositions, mixed_dir, padded_dir):
    """Per-step folders for both sides; the composition of each step."""
    rng = np.random.default_rng(args.seed)
    used = []
    for n in range(1, args.steps + 1):
        c = (n - 1) % len(compositions)
        used.append(c)
        mixed = fresh(os.path.join(mixed_dir, f"step{n}"))
        padded = fresh(os.path.join(padded_dir, f"step{n}"))
        tokens = rng.integers(0, 64, (ROWS, SEQ))
        targets = rng.integers(0, 64, (ROWS, SEQ))
        weights = np.zeros((ROWS, SEQ))
        row = 0
        for rows, length, count in compositions[c]:
            take = rows * count
            tok = rng.integers(0, 64, (take, length))
            tgt = (7 * tok + 3) % 64
            np.save(os.path.join(mixed, f"tokens_{rows}x{length}.npy"), tok)
            np.save(os.path.join(mixed, f"targets_{rows}x{length}.npy"), tgt)
            tokens[row:row + take, :length] = tok
            targets[row:row + take, :length] = tgt
            weights[row:row + take, :length] = 1.0
            if args.plant_fault == "unweighted":
                weights[row:row + take, :] = 1.0
            row += take
        if row > ROWS:
            sys.exit(f"error: composition {c + 1} holds {row} rows; the "
                     f"padded reference has {ROWS}")
        np.save(os.path.join(padded, "tokens.npy"), tokens)
        np.save(os.path.join(padded, "targets.npy"), targets)
        np.save(os.path.join(padded, "weights.npy"), weights)
    step2 = os.path.join(mixed_dir, "step2")
    if args.plant_fault == "stray":
        # A shape no composition has: no variant reads it.
        np.save(os.path.join(step2, "tokens_8x4.npy"),
                rng.integers(0, 64, (8, 4)))
    if args.plant_fault == "missing":
        # Half of a micro-batch: its tokens without their targets.
        victim = sorted(f for f in os.listdir(step2) if f.startswith("targets"))
        os.remove(os.path.join(step2, victim[0]))
    return used


def train(args, module, data, out, extra=()):
    """The steps' records (loom-run --json) of a run."""
    cmd = [args.run, "--interpret", module, "--train", "--steps",
           str(args.steps), "--seed", str(args.seed), "--data", data,
           "--json", "--output-dir", fresh(out)] + list(extra)
    return [json.loads(line) for line in run(cmd).splitlines()
            if line.startswith("{")]


def check_tokens(args, records, tokens, what):
    """Every step reports the tokens of its composition."""
    got = [r.get("tokens") for r in records]
    want = [tokens[(n - 1) % len(tokens)] for n in range(1, args.steps + 1)]
    if got != want:
        sys.exit(f"FAIL: {what}: the steps report {got} tokens; their "
                 f"compositions hold {want}")


def used_variants(records):
    used = sorted(set(r.get("variant", "") for r in records))
    if len(used) < 2:
        sys.exit(f"FAIL: the steps ran {len(used)} variant(s) "
                 f"({', '.join(used)}); the check needs at least two")
    return used


def compare(args, got, ref, got_dir, ref_dir, what):
    loss = [r["loss"] for r in got]
    ref_loss = [r["loss"] for r in ref]
    norm = [r["grad_norm"] for r in got if "grad_norm" in r]
    ref_norm = [r["grad_norm"] for r in ref if "grad_norm" in r]
    if len(loss) != args.steps or len(ref_loss) != args.steps:
        sys.exit(f"FAIL: expected {args.steps} losses, got {len(loss)} "
                 f"({what}) and {len(ref_loss)} (reference)")
    if len(norm) != args.steps or len(ref_norm) != args.steps:
        sys.exit(f"FAIL: expected {args.steps} gradient norms, got "
                 f"{len(norm)} ({what}) and {len(ref_norm)} (reference)")
    loss_error = max(relative([x], [y]) for x, y in zip(loss, ref_loss))
    norm_error = max(relative([x], [y]) for x, y in zip(norm, ref_norm))
    param_error, k = param_errors(got_dir, ref_dir, what)
    clipped = sum(1 for x in ref_norm if x > args.clip)
    if not max(loss_error, norm_error, param_error) <= args.tolerance:
        sys.exit(f"FAIL: compositions ({what}) differ from the padded "
                 f"step: loss {loss_error:.2e}, gradient norm "
                 f"{norm_error:.2e}, parameters {param_error:.2e} (bound "
                 f"{args.tolerance:.0e})")
    print(f"compositions on {what} against the padded step: {args.steps} "
          f"steps ({clipped} clipped), {k} parameters: loss error "
          f"{loss_error:.2e}, gradient norm error {norm_error:.2e}, "
          f"parameter error {param_error:.2e} (bound {args.tolerance:.0e})")


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--opt", "--run", "--model", "--work-dir"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--compositions",
                    default="2x16*2,4x8*2;2x16*4;4x8*4")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--clip", type=float, default=0.05)
    ap.add_argument("--ranks", type=int, default=0)
    ap.add_argument("--tolerance", type=float, default=1e-10)
    ap.add_argument("--plant-fault", default="")
    args = ap.parse_args()
    work = args.work_dir
    os.makedirs(work, exist_ok=True)
    compositions = parse(args.compositions)
    text = open(args.model).read().replace("f32", "f64")
    options = (f"optimizer=adamw lr=1e-2 weight-decay=0.1 "
               f"clip-norm={args.clip}")

    forward = os.path.join(work, "forward.mlir")
    open(forward, "w").write(text)
    mixed = os.path.join(work, "mixed.mlir")
    run([args.opt, forward, "--nn-name-arguments-from-source",
         f"--loom-training-pipeline={options} "
         f"micro-batch-shapes={args.compositions}", "-o", mixed])
    padded_fwd = os.path.join(work, "padded-forward.mlir")
    open(padded_fwd, "w").write(padded_model(text))
    padded = os.path.join(work, "padded.mlir")
    run([args.opt, padded_fwd, "--nn-name-arguments-from-source",
         f"--loom-training-pipeline={options}", "-o", padded])

    mixed_data = fresh(os.path.join(work, "data-mixed"))
    padded_data = fresh(os.path.join(work, "data-padded"))
    write_steps(args, compositions, mixed_data, padded_data)

    ref_dir = os.path.join(work, "train-padded")
    ref = train(args, padded, padded_data, ref_dir)
    got_dir = os.path.join(work, "train-mixed")
    got = train(args, mixed, mixed_data, got_dir)
    used = used_variants(got)
    tokens = [sum(r * l * c for r, l, c in shapes) for shapes in compositions]
    check_tokens(args, got, tokens, "the interpreter")
    compare(args, got, ref, got_dir, ref_dir,
            f"the interpreter, {len(used)} variants")

    if args.ranks:
        group = "[" + ", ".join(str(d) for d in range(args.ranks)) + "]"
        layout = f"#hspmd.union<{{{group}: [S0:{args.ranks}]}}>"
        stepped = open(mixed).read()
        stepped, n = re.subn(r"\{nn\.data, nn\.name",
                             "{hspmd.layout = " + layout +
                             ", nn.data, nn.name", stepped)
        if not n:
            sys.exit("FAIL: no data arguments to split")
        laid = os.path.join(work, "mixed-laid.mlir")
        open(laid, "w").write(stepped)
        lowered = os.path.join(work, "mixed-ranks.mlir")
        run([args.opt, laid, "--loom-partition-pipeline", "-o", lowered])
        host_dir = os.path.join(work, "train-host")
        host = train(args, lowered, mixed_data, host_dir,
                     ["--target", "host", "--ranks", str(args.ranks),
                      "--work-dir", os.path.join(work, "host")])
        used = used_variants(host)
        check_tokens(args, host, tokens, f"{args.ranks} ranks")
        compare(args, host, ref, host_dir, ref_dir,
                f"{args.ranks} ranks, {len(used)} variants")


if __name__ == "__main__":
    main()
