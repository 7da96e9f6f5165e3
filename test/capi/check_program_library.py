#!/usr/bin/env python3
"""The compiled program as a shared library, driven from C.

Builds one program library per layout of Inputs/mlp.mlir (an f64 MLP on 2
devices: data parallel and tensor parallel) with `loom-opt
--loom-training-pipeline --loom-partition-pipeline` and `loom-run
--emit-library`, then runs the C driver (ProgramLibraryTest.c) under
`mpirun -np 2`: it compiles a third library itself through the compiler's C
API (parse Inputs/mlp_plain.mlir, apply the run configuration
Inputs/mlp_tp.txtpb, run its pipelines, build), loads all three into one
process, sets the same
initial parameters in global form, trains each for --steps steps on the same
batches and reads the parameters back in global form. Each library's losses
and final parameters must equal the single-device interpreter's training of
the unpartitioned step (loom-run --train on the same files) within
--tolerance, norm-wise relative (f64; NaN or Inf fails).

    check_program_library.py --opt loom-opt --run loom-run \
        --driver loom-program-library-test --model Inputs/mlp.mlir \
        --plain-model Inputs/mlp_plain.mlir --config Inputs/mlp_tp.txtpb \
        --work-dir DIR [--steps 5] [--tolerance 1e-10] [--corrupt EPS]
        [--mode train|errors|ranks|compile-errors|hetero
         --hetero-model examples/mlp_hetero.mlir]

--mode hetero trains one library of two device groups' programs on 6 ranks
(f32) against the interpreter instead.
"""

import argparse
import os
import subprocess
import sys

import numpy as np

LAYOUTS = {
    "dp": {"LAYOUT_X": "#hspmd.union<{[0, 1]: [S0:2]}>",
           "LAYOUT_W1": "#hspmd.union<{[0, 1]: [D:2]}>",
           "LAYOUT_W2": "#hspmd.union<{[0, 1]: [D:2]}>"},
    "tp": {"LAYOUT_X": "#hspmd.union<{[0, 1]: [D:2]}>",
           "LAYOUT_W1": "#hspmd.union<{[0, 1]: [S1:2]}>",
           "LAYOUT_W2": "#hspmd.union<{[0, 1]: [S0:2]}>"},
}
# The rollout program's layout (--mode rollout): tensor parallel on the
# other axes than the "tp" training step's, so that both ways move bytes.
ROLLOUT = {"LAYOUT_X": "#hspmd.union<{[0, 1]: [S1:2]}>",
           "LAYOUT_W1": "#hspmd.union<{[0, 1]: [S0:2]}>",
           "LAYOUT_W2": "#hspmd.union<{[0, 1]: [S1:2]}>"}
TRAINING = "--loom-training-pipeline=optimizer=adamw lr=1e-2"


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"FAIL: {' '.join(command)}\n{result.stdout}{result.stderr}")
    return result.stdout


def mpirun(ranks):
    command = ["mpirun", "-np", str(ranks), "--oversubscribe"]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    return command


def relative(a, b):
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("inf")
    norm = np.linalg.norm(b)
    return np.linalg.norm(a - b) / (norm if norm else 1.0)


