#!/usr/bin/env python3
"""Gradient checks of `loom-opt --nn-autodiff` by central finite differences.

For every case it builds a small f64 program

    func.func @f(params {nn.param}..., data {nn.data}..., %w {nn.data})
      loss = reduce sum (w * op(params, data))

runs `loom-opt --nn-autodiff` on it and `loom-run --interpret --entry f_grad`
on the result, which returns (loss, dloss/dparam...). The reference is the
central difference (f(p + h e_k) - f(p - h e_k)) / 2h, h = 1e-6, for every
element k of every parameter, evaluated by the interpreter on the forward
@f: one program whose @main calls @f at all 2K perturbed points (one
loom-run process per case).

Metric, per parameter: |grad - fd| <= rtol * |fd| + atol elementwise, with
rtol = 1e-6 and atol = 1e-8 * max|fd| over the case (central differences in
f64 are good to about 1e-10 relative here). Inputs are kept away from kinks
(relu at 0, ties in max/min/clamp/reduce max). Prints one line per case and
exits non-zero on any failure.

    gradcheck.py --opt PATH/loom-opt --run PATH/loom-run --work-dir DIR
                 [--filter NAME] [--corrupt 1e-5]
"""

import argparse
import concurrent.futures
import os
import subprocess
import sys

import numpy as np

H = 1e-6
RTOL = 1e-6
ATOL_FACTOR = 1e-8
# --corrupt: scales the autodiff gradients, to show that the check fails.
CORRUPT = 1.0


