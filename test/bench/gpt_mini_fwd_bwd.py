#!/usr/bin/env python3
"""Benchmark: the reference interpreter's forward+backward throughput on the
GPT-mini, against numpy doing the same computation in the same run.

Loom side: `loom-opt --nn-autodiff` on the model, then `loom-run --interpret
--entry gpt_mini_grad --repeat N` (one process; the first call is not timed,
every call must give the same bits). numpy side: the hand-written forward and
backward of test/examples/gpt_mini_reference.py, in the same element type,
timed in this process. Both see the same weights and batch, and their losses
must agree. Rounds alternate between the two so that noise from the shared
machine hits both; each side's figure is its best round's median call.

Throughput counts the FLOPs of the matmuls and attention products (2 per
multiply-add, backward = 2x forward; Config.matmul_flops), not element-wise
work. Both sides run GEMMs on one thread (the interpreter pins OpenBLAS to
one thread for bitwise reproducibility; numpy is pinned here to match), each
with its own OpenBLAS: Debian's for Loom, the wheel's for numpy. Both are
printed, with the kernel family each picked for this CPU.

    test/bench/gpt_mini_fwd_bwd.py [--build DIR] [--sizes mini,wide]
        [--dtypes f32,f64] [--repeat N] [--rounds R] [--loom-coretype NAME]

--loom-coretype sets OPENBLAS_CORETYPE for loom-run: Debian's OpenBLAS
0.3.21 does not recognise some newer or virtualised CPUs and falls back to
its generic Prescott kernels (the report says which core it picked), which
makes GEMMs several times slower than they need be.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

# One BLAS thread for numpy, as the interpreter uses (set before the import).
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "examples"))
import gpt_mini_reference as ref  # noqa: E402

LOOM_BLAS = []

SIZES = {
    # examples/gpt_mini.mlir
    "mini": ref.Config(),
    # the same model, 8x wider and 8x longer
    "wide": ref.Config(batch=8, seq=128, vocab=512, width=256, heads=8,
                       layers=2, ffn=1024),
}


def check(command, env=None):
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(command)} failed:\n{proc.stderr}")
    return proc.stdout


def bench(args, size, et, work):
    cfg = SIZES[size]
    forward = os.path.join(work, f"{size}_{et}.mlir")
    grad = os.path.join(work, f"{size}_{et}_grad.mlir")
    with open(forward, "w") as f:
        f.write(ref.module_text(cfg, et))
    check([args.opt, forward, "--nn-autodiff", "-o", grad])

    rng = np.random.default_rng(0)
    dtype = {"f32": np.float32, "f64": np.float64}[et]
    params = {k: v.astype(dtype) for k, v in ref.init_params(cfg, rng).items()}
    tokens, targets = ref.synthetic_batch(cfg, rng)
    inputs = []
    for name, value in [("tokens", tokens), ("targets", targets)] + \
            [(n, params[n]) for n, _ in cfg.param_shapes()]:
        path = os.path.join(work, f"{size}_{et}_{name}.npy")
        np.save(path, value)
        inputs += ["--input", path]
    out = os.path.join(work, f"out_{size}_{et}")

    loom_times, numpy_times = [], []
    for _ in range(args.rounds):
        text = check([args.run, "--interpret", grad, "--entry", "gpt_mini_grad",
                      "--repeat", str(args.repeat), "--output-dir", out]
                     + inputs, env=args.loom_env)
        median = re.search(r"median ([0-9.e+-]+) s per call", text)
        loom_times.append(float(median.group(1)))
        LOOM_BLAS[:] = re.findall(r"^blas: (.*)$", text, re.M)
        ref.forward_backward(cfg, params, tokens, targets)  # warm up
        calls = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            loss, _ = ref.forward_backward(cfg, params, tokens, targets)
            calls.append(time.perf_counter() - start)
        numpy_times.append(statistics.median(calls))

    loom_loss = float(np.load(os.path.join(out, "result_0.npy")))
    if abs(loom_loss - float(loss)) > 1e-4 * abs(float(loss)):
        sys.exit(f"error: losses differ: loom {loom_loss}, numpy {loss}")
    flops = cfg.matmul_flops()
    t_loom, t_numpy = min(loom_times), min(numpy_times)
    return flops, t_loom, t_numpy


def numpy_blas():
    try:
        info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        config = " ".join(info.get("openblas configuration", "").split())
        return f"{info['name']} {info.get('version', '')}: {config}"
    except Exception:  # older numpy: no dict mode
        return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build-release"))
    ap.add_argument("--sizes", default="mini,wide")
    ap.add_argument("--dtypes", default="f32,f64")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loom-coretype")
    args = ap.parse_args()
    args.loom_env = dict(os.environ)
    if args.loom_coretype:
        args.loom_env["OPENBLAS_CORETYPE"] = args.loom_coretype
    args.opt = os.path.join(args.build, "bin", "loom-opt")
    args.run = os.path.join(args.build, "bin", "loom-run")
    for tool in (args.opt, args.run):
        if not os.access(tool, os.X_OK):
            sys.exit(f"error: {tool} not found; build it first "
                     f"(test/bench/run.sh does)")

    print(f"GPT-mini forward+backward, {args.rounds} rounds x "
          f"{args.repeat} calls, best round's median call")
    print(f"{'size':6} {'type':4} {'MFLOP':>8} {'loom ms':>9} {'numpy ms':>9} "
          f"{'loom GFLOP/s':>13} {'numpy GFLOP/s':>14} {'loom/numpy':>11}")
    with tempfile.TemporaryDirectory() as work:
        for size in args.sizes.split(","):
            for et in args.dtypes.split(","):
                flops, t_loom, t_numpy = bench(args, size, et, work)
                print(f"{size:6} {et:4} {flops / 1e6:8.1f} {t_loom * 1e3:9.2f} "
                      f"{t_numpy * 1e3:9.2f} {flops / t_loom / 1e9:13.2f} "
                      f"{flops / t_numpy / 1e9:14.2f} "
                      f"{t_numpy / t_loom:11.2f}", flush=True)
    print("loom/numpy > 1: the interpreter is faster than numpy")
    print(f"loom BLAS:  {LOOM_BLAS[0] if LOOM_BLAS else '?'}")
    print(f"numpy BLAS: {numpy_blas()}")


if __name__ == "__main__":
    main()