def main():
    parser = argparse.ArgumentParser()
    for name in ("--opt", "--run", "--driver", "--model", "--work-dir"):
        parser.add_argument(name, required=True)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--tolerance", type=float, default=1e-10)
    parser.add_argument("--corrupt", type=float, default=0.0,
                        help="a planted fault: perturb one reference "
                             "parameter element by this much")
    parser.add_argument("--mode", choices=["train", "errors", "ranks",
                                           "compile-errors", "hetero",
                                           "rollout"],
                        default="train")
    parser.add_argument("--rollout-model",
                        help="--mode rollout: the forward program "
                             "(Inputs/mlp_logits.mlir), compiled in the "
                             "ROLLOUT layout")
    parser.add_argument("--rollout-at", type=int, default=2,
                        help="--mode rollout: the steps before the rollout")
    parser.add_argument("--hetero-model",
                        help="--mode hetero: a model laid out over several "
                             "device groups (examples/mlp_hetero.mlir, 6 "
                             "ranks, f32)")
    parser.add_argument("--plain-model", required=True,
                        help="the model without layouts, which the C "
                             "driver compiles with --config through the "
                             "compiler's C API")
    parser.add_argument("--config", required=True)
    args = parser.parse_args()
    work = os.path.abspath(args.work_dir)
    os.makedirs(work, exist_ok=True)
    with open(args.model) as f:
        model = f.read()

    env = dict(os.environ)
    # MPI keeps memory until the process ends: no leak checks in the ranks.
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    if args.mode == "hetero":
        return hetero(args, work, env)

    # The libraries.
    libraries = []
    for name, layouts in LAYOUTS.items():
        text = model
        for key, value in layouts.items():
            text = text.replace(key, value)
        source = os.path.join(work, f"{name}.mlir")
        with open(source, "w") as f:
            f.write(text)
        step = os.path.join(work, f"{name}-step.mlir")
        run([args.opt, source, TRAINING, "--loom-partition-pipeline",
             "-o", step])
        library = os.path.join(work, f"{name}.so")
        run([args.run, "--interpret", step, "--train", "--target", "host",
             "--ranks", "2", "--global-entry", "mlp_train_step", "--vocab",
             "8", "--emit-library", library])
        libraries.append(library)

    if args.mode == "errors":
        print(run(mpirun(2) + [args.driver, "--errors", libraries[1],
                               "--trace", os.path.join(work, "trace")],
                  env=env), end="")
        return
    if args.mode == "compile-errors":
        print(run(mpirun(1) + [args.driver, "--compile-errors", "--compile",
                               args.plain_model, "--config", args.config],
                  env=env), end="")
        return
    if args.mode == "ranks":
        print(run(mpirun(3) + [args.driver, "--ranks-check", libraries[1]],
                  env=env), end="")
        return

    # The same initial parameters and batches for every run.
    rng = np.random.default_rng(11)
    init, data = os.path.join(work, "init"), os.path.join(work, "data")
    os.makedirs(init, exist_ok=True)
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(init, "param_0.npy"),
            rng.standard_normal((16, 32)) / 4)
    np.save(os.path.join(init, "param_1.npy"),
            rng.standard_normal((32, 8)) / 6)
    np.save(os.path.join(data, "x.npy"),
            rng.standard_normal((args.steps, 8, 16)))
    np.save(os.path.join(data, "labels.npy"),
            rng.integers(0, 8, (args.steps, 8)).astype(np.int64))

    # The reference: the unpartitioned step on one device.
    plain = os.path.join(work, "plain.mlir")
    with open(plain, "w") as f:
        f.write(model.replace("LAYOUT_X", LAYOUTS["dp"]["LAYOUT_W1"])
                .replace("LAYOUT_W1", LAYOUTS["dp"]["LAYOUT_W1"])
                .replace("LAYOUT_W2", LAYOUTS["dp"]["LAYOUT_W1"]))
    step = os.path.join(work, "plain-step.mlir")
    run([args.opt, plain, TRAINING, "-o", step])
    reference = os.path.join(work, "reference")
    log = run([args.run, "--interpret", step, "--train", "--entry",
               "mlp_train_step", "--steps", str(args.steps), "--vocab", "8",
               "--init-npy", init, "--data", data, "--output-dir", reference,
               "--json"])
    import json
    losses = [json.loads(line)["loss"] for line in log.splitlines()
              if line.startswith("{")]
    params = [np.load(os.path.join(reference, f"param_{k}.npy"))
              for k in range(2)]
    if args.corrupt and args.mode != "rollout":  # (there: the logits)
        params[0].flat[0] += args.corrupt

    out = os.path.join(work, "out")
    if args.mode == "rollout":
        return rollout(args, work, env, libraries[1], init, data, out,
                       losses, params)
    # (And "switch": one run switching between the dp and tp libraries every
    # step, loom_program_switch moving the parameters and state.)
    names = list(LAYOUTS) + ["config", "switch"]
    dirs = [str(index) for index in range(len(names) - 1)] + ["switch"]
    for name in dirs:
        os.makedirs(os.path.join(out, name), exist_ok=True)
    # The third library: compiled by the driver through the C API.
    print(run(mpirun(2) + [args.driver, "--init", init, "--data", data,
                           "--steps", str(args.steps), "--out", out,
                           "--compile", args.plain_model, "--config",
                           args.config, "--build",
                           os.path.join(work, "config.so")]
              + libraries, env=env), end="")
    failed = False
    for name, folder in zip(names, dirs):
        with open(os.path.join(out, folder, "losses.txt")) as f:
            got = np.array([float(line) for line in f if line.strip()])
        loss_error = relative(got, np.array(losses))
        param_error = max(
            relative(np.load(os.path.join(out, folder,
                                          f"param_{k}.npy")), params[k])
            for k in range(2))
        ok = (len(got) == args.steps and loss_error <= args.tolerance
              and param_error <= args.tolerance)
        failed |= not ok
        print(f"{name}: {len(got)} steps, loss error {loss_error:.1e}, "
              f"parameter error {param_error:.1e} (bound "
              f"{args.tolerance:.0e}): {'ok' if ok else 'FAIL'}")
    if failed:
        sys.exit(1)