def ttype(shape, et="f64"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + et + ">"


def T(array):
    et = {np.dtype(np.float64): "f64", np.dtype(np.int64): "i64",
          np.dtype(np.int32): "i32", np.dtype(np.bool_): "i1"}[array.dtype]
    return ttype(array.shape, et)


class Case:
    """`body` reads %p0.. (params) and %d0.. (data) and defines %y of shape
    `out_shape` (0-d: %y is the loss itself)."""

    def __init__(self, name, params, data, body, out_shape):
        self.name, self.params, self.data = name, params, data
        self.body, self.out_shape = body, tuple(out_shape)


def forward_module(case, weights):
    args = [f"%p{i}: {T(p)} {{nn.param}}" for i, p in enumerate(case.params)]
    args += [f"%d{i}: {T(d)} {{nn.data}}" for i, d in enumerate(case.data)]
    lines = [line.strip() for line in case.body.strip().splitlines()]
    if case.out_shape:
        yt = ttype(case.out_shape)
        args.append(f"%w: {yt} {{nn.data}}")
        dims = ", ".join(str(d) for d in range(len(case.out_shape)))
        lines += [f"%m = nn.mul %y, %w : {yt}, {yt}",
                  f"%l = nn.reduce sum %m dims = [{dims}] : {yt}"]
    else:
        lines.append("%l = nn.add %y, %y0 : tensor<f64>, tensor<f64>")
        lines.insert(0, "%y0 = nn.fill 0.0 : tensor<f64>")
    body = "\n".join("  " + line for line in lines)
    return (f"func.func @f({', '.join(args)}) -> tensor<f64> {{\n{body}\n"
            f"  return %l : tensor<f64>\n}}\n")


def run(command):
    proc = subprocess.run(command, capture_output=True, text=True)
    return proc.returncode, proc.stderr.strip()


def check(case, opt, run_tool, workdir, index, rng):
    directory = os.path.join(workdir, f"{index:03d}")
    os.makedirs(directory, exist_ok=True)
    data = list(case.data)
    if case.out_shape:
        data.append(rng.uniform(-1, 1, case.out_shape))
    forward = forward_module(case, data)
    with open(os.path.join(directory, "f.mlir"), "w") as f:
        f.write(forward)

    def save(name, array):
        path = os.path.join(directory, name)
        np.save(path, array)
        return ["--input", path]

    data_inputs = [a for i, d in enumerate(data) for a in save(f"d{i}.npy", d)]
    param_inputs = [a for i, p in enumerate(case.params)
                    for a in save(f"p{i}.npy", p)]
    # Autodiff, then @f_grad.
    grad_mlir = os.path.join(directory, "grad.mlir")
    rc, err = run([opt, "--nn-autodiff", os.path.join(directory, "f.mlir"),
                   "-o", grad_mlir])
    if rc:
        return False, f"loom-opt --nn-autodiff failed: {err}"
    out = os.path.join(directory, "grad-out")
    rc, err = run([run_tool, "--interpret", grad_mlir, "--entry", "f_grad",
                   "--output-dir", out] + param_inputs + data_inputs)
    if rc:
        return False, f"loom-run --entry f_grad failed on {grad_mlir}: {err}"
    grads = [np.load(os.path.join(out, f"result_{i + 1}.npy")) * CORRUPT
             for i in range(len(case.params))]

    # Central differences: @main calls @f at every perturbed point.
    points, main_args, calls, inputs = [], [], [], []
    for i, p in enumerate(case.params):
        for k in range(p.size):
            for sign in (1, -1):
                point = [q.copy() for q in case.params]
                point[i].flat[k] += sign * H
                points.append(point)
    types = [T(p) for p in case.params] + [T(d) for d in data]
    for n, point in enumerate(points):
        names = []
        for i, q in enumerate(point):
            main_args.append(f"%x{n}_{i}: {T(q)}")
            names.append(f"%x{n}_{i}")
            inputs += save(f"x{n}_{i}.npy", q)
        names += [f"%d{j}" for j in range(len(data))]
        calls.append(f"  %l{n} = func.call @f({', '.join(names)}) : "
                     f"({', '.join(types)}) -> tensor<f64>")
    main_args += [f"%d{j}: {T(d)}" for j, d in enumerate(data)]
    results = ", ".join(f"%l{n}" for n in range(len(points)))
    rtypes = ", ".join(["tensor<f64>"] * len(points))
    module = (forward + f"func.func @main({', '.join(main_args)}) -> ({rtypes}) {{\n"
              + "\n".join(calls) + f"\n  return {results} : {rtypes}\n}}\n")
    fd_mlir = os.path.join(directory, "fd.mlir")
    with open(fd_mlir, "w") as f:
        f.write(module)
    out = os.path.join(directory, "fd-out")
    rc, err = run([run_tool, "--interpret", fd_mlir, "--entry", "main",
                   "--output-dir", out] + inputs + data_inputs)
    if rc:
        return False, f"loom-run on {fd_mlir} failed: {err}"
    losses = [float(np.load(os.path.join(out, f"result_{n}.npy")))
              for n in range(len(points))]
    fds, n = [], 0
    for p in case.params:
        fd = np.zeros(p.shape)
        for k in range(p.size):
            fd.flat[k] = (losses[n] - losses[n + 1]) / (2 * H)
            n += 2
        fds.append(fd)
    scale = max(float(np.max(np.abs(fd))) if fd.size else 0.0 for fd in fds)
    atol = ATOL_FACTOR * scale
    ok, worst = True, 0.0
    for g, fd in zip(grads, fds):
        if g.shape != fd.shape:
            return False, f"gradient of shape {g.shape}, expected {fd.shape}"
        excess = np.abs(g - fd) - (RTOL * np.abs(fd) + atol)
        ok &= bool(np.all(excess <= 0))
        if fd.size:
            worst = max(worst, float(np.max(np.abs(g - fd))) / max(scale, 1e-300))
    return ok, (f"max |grad - fd| / max|fd| {worst:.1e} (rtol {RTOL:g}, "
                f"atol {atol:.1e})" + ("" if ok else f" in {directory}"))


# ----------------------------------------------------------------------------
# Cases
# ----------------------------------------------------------------------------

def away(rng, shape, low=-1.0, high=1.0, gap=0.05, points=()):
    """Uniform values at least `gap` from each of `points`."""
    x = rng.uniform(low, high, shape)
    for _ in range(100):
        bad = np.zeros(np.shape(x), bool)
        for c in points:
            bad |= np.abs(x - c) < gap
        if not bad.any():
            break
        x = np.where(bad, rng.uniform(low, high, np.shape(x)), x)
    return x


def distinct(rng, shape, gap=0.02):
    """Values whose pairwise gaps all exceed `gap` (no ties anywhere)."""
    n = int(np.prod(shape))
    values = np.linspace(-1, 1, n) + rng.uniform(-0.3, 0.3, n) * (2 / max(n, 2)) * 0.5
    return rng.permutation(values).reshape(shape)


def cases(rng):
    out = []
    u = lambda *s, lo=-1.0, hi=1.0: rng.uniform(lo, hi, s)
    # Element-wise binary ops with broadcasting.
    for op in ("add", "sub", "mul", "div", "minimum", "maximum"):
        for sa, sb in (((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)),
                       ((2, 1, 3), (4, 1))):
            a = u(*sa)
            b = u(*sb, lo=0.5, hi=1.5) if op == "div" else u(*sb)
            if op in ("minimum", "maximum"):
                shape = np.broadcast_shapes(sa, sb)
                for _ in range(100):
                    if np.min(np.abs(np.broadcast_to(a, shape) - np.broadcast_to(b, shape))) > 1e-3:
                        break
                    a, b = u(*sa), u(*sb)
            shape = np.broadcast_shapes(sa, sb)
            out.append(Case(f"{op} {sa} {sb}", [a, b], [],
                            f"%y = nn.{op} %p0, %p1 : {T(a)}, {T(b)}", shape))
    # Unary ops.
    for op, lo, hi in (("neg", -2, 2), ("exp", -2, 2), ("log", 0.5, 2),
                       ("sqrt", 0.5, 2), ("rsqrt", 0.5, 2), ("tanh", -2, 2),
                       ("silu", -3, 3), ("sin", -3, 3), ("cos", -3, 3)):
        x = u(3, 5, lo=lo, hi=hi)
        out.append(Case(op, [x], [], f"%y = nn.{op} %p0 : {T(x)}", x.shape))
    x = away(rng, (3, 5), -2, 2, 0.05, (0.0,))
    out.append(Case("relu (away from 0)", [x], [], f"%y = nn.relu %p0 : {T(x)}", x.shape))
    for approx in ("", " approximate = tanh"):
        x = u(3, 5, lo=-3, hi=3)
        out.append(Case(f"gelu{approx}", [x], [], f"%y = nn.gelu %p0{approx} : {T(x)}", x.shape))
    x = away(rng, (4, 5), -1, 1, 0.05, (-0.5, 0.6))
    out.append(Case("clamp (away from the bounds)", [x], [],
                    f"%y = nn.clamp %p0 {{max = 6.0e-01 : f64, min = -5.0e-01 : f64}} : {T(x)}",
                    x.shape))
    c = rng.integers(0, 2, (3, 1)).astype(np.bool_)
    t, f = u(3, 4), u(4)
    out.append(Case("select broadcast", [t, f], [c],
                    f"%y = nn.select %d0, %p0, %p1 : {T(c)}, {T(t)}, {T(f)}", (3, 4)))
    # Reductions.
    x = u(3, 4, 5)
    out.append(Case("reduce sum dims [0, 2]", [x], [],
                    f"%y = nn.reduce sum %p0 dims = [0, 2] : {T(x)}", (4,)))
    out.append(Case("reduce mean dims [1]", [x], [],
                    f"%y = nn.reduce mean %p0 dims = [1] : {T(x)}", (3, 5)))
    x = distinct(rng, (3, 4, 5))
    out.append(Case("reduce max dims [2] (no ties)", [x], [],
                    f"%y = nn.reduce max %p0 dims = [2] : {T(x)}", (3, 4)))
    # Shapes.
    x = u(3, 1)
    out.append(Case("broadcast", [x], [],
                    f"%y = nn.broadcast %p0 : {T(x)} to {ttype((2, 3, 4))}", (2, 3, 4)))
    x = u(2, 3, 4)
    out.append(Case("reshape", [x], [],
                    f"%y = nn.reshape %p0 : {T(x)} to {ttype((6, 4))}", (6, 4)))
    out.append(Case("transpose", [x], [],
                    f"%y = nn.transpose %p0 permutation = [2, 0, 1] : {T(x)}", (4, 2, 3)))
    x = u(5, 6)
    out.append(Case("slice strided", [x], [],
                    f"%y = nn.slice %p0 offsets = [1, 0] sizes = [2, 3] strides = [2, 2] : {T(x)}",
                    (2, 3)))
    a, b = u(2, 3), u(2, 2)
    out.append(Case("concat", [a, b], [],
                    f"%y = nn.concat %p0, %p1 dim = 1 : {T(a)}, {T(b)}", (2, 5)))
    x = u(4, 6)
    idx = rng.integers(0, 6, (4, 3))
    idx[0, :2] = 2  # repeated indices add up
    out.append(Case("gather dim 1 (repeats)", [x], [idx],
                    f"%y = nn.gather %p0, %d0 dim = 1 : {T(x)}, {T(idx)}", (4, 3)))
    table = u(5, 3)
    ids = np.array([[0, 4, 4], [2, 1, 0]], np.int64)
    out.append(Case("embedding (repeated ids)", [table], [ids],
                    f"%y = nn.embedding %p0, %d0 : {T(table)}, {T(ids)}", (2, 3, 3)))
    cube = u(4, 2, 3)
    ids = np.array([3, 0, 3], np.int64)
    out.append(Case("embedding rank-3 table (repeated ids)", [cube], [ids],
                    f"%y = nn.embedding %p0, %d0 : {T(cube)}, {T(ids)}", (3, 2, 3)))
    # Matmul.
    a, b = u(3, 4), u(4, 2)
    out.append(Case("matmul", [a, b], [], f"%y = nn.matmul %p0, %p1 : {T(a)}, {T(b)}", (3, 2)))
    a, b = u(2, 4, 3), u(2, 4)
    out.append(Case("matmul transposed, batch broadcast", [a, b], [],
                    f"%y = nn.matmul %p0, %p1 transpose_lhs transpose_rhs : {T(a)}, {T(b)}",
                    (2, 3, 2)))
    # Norms.
    x = u(3, 6, lo=-2, hi=2)
    for op in ("softmax", "log_softmax"):
        for dim in (0, 1):
            out.append(Case(f"{op} dim {dim}", [x], [],
                            f"%y = nn.{op} %p0 dim = {dim} : {T(x)}", x.shape))
    x, g, bb = u(2, 3, 4, lo=-2, hi=2), u(4, lo=0.5, hi=1.5), u(4)
    out.append(Case("layer_norm scale bias", [x, g, bb], [],
                    f"%y = nn.layer_norm %p0 scale %p1 bias %p2 : {T(x)}, {T(g)}, {T(bb)}",
                    x.shape))
    g2 = u(3, 4, lo=0.5, hi=1.5)
    out.append(Case("layer_norm normalized_dims 2", [x, g2], [],
                    f"%y = nn.layer_norm %p0 scale %p1 {{normalized_dims = 2 : i64}} : {T(x)}, {T(g2)}",
                    x.shape))
    out.append(Case("rms_norm scale", [x, g], [],
                    f"%y = nn.rms_norm %p0 scale %p1 : {T(x)}, {T(g)}", x.shape))
    out.append(Case("rms_norm no scale", [x], [],
                    f"%y = nn.rms_norm %p0 : {T(x)}", x.shape))
    x = u(1, 3, 2, 4)
    pos = np.array([[0, 5, 17]], np.int64)
    out.append(Case("rope", [x], [pos], f"%y = nn.rope %p0, %d0 : {T(x)}, {T(pos)}", x.shape))
    # Attention.
    def attention(name, b, sq, sk, h, hk, d, mask, ends=None, positions=None):
        q, k, v = u(b, sq, h, d), u(b, sk, hk, d), u(b, sk, hk, d)
        data, spelled = [], f"%y = nn.attention %p0, %p1, %p2 mask = {mask}"
        if ends is not None:
            data.append(ends)
            spelled += f" subtree_end %d{len(data) - 1}"
        if positions is not None:
            data.append(positions)
            spelled += f" positions %d{len(data) - 1}"
        spelled += " : " + ", ".join(T(a) for a in [q, k, v] + data)
        out.append(Case(f"attention {name}", [q, k, v], data, spelled, (b, sq, h, d)))
    attention("none", 1, 3, 3, 2, 2, 2, "none")
    attention("causal GQA 4/2", 1, 3, 3, 4, 2, 2, "causal")
    attention("causal positions", 1, 2, 4, 2, 1, 2, "causal",
              positions=np.array([[1, 3]], np.int64))
    # Tree: tokens 0 <- 1 <- 2, 0 <- 3 (depth-first packed): subtree ends.
    attention("tree", 1, 4, 4, 2, 1, 2, "tree", ends=np.array([[3, 2, 2, 3]], np.int64))
    # Two trees per row (0 <- 1, 0 <- 2 <- 3; 4 <- 5), GQA 4/2, queries at
    # chosen tokens.
    attention("tree GQA 4/2 positions", 2, 3, 6, 4, 2, 2, "tree",
              ends=np.array([[3, 1, 3, 3, 5, 5], [5, 5, 5, 5, 5, 5]], np.int64),
              positions=np.array([[3, 1, 5], [0, 4, 2]], np.int64))
    x = u(4, 6)
    out.append(Case("dropout", [x], [],
                    f"%y = nn.dropout %p0 {{rate = 3.0e-01 : f64, seed = 7 : i64}} : {T(x)}",
                    x.shape))
    # Loss.
    logits = u(4, 5, lo=-2, hi=2)
    labels = np.array([1, 0, 4, 2], np.int64)
    weights = np.array([1.0, 0.5, 0.0, 2.0])
    out.append(Case("cross_entropy weights", [logits], [labels, weights],
                    f"%y = nn.cross_entropy %p0, %d0 weights %d1 {{normalizer = 3.5 : f64}} : {T(logits)}, {T(labels)}, {T(weights)}",
                    ()))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opt", required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--filter", default="",
                        help="only the cases whose name contains this")
    parser.add_argument("--corrupt", type=float, default=0.0,
                        help="scale the gradients by 1 + this (self-test)")
    args = parser.parse_args()
    global CORRUPT
    CORRUPT = 1.0 + args.corrupt
    rng = np.random.default_rng(2024)
    all_cases = [c for c in cases(rng) if args.filter in c.name]
    os.makedirs(args.work_dir, exist_ok=True)
    seeds = [np.random.default_rng(i) for i in range(len(all_cases))]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(check, case, args.opt, args.run, args.work_dir, i, seeds[i])
                   for i, case in enumerate(all_cases)]
        outcomes = [f.result() for f in futures]
    failures = 0
    for case, (ok, text) in zip(all_cases, outcomes):
        print(f"{'PASS' if ok else 'FAIL'} gradcheck/{case.name}: {text}")
        failures += not ok
    print(f"gradcheck: {len(all_cases) - failures} of {len(all_cases)} cases passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