def rollout(args, work, env, train_library, init, data, out, losses, params):
    """The rollout switch of RL post-training: the tensor-parallel training
    library trains; after --rollout-at steps its weights move into a forward
    program of another layout (ROLLOUT), whose logits on the next batch must
    equal the interpreter's forward on the reference weights of that step,
    and back; the training then goes on equal to the reference."""
    with open(args.rollout_model) as f:
        model = f.read()
    text = model
    for key, value in ROLLOUT.items():
        text = text.replace(key, value)
    source = os.path.join(work, "rollout.mlir")
    with open(source, "w") as f:
        f.write(text)
    partitioned = os.path.join(work, "rollout-p.mlir")
    run([args.opt, source, "--loom-partition-pipeline", "-o", partitioned])
    library = os.path.join(work, "rollout.so")
    run([args.run, "--interpret", partitioned, "--target", "host",
         "--global-entry", "mlp_logits", "--emit-library", library])

    # The reference logits: the weights after --rollout-at steps of the
    # unpartitioned training, the next batch, the forward on one device.
    at = args.rollout_at
    reference = os.path.join(work, "reference-at")
    run([args.run, "--interpret", os.path.join(work, "plain-step.mlir"),
         "--train", "--entry", "mlp_train_step", "--steps", str(at),
         "--vocab", "8", "--init-npy", init, "--data", data, "--output-dir",
         reference])
    batch = os.path.join(work, "rollout-x.npy")
    np.save(batch, np.load(os.path.join(data, "x.npy"))[at])
    plain = os.path.join(work, "rollout-plain.mlir")
    text = model
    for key in ROLLOUT:
        text = text.replace(key, LAYOUTS["dp"]["LAYOUT_W1"])
    with open(plain, "w") as f:
        f.write(text)
    logits_dir = os.path.join(work, "reference-logits")
    run([args.run, "--interpret", plain, "--entry", "mlp_logits", "--input",
         batch, "--input", os.path.join(reference, "param_0.npy"), "--input",
         os.path.join(reference, "param_1.npy"), "--output-dir", logits_dir])
    expected = np.load(os.path.join(logits_dir, "result_0.npy"))

    os.makedirs(os.path.join(out, "rollout"), exist_ok=True)
    print(run(mpirun(2) + [args.driver, "--init", init, "--data", data,
                           "--steps", str(args.steps), "--out", out,
                           "--rollout", library, "--rollout-at", str(at),
                           train_library], env=env), end="")
    folder = os.path.join(out, "rollout")
    with open(os.path.join(folder, "losses.txt")) as f:
        got = np.array([float(line) for line in f if line.strip()])
    if args.corrupt:
        expected.flat[0] += args.corrupt
    logit_error = relative(np.load(os.path.join(folder, "logits.npy")),
                           expected)
    loss_error = relative(got, np.array(losses))
    param_error = max(
        relative(np.load(os.path.join(folder, f"param_{k}.npy")), params[k])
        for k in range(2))
    ok = (len(got) == args.steps and max(logit_error, loss_error,
                                         param_error) <= args.tolerance)
    print(f"rollout: logits error {logit_error:.1e}; {len(got)} steps, loss "
          f"error {loss_error:.1e}, parameter error {param_error:.1e} (bound "
          f"{args.tolerance:.0e}): {'ok' if ok else 'FAIL'}")
    if not ok:
        sys.exit(1)


def hetero(args, work, env):
    """One library of two device groups' programs (a 3:1 batch split
    between a TP2 x DP2 group and a TP2 group, exchanges between them) on 6
    ranks, f32: 5 steps against the interpreter within --tolerance."""
    step = os.path.join(work, "hetero-step.mlir")
    run([args.opt, args.hetero_model, TRAINING, "--loom-partition-pipeline",
         "-o", step])
    library = os.path.join(work, "hetero.so")
    run([args.run, "--interpret", step, "--train", "--target", "host",
         "--ranks", "6", "--global-entry", "mlp_loss_train_step",
         "--emit-library", library])
    rng = np.random.default_rng(13)
    init, data = os.path.join(work, "init"), os.path.join(work, "data")
    os.makedirs(init, exist_ok=True)
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(init, "param_0.npy"),
            (rng.standard_normal((128, 512)) / np.sqrt(128)).astype(np.float32))
    np.save(os.path.join(init, "param_1.npy"),
            (rng.standard_normal((512, 64)) / np.sqrt(512)).astype(np.float32))
    np.save(os.path.join(data, "x.npy"),
            rng.standard_normal((args.steps, 64, 128)).astype(np.float32))
    np.save(os.path.join(data, "labels.npy"),
            rng.integers(0, 64, (args.steps, 64)).astype(np.int64))
    plain = os.path.join(work, "hetero-plain.mlir")
    run([args.opt, args.hetero_model, TRAINING, "-o", plain])
    reference = os.path.join(work, "reference")
    log = run([args.run, "--interpret", plain, "--train", "--entry",
               "mlp_loss_train_step", "--steps", str(args.steps),
               "--init-npy", init, "--data", data, "--output-dir", reference,
               "--json"])
    import json
    losses = np.array([json.loads(line)["loss"] for line in log.splitlines()
                       if line.startswith("{")])
    out = os.path.join(work, "out")
    os.makedirs(os.path.join(out, "0"), exist_ok=True)
    print(run(mpirun(6) + [args.driver, "--init", init, "--data", data,
                           "--steps", str(args.steps), "--out", out, library],
              env=env), end="")
    with open(os.path.join(out, "0", "losses.txt")) as f:
        got = np.array([float(line) for line in f if line.strip()])
    loss_error = relative(got, losses)
    param_error = max(
        relative(np.load(os.path.join(out, "0", f"param_{k}.npy")),
                 np.load(os.path.join(reference, f"param_{k}.npy")))
        for k in range(2))
    ok = (len(got) == args.steps and loss_error <= args.tolerance
          and param_error <= args.tolerance)
    print(f"hetero: {len(got)} steps, loss error {loss_error:.1e}, "
          f"parameter error {param_error:.1e} (bound {args.tolerance:.0e}): "
          f"{'ok' if ok else 'FAIL'}")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
