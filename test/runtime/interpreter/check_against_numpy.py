#!/usr/bin/env python3
"""Checks `loom-run --interpret` against numpy, one op family at a time.

For every case it writes random inputs as .npy files, runs loom-run on a small
MLIR function with them, reads the results back and compares them with the
same computation done by numpy in float64 on the same (already rounded) inputs.

Metric, per result:
  * floats: the norm-wise relative error ||out - ref||_2 / ||ref||_2 (absolute
    when ref is all zeros) must be <= 1e-12 for f64, <= 1e-5 for f32 and
    <= 1e-2 for bf16 (NaNs must sit where the reference has them);
  * cases marked exact (casts, data movement, dropout masks), integers and i1:
    bitwise equality.

It prints one line per case and a summary with the largest errors seen, and
exits non-zero when any case fails.

    check_against_numpy.py --tool PATH/TO/loom-run --family NAME --work-dir DIR
"""

import argparse
import concurrent.futures
import math
import os
import re
import subprocess
import sys

import numpy as np

np.seterr(over="ignore", invalid="ignore")

TOLERANCE = {"f64": 1e-12, "f32": 1e-5, "bf16": 1e-2}
FLOAT_TYPES = ("f32", "f64")
NP_DTYPE = {"f32": np.float32, "f64": np.float64, "bf16": np.uint16,
            "i1": np.bool_, "i32": np.int32, "i64": np.int64}


# ----------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------

def bf16_to_f64(bits):
    bits = np.asarray(bits, dtype=np.uint16)
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def f32_to_bf16(values):
    """Round-to-nearest-even float32 -> bf16 bits (no NaNs expected)."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def elem_type(array):
    """The MLIR element type of a numpy array (uint16 holds bf16 bits)."""
    return {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
            np.dtype(np.uint16): "bf16", np.dtype(np.bool_): "i1",
            np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}[array.dtype]


def ttype(shape, et):
    return "tensor<" + "".join(f"{d}x" for d in shape) + et + ">"


def T(array):
    return ttype(array.shape, elem_type(array))


def as_f64(array):
    """What the reference computes on: floats widened to float64."""
    if array.dtype == np.uint16:
        return bf16_to_f64(array)
    if array.dtype in (np.float32, np.float64):
        return array.astype(np.float64)
    return array


def attr(value):
    """An f64 attribute that round-trips the value."""
    return f"{float(value):.17e} : f64"


class Rng:
    def __init__(self, seed):
        self.gen = np.random.default_rng(seed)

    def uniform(self, shape, et, low=-1.0, high=1.0):
        values = self.gen.uniform(low, high, size=shape)
        if et == "bf16":
            return f32_to_bf16(values.astype(np.float32))
        return np.asarray(values, dtype=NP_DTYPE[et])

    def ints(self, shape, et, low, high):
        return np.asarray(self.gen.integers(low, high, size=shape),
                          dtype=NP_DTYPE[et])

    def bools(self, shape):
        return np.asarray(self.gen.integers(0, 2, size=shape), dtype=np.bool_)


class Case:
    """One loom-run invocation and its numpy reference.

    `body` is the function body; it reads the arguments %a0, %a1, ... and
    defines the results %r0, %r1, ....  `reference(*inputs)` gets the inputs
    widened to float64 (integers unchanged) and returns the expected results;
    `out_types` gives the MLIR element type of each result (default: `et`).
    """

    def __init__(self, name, et, inputs, body, reference, out_types=None,
                 exact=False, prelude="", expected_shapes=None):
        self.name = name
        self.et = et
        self.inputs = inputs
        self.body = body
        self.reference = reference
        self.out_types = out_types
        self.exact = exact
        self.prelude = prelude
        self.ops = sorted(set(re.findall(r"\b(nn\.[a-z_]+)", body + prelude)))

    def expected(self):
        out = self.reference(*[as_f64(x) for x in self.inputs])
        return list(out) if isinstance(out, (list, tuple)) else [out]

    def result_types(self, expected):
        return self.out_types or [self.et] * len(expected)


def compare(out, ref, et, exact):
    """Returns (ok, error, text) for one result."""
    if et == "bf16":
        if out.dtype != np.uint16:
            return False, math.inf, f"dtype {out.dtype}, expected bf16 bits"
        out = bf16_to_f64(out)
        if np.asarray(ref).dtype == np.uint16:
            ref = bf16_to_f64(ref)
    ref = np.asarray(ref)
    if out.shape != ref.shape:
        return False, math.inf, f"shape {out.shape}, expected {ref.shape}"
    if et in ("i1", "i32", "i64") or exact:
        if et in ("i1", "i32", "i64") and out.dtype != NP_DTYPE[et]:
            return False, math.inf, f"dtype {out.dtype}, expected {et}"
        if et in FLOAT_TYPES:
            same = np.array_equal(out.astype(NP_DTYPE[et]).view(
                np.uint32 if et == "f32" else np.uint64),
                np.asarray(ref, NP_DTYPE[et]).view(
                    np.uint32 if et == "f32" else np.uint64))
        else:
            same = np.array_equal(out, ref.astype(out.dtype))
        return same, 0.0 if same else math.inf, "bitwise equal" if same else (
            f"differs: got {out.ravel()[:8]} expected {ref.ravel()[:8]}")
    out = out.astype(np.float64)
    ref = ref.astype(np.float64)
    nan_out, nan_ref = np.isnan(out), np.isnan(ref)
    if not np.array_equal(nan_out, nan_ref):
        return False, math.inf, "NaNs differ from the reference"
    diff = np.linalg.norm(np.where(nan_ref, 0, out - ref))
    scale = np.linalg.norm(np.where(nan_ref, 0, ref))
    err = diff / scale if scale > 0 else diff
    tol = TOLERANCE[et]
    return err <= tol, err, f"relerr {err:.2e} <= {tol:g}" if err <= tol else (
        f"relerr {err:.2e} > {tol:g}")


def renumber(text, arg_offset, result_offset, tag):
    """Moves a case's SSA names into a group: %aN and %rN shift by the
    offsets, every other name gets the case's tag."""
    def rename(match):
        name = match.group(1)
        if re.fullmatch(r"a\d+", name):
            return f"%a{int(name[1:]) + arg_offset}"
        if re.fullmatch(r"r\d+", name):
            return f"%r{int(name[1:]) + result_offset}"
        return f"%{tag}_{name}"
    return re.sub(r"%([A-Za-z0-9_]+)", rename, text)


def group_module(cases, expecteds):
    """One function computing all the cases of a group, so that one loom-run
    process checks many cases."""
    args, results, body, preludes = [], [], [], []
    for k, (case, expected) in enumerate(zip(cases, expecteds)):
        arg_offset, result_offset = len(args), len(results)
        args += [T(x) for x in case.inputs]
        results += [ttype(np.shape(e), t)
                    for e, t in zip(expected, case.result_types(expected))]
        body.append(f"// {case.name} [{case.et}]")
        body += case.body.strip().splitlines()
        body[-len(case.body.strip().splitlines()):] = [
            renumber(line, arg_offset, result_offset, f"c{k}")
            for line in case.body.strip().splitlines()]
        if case.prelude and case.prelude not in preludes:
            preludes.append(case.prelude)
    arg_list = ", ".join(f"%a{i}: {t}" for i, t in enumerate(args))
    names = ", ".join(f"%r{i}" for i in range(len(results)))
    lines = "\n".join("  " + line.strip() for line in body)
    return ("\n".join(preludes) +
            f"\nfunc.func @main({arg_list}) -> ({', '.join(results)}) {{\n"
            f"{lines}\n  return {names} : {', '.join(results)}\n}}\n")


def run_group(cases, tool, workdir, index):
    """Runs a group of cases in one loom-run process; returns, per case,
    (ok, {type: largest error}, text)."""
    directory = os.path.join(workdir, f"{index:03d}")
    os.makedirs(directory, exist_ok=True)
    expecteds = [case.expected() for case in cases]
    module = os.path.join(directory, "group.mlir")
    with open(module, "w") as f:
        f.write(group_module(cases, expecteds))
    command = [tool, "--interpret", module,
               "--output-dir", os.path.join(directory, "out")]
    inputs = [x for case in cases for x in case.inputs]
    for i, x in enumerate(inputs):
        path = os.path.join(directory, f"arg{i}.npy")
        np.save(path, x)
        command += ["--input", path]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        text = (f"loom-run exited with {proc.returncode} on {module}:\n"
                f"{proc.stderr.strip()}")
        return [(False, {}, text)] * len(cases)
    outcomes, next_result = [], 0
    for case, expected in zip(cases, expecteds):
        errors, texts, ok = {}, [], True
        for ref, et in zip(expected, case.result_types(expected)):
            out = np.load(os.path.join(directory, "out",
                                       f"result_{next_result}.npy"))
            good, err, text = compare(out, ref, et, case.exact)
            ok &= good
            if et in TOLERANCE and not case.exact:
                errors[et] = max(errors.get(et, 0.0), err)
            texts.append(f"{et} {text}")
            next_result += 1
        outcomes.append((ok, errors, "; ".join(texts) +
                         ("" if ok else f" (result #{next_result - 1} of {module})")))
    return outcomes


# ----------------------------------------------------------------------------
# References
# ----------------------------------------------------------------------------

def softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


erf = np.vectorize(math.erf)


def gelu(x, approximate):
    if approximate:
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
        return 0.5 * x * (1 + np.tanh(inner))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def splitmix64(key, index):
    with np.errstate(over="ignore"):
        z = np.uint64(key) + (index.astype(np.uint64) + np.uint64(1)) * \
            np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def dropout_mask(shape, seed, offset, rate):
    """True where nn.dropout drops, straight from the op doc."""
    index = np.arange(int(np.prod(shape)), dtype=np.uint64)
    key = (seed + offset) % (1 << 64)
    u = (splitmix64(key, index) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return (u < rate).reshape(shape)


def attention_ref(q, k, v, mask="none", subtree_end=None, positions=None,
                  parents=None, scale=None):
    """out[b, i, h] = softmax over visible keys; a query seeing none gives 0.

    For tree masks the visible keys come from `parents` (ancestors-or-self of
    the query's position), not from the subtree_end formula, so the two
    definitions are checked against each other.
    """
    b, sq, h, d = q.shape
    sk, hk, dv = k.shape[1], k.shape[2], v.shape[3]
    scale = 1 / math.sqrt(d) if scale is None else scale
    group = h // hk
    out = np.zeros((b, sq, h, dv))
    for bi in range(b):
        for i in range(sq):
            p = i if positions is None else int(positions[bi, i])
            if mask == "none":
                visible = np.ones(sk, bool)
            elif mask == "causal":
                visible = np.arange(sk) <= p
            else:
                visible = np.zeros(sk, bool)
                node = p if 0 <= p < sk else -1
                while node >= 0:
                    visible[node] = True
                    node = parents[bi][node]
            if not visible.any():
                continue
            for hi in range(h):
                g = hi // group
                s = scale * (k[bi, :, g, :] @ q[bi, i, hi, :])
                s = np.where(visible, s, -np.inf)
                w = np.exp(s - s.max())
                w /= w.sum()
                out[bi, i, hi, :] = w @ v[bi, :, g, :]
    return out


def random_tree(rng, n, roots=1):
    """A forest of `n` tokens packed depth-first: parents and subtree ends."""
    parents, stack = [-1], [0]
    for i in range(1, n):
        if roots > 1 and rng.gen.random() < 0.1:
            parents.append(-1)
            stack = [i]
            continue
        depth = int(rng.gen.integers(0, len(stack)))
        depth = max(depth, len(stack) - 3)  # mostly deep chains
        parents.append(stack[depth])
        stack = stack[:depth + 1] + [i]
    end = list(range(n))
    for i in reversed(range(n)):
        if parents[i] >= 0:
            end[parents[i]] = max(end[parents[i]], end[i])
    return parents, end


def cross_entropy_ref(logits, labels, weights=None, normalizer=1.0):
    flat = logits.reshape(-1, logits.shape[-1])
    lab = labels.reshape(-1)
    w = np.ones(len(lab)) if weights is None else weights.reshape(-1)
    total = 0.0
    for n in range(len(lab)):
        if w[n] == 0:
            continue
        x = flat[n]
        lse = x.max() + math.log(np.sum(np.exp(x - x.max())))
        total += w[n] * (lse - x[lab[n]])
    return np.array(total / normalizer)


def round_int(n, bits):
    """An integer rounded to `bits` significant bits, to nearest even."""
    a = abs(int(n))
    if a.bit_length() <= bits:
        return float(n)
    shift = a.bit_length() - bits
    q, r = divmod(a, 1 << shift)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return math.copysign(float(q << shift), n)


def f64_to_bf16_exact(x):
    """Correctly rounded f64 -> bf16 bits (normal range and specials)."""
    out = []
    for v in np.asarray(x, np.float64).ravel():
        if math.isnan(v) or math.isinf(v) or v == 0:
            out.append(f32_to_bf16(np.float32(v)))
            continue
        m, e = math.frexp(v)            # v = m * 2^e, 0.5 <= |m| < 1
        r = round(m * 256)              # exact ties-to-even on the exact value
        out.append(f32_to_bf16(np.float32(math.ldexp(r, e - 8))))
    return np.array(out, np.uint16).reshape(np.shape(x))


def float_to_int(x, bits):
    out = []
    for v in np.asarray(x, np.float64).ravel():
        if math.isnan(v):
            out.append(0)
        elif v >= 2.0 ** (bits - 1):
            out.append(2 ** (bits - 1) - 1)
        elif v < -2.0 ** (bits - 1):
            out.append(-2 ** (bits - 1))
        else:
            out.append(int(v))
    return np.array(out, np.int32 if bits == 32 else np.int64).reshape(np.shape(x))


# ----------------------------------------------------------------------------
# Families
# ----------------------------------------------------------------------------

BROADCAST_SHAPES = [((4, 8), (4, 8)), ((4, 8), (8,)), ((4, 1), (1, 8)),
                    ((), (3, 5)), ((2, 1, 3), (4, 1))]


def family_elementwise(rng):
    cases = []
    binary = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
              "div": np.divide, "minimum": np.minimum, "maximum": np.maximum}
    for et in FLOAT_TYPES:
        for op, fn in binary.items():
            for sa, sb in BROADCAST_SHAPES:
                a = rng.uniform(sa, et)
                b = rng.uniform(sb, et, 0.5, 1.5) if op == "div" else rng.uniform(sb, et)
                cases.append(Case(
                    f"{op} {sa} {sb}", et, [a, b],
                    f"%r0 = nn.{op} %a0, %a1 : {T(a)}, {T(b)}",
                    lambda a, b, fn=fn: fn(a, b)))
        unary = {"neg": (np.negative, -2, 2), "exp": (np.exp, -2, 2),
                 "log": (np.log, 0.5, 2), "sqrt": (np.sqrt, 0.5, 2),
                 "rsqrt": (lambda x: 1 / np.sqrt(x), 0.5, 2),
                 "tanh": (np.tanh, -2, 2), "relu": (lambda x: np.maximum(x, 0), -2, 2),
                 "silu": (lambda x: x / (1 + np.exp(-x)), -4, 4),
                 "sin": (np.sin, -3, 3), "cos": (np.cos, -3, 3)}
        for op, (fn, lo, hi) in unary.items():
            x = rng.uniform((3, 7), et, lo, hi)
            cases.append(Case(f"{op}", et, [x],
                              f"%r0 = nn.{op} %a0 : {T(x)}",
                              lambda x, fn=fn: fn(x)))
        for approx in ("none", "tanh"):
            x = rng.uniform((5, 6), et, -4, 4)
            spelled = "" if approx == "none" else " approximate = tanh"
            cases.append(Case(f"gelu {approx}", et, [x],
                              f"%r0 = nn.gelu %a0{spelled} : {T(x)}",
                              lambda x, t=approx == "tanh": gelu(x, t)))
        x = rng.uniform((4, 9), et, -2, 2)
        cases.append(Case("clamp", et, [x],
                          f"%r0 = nn.clamp %a0 {{max = {attr(0.75)}, min = {attr(-0.5)}}} : {T(x)}",
                          lambda x: np.clip(x, -0.5, 0.75)))
        # Comparisons see ties (small integers as floats), broadcasting, NaN.
        a = rng.ints((4, 1), "i32", 0, 3).astype(NP_DTYPE[et])
        b = rng.ints((1, 5), "i32", 0, 3).astype(NP_DTYPE[et])
        a[0, 0] = np.nan
        preds = {"eq": np.equal, "ne": np.not_equal, "lt": np.less,
                 "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}
        for p, fn in preds.items():
            cases.append(Case(f"compare {p} with NaN", et, [a, b],
                              f"%r0 = nn.compare {p}, %a0, %a1 : {T(a)}, {T(b)}",
                              lambda a, b, fn=fn: fn(a, b), out_types=["i1"]))
        c = rng.bools((4, 1))
        t = rng.uniform((4, 5), et)
        f = rng.uniform((), et)
        cases.append(Case("select broadcast", et, [c, t, f],
                          f"%r0 = nn.select %a0, %a1, %a2 : {T(c)}, {T(t)}, {T(f)}",
                          lambda c, t, f: np.where(c, t, f)))
    for it in ("i32", "i64"):
        a, b = rng.ints((3, 4), it, -2, 3), rng.ints((4,), it, -2, 3)
        cases.append(Case(f"compare le {it}", it, [a, b],
                          f"%r0 = nn.compare le, %a0, %a1 : {T(a)}, {T(b)}",
                          lambda a, b: a <= b, out_types=["i1"]))
        c = rng.bools((3, 4))
        cases.append(Case(f"select {it}", it, [c, a, b],
                          f"%r0 = nn.select %a0, %a1, %a2 : {T(c)}, {T(a)}, {T(b)}",
                          lambda c, a, b: np.where(c, a, b)))
    return cases


def family_cast(rng):
    cases = []
    specials = [0.0, -0.0, 1.5, -1.5, 2.75, -2.75, 1e10, -1e10, 3e9, -3e9,
                np.nan, np.inf, -np.inf]

    def add(name, x, to, ref):
        cases.append(Case(name, to, [x],
                          f"%r0 = nn.cast %a0 : {T(x)} to {ttype(x.shape, to)}",
                          lambda _: ref, exact=True))

    f32 = np.concatenate([rng.uniform((20,), "f32", -100, 100),
                          np.array(specials, np.float32)])
    f64 = np.concatenate([rng.uniform((20,), "f64", -100, 100),
                          np.array(specials + [1e300, 1 + 2.0 ** -8 + 2.0 ** -40,
                                               1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8],
                                   np.float64)])
    add("f32 to f64", f32, "f64", f32.astype(np.float64))
    add("f64 to f32", f64, "f32", f64.astype(np.float32))
    add("f32 to bf16", f32[~np.isnan(f32)], "bf16", f32_to_bf16(f32[~np.isnan(f32)]))
    add("f64 to bf16 (one rounding)", f64[~np.isnan(f64)], "bf16",
        f64_to_bf16_exact(f64[~np.isnan(f64)]))
    bf = f32_to_bf16(rng.uniform((16,), "f32", -300, 300))
    add("bf16 to f32", bf, "f32", bf16_to_f64(bf).astype(np.float32))
    add("bf16 to f64", bf, "f64", bf16_to_f64(bf))
    add("f32 to i32 (truncate, saturate, NaN to 0)", f32, "i32", float_to_int(f32, 32))
    add("f64 to i64", f64, "i64", float_to_int(f64, 64))
    add("f64 to i32", f64, "i32", float_to_int(f64, 32))
    add("f32 to i1", f32, "i1", f32 != 0)
    ints = np.array([0, 1, -1, 7, 2 ** 31 - 1, -2 ** 31, 2 ** 40 + 3, -(2 ** 33),
                     2 ** 60 + 2 ** 36 + 1, 2 ** 62 + 2 ** 38, -(2 ** 63),
                     2 ** 63 - 1, 16777217, 16777219], np.int64)
    add("i64 to f32 (one rounding)", ints, "f32",
        np.array([round_int(n, 24) for n in ints], np.float32))
    add("i64 to f64", ints, "f64", np.array([round_int(n, 53) for n in ints]))
    add("i64 to bf16 (one rounding)", ints, "bf16",
        f32_to_bf16(np.array([round_int(n, 8) for n in ints], np.float32)))
    add("i64 to i32 (wraps)", ints, "i32",
        np.array([((int(n) + 2 ** 31) % 2 ** 32) - 2 ** 31 for n in ints], np.int32))
    add("i64 to i1", ints, "i1", ints != 0)
    i32 = rng.ints((10,), "i32", -1000, 1000)
    add("i32 to i64", i32, "i64", i32.astype(np.int64))
    add("i32 to f32", i32, "f32", i32.astype(np.float32))
    b = rng.bools((9,))
    add("i1 to f32", b, "f32", b.astype(np.float32))
    add("i1 to i64", b, "i64", b.astype(np.int64))
    return cases


def family_reduce(rng):
    cases = []
    kinds = {"sum": np.sum, "mean": np.mean, "max": np.max}
    for et in FLOAT_TYPES:
        x = rng.uniform((3, 4, 5), et)
        for kind, fn in kinds.items():
            for dims in ([1], [0, 2], [2, 0], [0, 1, 2]):
                for keep in (False, True):
                    spelled = " keep_dims" if keep else ""
                    cases.append(Case(
                        f"{kind} dims={dims}{spelled}", et, [x],
                        f"%r0 = nn.reduce {kind} %a0 dims = {dims}{spelled} : {T(x)}",
                        lambda x, fn=fn, d=tuple(dims), k=keep: fn(x, axis=d, keepdims=k)))
    return cases


def family_matmul(rng):
    cases = []
    shapes = [  # lhs, rhs, transpose_lhs, transpose_rhs
        ((4, 5), (5, 3), False, False), ((5, 4), (5, 3), True, False),
        ((4, 5), (3, 5), False, True), ((5, 4), (3, 5), True, True),
        ((2, 4, 5), (2, 5, 3), False, False),
        ((2, 1, 4, 5), (3, 5, 6), False, False),
        ((4, 5), (2, 5, 3), False, False), ((3, 2, 5, 4), (1, 3, 5), True, True),
        ((1, 1), (1, 1), False, False), ((70, 65), (65, 66), False, False)]
    for et in FLOAT_TYPES:
        for sa, sb, ta, tb in shapes:
            a, b = rng.uniform(sa, et), rng.uniform(sb, et)
            flags = (" transpose_lhs" if ta else "") + (" transpose_rhs" if tb else "")

            def ref(a, b, ta=ta, tb=tb):
                return np.matmul(np.swapaxes(a, -1, -2) if ta else a,
                                 np.swapaxes(b, -1, -2) if tb else b)
            cases.append(Case(f"{sa} x {sb}{flags}", et, [a, b],
                              f"%r0 = nn.matmul %a0, %a1{flags} : {T(a)}, {T(b)}", ref))
    return cases


def family_shape(rng):
    cases = []
    for et in ("f32", "f64", "bf16", "i1", "i32", "i64"):
        def data(shape):
            if et == "i1":
                return rng.bools(shape)
            if et in ("i32", "i64"):
                return rng.ints(shape, et, -50, 50)
            return rng.uniform(shape, et)
        x = data((4,))
        cases.append(Case("broadcast numpy [4] -> [3, 4]", et, [x],
                          f"%r0 = nn.broadcast %a0 : {T(x)} to {ttype((3, 4), et)}",
                          lambda x: np.broadcast_to(x, (3, 4)), exact=True))
        x = data((4, 1))
        cases.append(Case("broadcast numpy [4, 1] -> [2, 4, 6]", et, [x],
                          f"%r0 = nn.broadcast %a0 : {T(x)} to {ttype((2, 4, 6), et)}",
                          lambda x: np.broadcast_to(x, (2, 4, 6)), exact=True))
        x = data((4,))
        cases.append(Case("broadcast_dims [4] -> [4, 3] dims [0]", et, [x],
                          f"%r0 = nn.broadcast %a0 broadcast_dims = [0] : {T(x)} to {ttype((4, 3), et)}",
                          lambda x: np.broadcast_to(x[:, None], (4, 3)), exact=True))
        x = data((3, 1))
        cases.append(Case("broadcast_dims [3, 1] -> [3, 2, 5] dims [0, 1]", et, [x],
                          f"%r0 = nn.broadcast %a0 broadcast_dims = [0, 1] : {T(x)} to {ttype((3, 2, 5), et)}",
                          lambda x: np.broadcast_to(x[:, :, None], (3, 2, 5)), exact=True))
        x = data((2, 3, 4))
        cases.append(Case("reshape", et, [x],
                          f"%r0 = nn.reshape %a0 : {T(x)} to {ttype((6, 4), et)}",
                          lambda x: x.reshape(6, 4), exact=True))
        x = data((2, 3, 4, 5))
        cases.append(Case("transpose [0, 2, 1, 3]", et, [x],
                          f"%r0 = nn.transpose %a0 permutation = [0, 2, 1, 3] : {T(x)}",
                          lambda x: np.transpose(x, (0, 2, 1, 3)), exact=True))
        cases.append(Case("transpose [3, 0, 2, 1]", et, [x],
                          f"%r0 = nn.transpose %a0 permutation = [3, 0, 2, 1] : {T(x)}",
                          lambda x: np.transpose(x, (3, 0, 2, 1)), exact=True))
        x = data((5, 8, 3))
        cases.append(Case("slice strided", et, [x],
                          f"%r0 = nn.slice %a0 offsets = [1, 2, 0] sizes = [2, 3, 3] strides = [2, 2, 1] : {T(x)}",
                          lambda x: x[1:5:2, 2:8:2, 0:3], exact=True))
        cases.append(Case("slice empty", et, [x],
                          f"%r0 = nn.slice %a0 offsets = [0, 0, 0] sizes = [0, 3, 1] strides = [1, 1, 1] : {T(x)}",
                          lambda x: x[0:0, 0:3, 0:1], exact=True))
        a, b, c = data((2, 1, 3)), data((2, 4, 3)), data((2, 2, 3))
        cases.append(Case("concat dim 1", et, [a, b, c],
                          f"%r0 = nn.concat %a0, %a1, %a2 dim = 1 : {T(a)}, {T(b)}, {T(c)}",
                          lambda a, b, c: np.concatenate([a, b, c], axis=1), exact=True))
        a, b = data((1, 4)), data((3, 4))
        cases.append(Case("concat dim 0", et, [a, b],
                          f"%r0 = nn.concat %a0, %a1 dim = 0 : {T(a)}, {T(b)}",
                          lambda a, b: np.concatenate([a, b], axis=0), exact=True))
        if et != "i1":
            ref = np.broadcast_to(np.arange(5)[None, :, None], (3, 5, 2))
            ref = f32_to_bf16(ref.astype(np.float32)) if et == "bf16" else ref.astype(NP_DTYPE[et])
            cases.append(Case("iota dim 1", et, [],
                              f"%r0 = nn.iota dim = 1 : {ttype((3, 5, 2), et)}",
                              lambda ref=ref: ref, exact=True))
    return cases


def family_gather(rng):
    cases = []
    for et in ("f32", "f64", "bf16", "i64"):
        table = rng.uniform((10, 6), et)
        for it in ("i32", "i64") if et != "i64" else ():  # float tables only
            ids = rng.ints((3, 4), it, 0, 10)
            cases.append(Case(f"embedding ids {it}", et, [table, ids],
                              f"%r0 = nn.embedding %a0, %a1 : {T(table)}, {T(ids)}",
                              lambda t, i: t[i], exact=True))
        if et != "i64":
            # A block of a vocabulary-split table: rows [7, 17) of a larger
            # one; ids outside read zeros.
            ids = rng.ints((3, 4), "i64", 0, 24)
            offset = np.array(7, dtype=np.int64)

            def block_lookup(t, i, o):
                rows = i - o
                inside = (rows >= 0) & (rows < t.shape[0])
                out = t[np.clip(rows, 0, t.shape[0] - 1)]
                return np.where(inside[..., None], out, np.zeros_like(out))
            cases.append(Case("embedding with offset", et, [table, ids, offset],
                              f"%r0 = nn.embedding %a0, %a1 offset %a2 : {T(table)}, {T(ids)}",
                              block_lookup, exact=True))
            # A table of rank 3: whole [4, 3] rows.
            cube = rng.uniform((5, 4, 3), et)
            ids = rng.ints((2, 3), "i64", 0, 5)
            cases.append(Case("embedding rank-3 table", et, [cube, ids],
                              f"%r0 = nn.embedding %a0, %a1 : {T(cube)}, {T(ids)}",
                              lambda t, i: t[i], exact=True))
        x = rng.ints((4, 5, 6), "i64", -9, 9) if et == "i64" else rng.uniform((4, 5, 6), et)
        for dim, ishape in ((0, (2, 5, 6)), (1, (4, 7, 6)), (2, (4, 5, 1))):
            idx = rng.ints(ishape, "i64" if dim else "i32", 0, x.shape[dim])
            cases.append(Case(f"gather dim {dim}", et, [x, idx],
                              f"%r0 = nn.gather %a0, %a1 dim = {dim} : {T(x)}, {T(idx)}",
                              lambda x, i, d=dim: np.take_along_axis(x, i, d), exact=True))
    return cases


def family_norms(rng):
    cases = []
    for et in FLOAT_TYPES:
        x = rng.uniform((3, 4, 5), et, -3, 3)
        for dim in range(3):
            cases.append(Case(f"softmax dim {dim}", et, [x],
                              f"%r0 = nn.softmax %a0 dim = {dim} : {T(x)}",
                              lambda x, d=dim: softmax(x, d)))
            cases.append(Case(f"log_softmax dim {dim}", et, [x],
                              f"%r0 = nn.log_softmax %a0 dim = {dim} : {T(x)}",
                              lambda x, d=dim: log_softmax(x, d)))
        x = rng.uniform((2, 3, 8), et, -2, 3)
        g, b = rng.uniform((8,), et), rng.uniform((8,), et)

        def layer_norm(x, g=None, b=None, n=1, eps=1e-5):
            axes = tuple(range(x.ndim - n, x.ndim))
            mean = x.mean(axis=axes, keepdims=True)
            var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
            y = (x - mean) / np.sqrt(var + eps)
            y = y * g if g is not None else y
            return y + b if b is not None else y

        def rms_norm(x, g=None, n=1, eps=1e-6):
            axes = tuple(range(x.ndim - n, x.ndim))
            y = x / np.sqrt((x ** 2).mean(axis=axes, keepdims=True) + eps)
            return y * g if g is not None else y

        cases.append(Case("layer_norm scale bias", et, [x, g, b],
                          f"%r0 = nn.layer_norm %a0 scale %a1 bias %a2 : {T(x)}, {T(g)}, {T(b)}",
                          lambda x, g, b: layer_norm(x, g, b)))
        cases.append(Case("layer_norm scale", et, [x, g],
                          f"%r0 = nn.layer_norm %a0 scale %a1 : {T(x)}, {T(g)}",
                          lambda x, g: layer_norm(x, g)))
        cases.append(Case("layer_norm bias only", et, [x, b],
                          f"%r0 = nn.layer_norm %a0 bias %a1 : {T(x)}, {T(b)}",
                          lambda x, b: layer_norm(x, None, b)))
        g2 = rng.uniform((3, 8), et)
        cases.append(Case("layer_norm normalized_dims 2 eps 1e-3", et, [x, g2],
                          f"%r0 = nn.layer_norm %a0 scale %a1 {{epsilon = {attr(1e-3)}, normalized_dims = 2 : i64}} : {T(x)}, {T(g2)}",
                          lambda x, g: layer_norm(x, g, None, 2, 1e-3)))
        cases.append(Case("rms_norm scale", et, [x, g],
                          f"%r0 = nn.rms_norm %a0 scale %a1 : {T(x)}, {T(g)}",
                          lambda x, g: rms_norm(x, g)))
        cases.append(Case("rms_norm normalized_dims 3 eps 0.5", et, [x],
                          f"%r0 = nn.rms_norm %a0 {{epsilon = {attr(0.5)}, normalized_dims = 3 : i64}} : {T(x)}",
                          lambda x: rms_norm(x, None, 3, 0.5)))
    return cases


def family_rope_dropout(rng):
    cases = []

    def rope(x, pos, theta=10000.0, inverse=False):
        d = x.shape[-1]
        half = d // 2
        inv = theta ** (-2.0 * np.arange(half) / d) * (-1 if inverse else 1)
        ang = pos[..., None, None].astype(np.float64) * inv   # [..., seq, 1, half]
        c, s = np.cos(ang), np.sin(ang)
        a, b = x[..., :half], x[..., half:]
        return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)

    for et in FLOAT_TYPES:
        x = rng.uniform((2, 5, 3, 8), et)
        pos = rng.ints((2, 5), "i64", 0, 100)
        cases.append(Case("rope [b, s, h, d] i64 positions", et, [x, pos],
                          f"%r0 = nn.rope %a0, %a1 : {T(x)}, {T(pos)}",
                          lambda x, p: rope(x, p)))
        x = rng.uniform((6, 2, 4), et)
        pos = rng.ints((6,), "i32", 0, 50)
        cases.append(Case("rope [s, h, d] i32 positions theta 500", et, [x, pos],
                          f"%r0 = nn.rope %a0, %a1 {{theta = {attr(500)}}} : {T(x)}, {T(pos)}",
                          lambda x, p: rope(x, p, 500.0)))
        # `inverse` rotates the other way (written in the attribute
        # dictionary, which parses whether or not the op spells the keyword).
        cases.append(Case("rope inverse", et, [x, pos],
                          f"%r0 = nn.rope %a0, %a1 {{inverse}} : {T(x)}, {T(pos)}",
                          lambda x, p: rope(x, p, inverse=True)))
        cases.append(Case("rope then inverse is the identity", et, [x, pos],
                          f"%0 = nn.rope %a0, %a1 : {T(x)}, {T(pos)}\n"
                          f"%r0 = nn.rope %0, %a1 {{inverse}} : {T(x)}, {T(pos)}",
                          lambda x, p: x))
        x = rng.uniform((2, 1, 3, 2, 6), et)
        pos = rng.ints((2, 1, 3), "i64", 0, 2000)
        cases.append(Case("rope two batch dims, large positions", et, [x, pos],
                          f"%r0 = nn.rope %a0, %a1 : {T(x)}, {T(pos)}",
                          lambda x, p: rope(x, p)))

        x = rng.uniform((64, 33), et, 0.5, 1.5)
        for rate, seed, offset in ((0.3, 42, None), (0.5, 7, 1234), (0.0, 1, None),
                                   (0.9, -5, -3)):
            scale = NP_DTYPE[et](1.0 / (1.0 - rate))
            key = (seed % (1 << 64) + (offset or 0) % (1 << 64)) % (1 << 64)
            drop = dropout_mask(x.shape, key, 0, rate)
            expected = np.where(drop, NP_DTYPE[et](0), x * scale)
            inputs = [x]
            operand = ""
            if offset is not None:
                inputs.append(np.array(offset, np.int64))
                operand = ", %a1"
            cases.append(Case(f"dropout rate {rate} seed {seed} offset {offset}", et, inputs,
                              f"%r0 = nn.dropout %a0{operand} {{rate = {attr(rate)}, seed = {seed} : i64}} : {T(x)}",
                              lambda *_, e=expected: e, exact=True))
    return cases


def family_attention(rng):
    cases = []
    for et in FLOAT_TYPES:
        def qkv(b, sq, sk, h, hk, d, dv=None):
            return (rng.uniform((b, sq, h, d), et), rng.uniform((b, sk, hk, d), et),
                    rng.uniform((b, sk, hk, dv or d), et))

        def add(name, arrays, mask, extra="", parents=None, positions=False):
            """Operands: q, k, v, then subtree_end (tree), then positions."""
            types = ", ".join(T(a) for a in arrays)
            spelled = f"%r0 = nn.attention %a0, %a1, %a2 mask = {mask}"
            if mask == "tree":
                spelled += " subtree_end %a3"
            if positions:
                spelled += f" positions %a{len(arrays) - 1}"
            spelled += f"{extra} : {types}"

            def ref(q, k, v, *rest):
                return attention_ref(q, k, v, mask, parents=parents,
                                     positions=rest[-1] if positions else None,
                                     scale=0.5 if "scale" in extra else None)
            cases.append(Case(name, et, list(arrays), spelled, ref))

        add("none", qkv(2, 6, 6, 4, 4, 8), "none")
        add("none, seq_q != seq_k", qkv(2, 3, 7, 2, 2, 4), "none")
        add("causal", qkv(2, 6, 6, 4, 4, 8), "causal")
        add("causal GQA 4/2", qkv(2, 7, 7, 4, 2, 8), "causal")
        add("none GQA 6/2, value head_dim 5", qkv(1, 5, 5, 6, 2, 4, 5), "none")
        add("causal scale 0.5", qkv(1, 6, 6, 2, 2, 8), "causal",
            extra=f" {{scale = {attr(0.5)}}}")
        q, k, v = qkv(2, 4, 9, 2, 1, 4)
        pos = np.array([[5, 6, 7, 8], [0, 2, 4, 8]], np.int64)
        add("causal positions (chunked, MQA)", [q, k, v, pos], "causal",
            positions=True)
        pos = np.array([[-1, 0, 3, 100], [2, -7, 8, 1]], np.int32)
        add("causal positions, queries that see nothing", [q, k, v, pos], "causal",
            positions=True)
        # Tree masks: real prefix trees packed depth-first, one per batch row.
        n = 12
        trees = [random_tree(rng, n), random_tree(rng, n, roots=3)]
        parents = [t[0] for t in trees]
        for it in ("i32", "i64"):
            ends = np.array([t[1] for t in trees], NP_DTYPE[it])
            q, k, v = qkv(2, n, n, 4, 2, 8)
            add(f"tree {it} subtree ends, GQA", [q, k, v, ends], "tree",
                parents=parents)
        chain = np.full((1, 6), 5, np.int64)
        q, k, v = qkv(1, 6, 6, 2, 2, 4)
        add("tree chain = causal", [q, k, v, chain], "tree",
            parents=[[-1, 0, 1, 2, 3, 4]])
        ends = np.array([trees[0][1]], np.int64)
        q, k, v = qkv(1, 4, n, 2, 2, 8)
        pos = np.array([[n - 1, 3, 0, 7]], np.int64)
        add("tree positions (queries at chosen tokens)", [q, k, v, ends, pos], "tree",
            parents=[parents[0]], positions=True)
    return cases


def family_loss(rng):
    cases = []
    for et in FLOAT_TYPES:
        logits = rng.uniform((6, 10), et, -3, 3)
        labels = rng.ints((6,), "i64", 0, 10)
        cases.append(Case("no weights, attribute normaliser", et, [logits, labels],
                          f"%r0 = nn.cross_entropy %a0, %a1 {{normalizer = {attr(6)}}} : {T(logits)}, {T(labels)}",
                          lambda l, y: cross_entropy_ref(l, y, None, 6.0)))
        logits = rng.uniform((2, 3, 7), et, -3, 3)
        labels = rng.ints((2, 3), "i32", 0, 7)
        weights = rng.uniform((2, 3), et, 0, 2)
        weights[0, 1] = 0
        labels[0, 1] = -100  # ignored: zero weight
        cases.append(Case("weights (one zero, label -100), attribute normaliser", et,
                          [logits, labels, weights],
                          f"%r0 = nn.cross_entropy %a0, %a1 weights %a2 {{normalizer = {attr(12.5)}}} : {T(logits)}, {T(labels)}, {T(weights)}",
                          lambda l, y, w: cross_entropy_ref(l, y, w, 12.5)))
        norm = np.array(weights.astype(np.float64).sum(), NP_DTYPE[et])
        cases.append(Case("weights, operand normaliser", et, [logits, labels, weights, norm],
                          f"%r0 = nn.cross_entropy %a0, %a1 weights %a2 normalizer %a3 : {T(logits)}, {T(labels)}, {T(weights)}, {T(norm)}",
                          lambda l, y, w, n: cross_entropy_ref(l, y, w, float(n))))
        logits = rng.uniform((5,), et, -3, 3)
        label = np.array(3, np.int64)
        norm = np.array(0.5, NP_DTYPE[et])
        cases.append(Case("1-d logits, operand normaliser", et, [logits, label, norm],
                          f"%r0 = nn.cross_entropy %a0, %a1 normalizer %a2 : {T(logits)}, {T(label)}, {T(norm)}",
                          lambda l, y, n: cross_entropy_ref(l, y, None, float(n))))
    return cases


def family_optimizer(rng):
    cases = []
    for et in FLOAT_TYPES:
        p, g, m = (rng.uniform((4, 6), et) for _ in range(3))
        for lr, mu, wd, nesterov in ((0.1, 0.0, 0.0, False), (0.05, 0.9, 0.0, False),
                                     (0.05, 0.9, 0.01, True), (0.2, 0.5, 0.1, False)):
            attrs = [f"lr = {attr(lr)}"]
            if mu:
                attrs.append(f"momentum = {attr(mu)}")
            if nesterov:
                attrs.append("nesterov")
            if wd:
                attrs.append(f"weight_decay = {attr(wd)}")

            def sgd(p, g, m, lr=lr, mu=mu, wd=wd, nesterov=nesterov):
                g2 = g + wd * p
                buf = mu * m + g2
                d = g2 + mu * buf if nesterov else buf
                return [p - lr * d, buf]
            cases.append(Case(f"sgd lr {lr} momentum {mu} wd {wd} nesterov {nesterov}", et,
                              [p, g, m],
                              f"%r0, %r1 = nn.sgd_update %a0, %a1, %a2 {{{', '.join(attrs)}}} : {T(p)}",
                              sgd))
        v = np.abs(rng.uniform((4, 6), et))
        for step, extra, hp in ((1, "", (0.9, 0.999, 1e-8, 0.01)),
                                (5, f", beta1 = {attr(0.8)}, beta2 = {attr(0.99)}, epsilon = {attr(1e-6)}, weight_decay = {attr(0.1)}",
                                 (0.8, 0.99, 1e-6, 0.1)),
                                (1000, f", weight_decay = {attr(0.0)}", (0.9, 0.999, 1e-8, 0.0))):
            s = np.array(step, np.int64)

            def adamw(p, g, m, v, s, lr=1e-2, hp=hp):
                b1, b2, eps, wd = hp
                s = int(s)
                p2 = p - lr * wd * p
                m1 = b1 * m + (1 - b1) * g
                v1 = b2 * v + (1 - b2) * g ** 2
                mh = m1 / (1 - b1 ** s)
                vh = v1 / (1 - b2 ** s)
                return [p2 - lr * mh / (np.sqrt(vh) + eps), m1, v1]
            cases.append(Case(f"adamw step {step}", et, [p, g, m, v, s],
                              f"%r0, %r1, %r2 = nn.adamw_update %a0, %a1, %a2, %a3, %a4 {{lr = {attr(1e-2)}{extra}}} : {T(p)}",
                              adamw))
    return cases


def family_glue(rng):
    cases = []
    for et in FLOAT_TYPES:
        x = rng.uniform((2, 3), et)
        helper = (f"func.func private @helper_{et}(%x: {T(x)}, %y: {T(x)}) -> {T(x)} {{\n"
                  f"  %0 = nn.mul %x, %y : {T(x)}, {T(x)}\n"
                  f"  return %0 : {T(x)}\n}}")
        body = f"""
%c = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : {T(x)}
%s = arith.constant dense<0.5> : {T(x)}
%e = tensor.empty() : {T(x)}
%0 = func.call @helper_{et}(%a0, %c) : ({T(x)}, {T(x)}) -> {T(x)}
%1 = nn.add %0, %s : {T(x)}, {T(x)}
%2 = nn.add %1, %e : {T(x)}, {T(x)}
%3 = hspmd.annotate %2 : {T(x)} as #hspmd.union<{{[0, 1]: [S0:2]}}>
%r0 = hspmd.reshard %3 : {T(x)} from #hspmd.union<{{[0, 1]: [S0:2]}}> to #hspmd.union<{{[0, 1]: [D:2]}}>
%i = arith.constant dense<[3, 1]> : tensor<2xi64>
%r1 = nn.embedding %c, %i : {T(x)}, tensor<2xi64>
"""
        cases.append(Case("call, constants, empty, annotate, reshard", et, [x], body,
                          lambda x: [x * np.array([[1, 2, 3], [4, 5, 6]]) + 0.5,
                                     # id 3 is outside the table: NaN row
                                     np.array([[np.nan] * 3, [4, 5, 6]])],
                          prelude=helper, exact=False))
    return cases


def family_bf16(rng):
    """bf16 storage, computed in f32 and rounded once per op; attributes
    (clamp bounds, the dropout scale) rounded to bf16."""
    cases = []
    a, b = rng.uniform((4, 8), "bf16"), rng.uniform((8,), "bf16")
    cases.append(Case("add broadcast", "bf16", [a, b],
                      f"%r0 = nn.add %a0, %a1 : {T(a)}, {T(b)}", lambda a, b: a + b))
    a, b = rng.uniform((3, 16), "bf16"), rng.uniform((16, 5), "bf16")
    cases.append(Case("matmul", "bf16", [a, b],
                      f"%r0 = nn.matmul %a0, %a1 : {T(a)}, {T(b)}", lambda a, b: a @ b))
    x = rng.uniform((3, 9), "bf16", -3, 3)
    cases.append(Case("softmax", "bf16", [x],
                      f"%r0 = nn.softmax %a0 dim = 1 : {T(x)}", lambda x: softmax(x, 1)))
    q, k, v = (rng.uniform((1, 5, 2, 4), "bf16") for _ in range(3))
    cases.append(Case("attention causal", "bf16", [q, k, v],
                      f"%r0 = nn.attention %a0, %a1, %a2 mask = causal : {T(q)}, {T(k)}, {T(v)}",
                      lambda q, k, v: attention_ref(q, k, v, "causal")))
    x = rng.uniform((8, 9), "bf16")
    scale = bf16_to_f64(f64_to_bf16_exact(np.array(1 / 0.7))).astype(np.float32)
    kept = f32_to_bf16(bf16_to_f64(x).astype(np.float32) * scale)
    expected = np.where(dropout_mask(x.shape, 5, 0, 0.3), np.uint16(0), kept)
    cases.append(Case("dropout (scale rounded to bf16)", "bf16", [x],
                      f"%r0 = nn.dropout %a0 {{rate = {attr(0.3)}, seed = 5 : i64}} : {T(x)}",
                      lambda _, e=expected: e, exact=True))
    x = rng.uniform((4, 6), "bf16")
    cases.append(Case("clamp", "bf16", [x],
                      f"%r0 = nn.clamp %a0 {{max = {attr(0.3)}, min = {attr(-0.3)}}} : {T(x)}",
                      lambda x: np.clip(x, bf16_to_f64(f32_to_bf16(np.float32(-0.3))),
                                        bf16_to_f64(f32_to_bf16(np.float32(0.3))))))
    return cases


# ----------------------------------------------------------------------------
# Backward ops (NNBackwardOps.td) and nn.fill: numpy straight from the docs
# ----------------------------------------------------------------------------

def gelu_grad_ref(dy, x, approximate):
    if approximate:
        c, k = math.sqrt(2 / math.pi), 0.044715
        t = np.tanh(c * (x + k * x ** 3))
        return dy * (0.5 * (1 + t) + 0.5 * x * (1 - t ** 2) * c * (1 + 3 * k * x ** 2))
    cdf = (1 + erf(x / math.sqrt(2))) / 2
    pdf = np.exp(-x ** 2 / 2) / math.sqrt(2 * math.pi)
    return dy * (cdf + x * pdf)


def norm_grad_ref(dy, x, scale, n, eps, centre):
    axes = tuple(range(x.ndim - n, x.ndim))
    mu = x.mean(axis=axes, keepdims=True) if centre else 0.0
    r = 1 / np.sqrt(((x - mu) ** 2).mean(axis=axes, keepdims=True) + eps)
    xhat = (x - mu) * r
    g = dy if scale is None else dy * scale
    mean_g = g.mean(axis=axes, keepdims=True) if centre else 0.0
    return r * (g - mean_g - xhat * (g * xhat).mean(axis=axes, keepdims=True))


def cross_entropy_grad_ref(dloss, logits, labels, weights, normalizer):
    vocab = logits.shape[-1]
    flat = logits.reshape(-1, vocab)
    lab = labels.reshape(-1)
    w = np.ones(len(lab)) if weights is None else weights.reshape(-1)
    out = np.zeros_like(flat)
    for n in range(len(lab)):
        p = softmax(flat[n], 0)
        if 0 <= lab[n] < vocab:
            p[lab[n]] -= 1
        out[n] = float(dloss) * w[n] / normalizer * p
    return out.reshape(logits.shape)


def attention_grad_ref(dout, q, k, v, mask="none", positions=None,
                       parents=None, scale=None):
    """The doc's formulas, per (b, h, i); tree visibility from `parents`."""
    b, sq, h, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    scale = 1 / math.sqrt(d) if scale is None else scale
    group = h // hk
    dq, dk, dv = np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)
    for bi in range(b):
        for i in range(sq):
            p = i if positions is None else int(positions[bi, i])
            if mask == "none":
                visible = np.ones(sk, bool)
            elif mask == "causal":
                visible = np.arange(sk) <= p
            else:
                visible = np.zeros(sk, bool)
                node = p if 0 <= p < sk else -1
                while node >= 0:
                    visible[node] = True
                    node = parents[bi][node]
            if not visible.any():
                continue
            for hi in range(h):
                g = hi // group
                s = np.where(visible, scale * (k[bi, :, g, :] @ q[bi, i, hi, :]), -np.inf)
                w = np.exp(s - s.max())
                w /= w.sum()
                dp = v[bi, :, g, :] @ dout[bi, i, hi, :]
                ds = w * (dp - np.sum(w * dp))
                dq[bi, i, hi, :] = scale * (ds @ k[bi, :, g, :])
                dk[bi, :, g, :] += scale * np.outer(ds, q[bi, i, hi, :])
                dv[bi, :, g, :] += np.outer(w, dout[bi, i, hi, :])
    return [dq, dk, dv]


def gather_grad_ref(dy, idx, dim, shape):
    out = np.zeros(shape)
    coords = list(np.indices(idx.shape))
    ok = (idx >= 0) & (idx < shape[dim])
    coords[dim] = idx
    np.add.at(out, tuple(c[ok] for c in coords), dy[ok])
    return out


def slice_grad_ref(dy, offsets, strides, shape):
    out = np.zeros(shape)
    index = tuple(slice(o, o + s * n, s) if n else slice(0, 0)
                  for o, s, n in zip(offsets, strides, dy.shape))
    out[index] = dy
    return out


def family_backward(rng):
    cases = []
    for value in (1.0, -0.1, 0.0, 3.0e5):
        for et in ("f32", "f64", "bf16"):
            shape = (3, 4) if value != 0.0 else ()
            if et == "bf16":
                expected = np.full(shape, f64_to_bf16_exact(np.full(shape, value)))
            else:
                expected = np.full(shape, value, NP_DTYPE[et])
            cases.append(Case(f"fill {value} {shape}", et, [],
                              f"%r0 = nn.fill {value:.17e} : {ttype(shape, et)}",
                              lambda e=expected: e, exact=True))
    for et in FLOAT_TYPES:
        # gelu_grad, both approximations.
        for approx in ("none", "tanh"):
            x = rng.uniform((5, 7), et, -4, 4)
            dy = rng.uniform((5, 7), et)
            spelled = "" if approx == "none" else " approximate = tanh"
            cases.append(Case(f"gelu_grad {approx}", et, [dy, x],
                              f"%r0 = nn.gelu_grad %a0, %a1{spelled} : {T(x)}",
                              lambda dy, x, t=approx == "tanh": gelu_grad_ref(dy, x, t)))
        # layer_norm_grad / rms_norm_grad: with and without scale, 1 or 2
        # normalised dimensions, default and explicit epsilon.
        for op, centre, default_eps in (("layer_norm_grad", True, 1e-5),
                                        ("rms_norm_grad", False, 1e-6)):
            x = rng.uniform((3, 4, 16), et, -2, 2)
            dy = rng.uniform((3, 4, 16), et)
            g = rng.uniform((16,), et, 0.5, 1.5)
            cases.append(Case(f"{op} scale", et, [dy, x, g],
                              f"%r0 = nn.{op} %a0, %a1 scale %a2 : {T(dy)}, {T(x)}, {T(g)}",
                              lambda dy, x, g, c=centre, e=default_eps:
                              norm_grad_ref(dy, x, g, 1, e, c)))
            cases.append(Case(f"{op} no scale", et, [dy, x],
                              f"%r0 = nn.{op} %a0, %a1 : {T(dy)}, {T(x)}",
                              lambda dy, x, c=centre, e=default_eps:
                              norm_grad_ref(dy, x, None, 1, e, c)))
            g2 = rng.uniform((4, 16), et, 0.5, 1.5)
            cases.append(Case(f"{op} normalized_dims 2 eps 1e-3", et, [dy, x, g2],
                              f"%r0 = nn.{op} %a0, %a1 scale %a2 {{epsilon = {attr(1e-3)}, normalized_dims = 2 : i64}} : {T(dy)}, {T(x)}, {T(g2)}",
                              lambda dy, x, g, c=centre: norm_grad_ref(dy, x, g, 2, 1e-3, c)))
        # cross_entropy_grad.
        dl = rng.uniform((), et, 0.5, 2)
        logits = rng.uniform((6, 10), et, -3, 3)
        labels = rng.ints((6,), "i64", 0, 10)
        cases.append(Case("cross_entropy_grad no weights, attribute normaliser", et,
                          [dl, logits, labels],
                          f"%r0 = nn.cross_entropy_grad %a0, %a1, %a2 {{normalizer = {attr(6)}}} : {T(dl)}, {T(logits)}, {T(labels)}",
                          lambda d, l, y: cross_entropy_grad_ref(d, l, y, None, 6.0)))
        logits = rng.uniform((2, 3, 7), et, -3, 3)
        labels = rng.ints((2, 3), "i32", 0, 7)
        weights = rng.uniform((2, 3), et, 0, 2)
        weights[0, 1] = 0
        labels[0, 1] = -100   # zero weight: zero row
        labels[1, 2] = 7      # outside the vocabulary: no one-hot term
        cases.append(Case("cross_entropy_grad weights, labels outside, attribute normaliser", et,
                          [dl, logits, labels, weights],
                          f"%r0 = nn.cross_entropy_grad %a0, %a1, %a2 weights %a3 {{normalizer = {attr(12.5)}}} : {T(dl)}, {T(logits)}, {T(labels)}, {T(weights)}",
                          lambda d, l, y, w: cross_entropy_grad_ref(d, l, y, w, 12.5)))
        norm = np.array(weights.astype(np.float64).sum(), NP_DTYPE[et])
        cases.append(Case("cross_entropy_grad weights, operand normaliser", et,
                          [dl, logits, labels, weights, norm],
                          f"%r0 = nn.cross_entropy_grad %a0, %a1, %a2 weights %a3 normalizer %a4 : {T(dl)}, {T(logits)}, {T(labels)}, {T(weights)}, {T(norm)}",
                          lambda d, l, y, w, n: cross_entropy_grad_ref(d, l, y, w, float(n))))
        logits = rng.uniform((5,), et, -3, 3)
        label = np.array(3, np.int64)
        norm = np.array(0.5, NP_DTYPE[et])
        cases.append(Case("cross_entropy_grad 1-d logits, operand normaliser", et,
                          [dl, logits, label, norm],
                          f"%r0 = nn.cross_entropy_grad %a0, %a1, %a2 normalizer %a3 : {T(dl)}, {T(logits)}, {T(label)}, {T(norm)}",
                          lambda d, l, y, n: cross_entropy_grad_ref(d, l, y, None, float(n))))

        # attention_grad: masks, GQA/MQA, positions, scale, tree masks.
        def qkv(b, sq, sk, h, hk, d, dv=None):
            dv = dv or d
            return (rng.uniform((b, sq, h, dv), et), rng.uniform((b, sq, h, d), et),
                    rng.uniform((b, sk, hk, d), et), rng.uniform((b, sk, hk, dv), et))

        def add(name, arrays, mask, extra="", parents=None, positions=False):
            """Operands: grad, q, k, v, then subtree_end (tree), then positions."""
            types = ", ".join(T(a) for a in arrays)
            spelled = f"%r0, %r1, %r2 = nn.attention_grad %a0, %a1, %a2, %a3 mask = {mask}"
            if mask == "tree":
                spelled += " subtree_end %a4"
            if positions:
                spelled += f" positions %a{len(arrays) - 1}"
            spelled += f"{extra} : {types}"

            def ref(dout, q, k, v, *rest):
                return attention_grad_ref(dout, q, k, v, mask, parents=parents,
                                          positions=rest[-1] if positions else None,
                                          scale=0.5 if "scale" in extra else None)
            cases.append(Case(f"attention_grad {name}", et, list(arrays), spelled, ref))

        add("none", qkv(2, 5, 5, 2, 2, 4), "none")
        add("none, seq_q != seq_k", qkv(1, 3, 6, 2, 2, 4), "none")
        add("causal", qkv(2, 6, 6, 2, 2, 4), "causal")
        add("causal GQA 4/2", qkv(1, 5, 5, 4, 2, 4), "causal")
        add("none GQA 6/2, value head_dim 5", qkv(1, 4, 4, 6, 2, 3, 5), "none")
        add("causal scale 0.5", qkv(1, 5, 5, 2, 2, 4), "causal",
            extra=f" {{scale = {attr(0.5)}}}")
        arrays = list(qkv(2, 4, 9, 2, 1, 4))
        add("causal positions (chunked, MQA)",
            arrays + [np.array([[5, 6, 7, 8], [0, 2, 4, 8]], np.int64)], "causal",
            positions=True)
        add("causal positions, queries that see nothing",
            arrays + [np.array([[-1, 0, 3, 100], [2, -7, 8, 1]], np.int32)], "causal",
            positions=True)
        n = 10
        trees = [random_tree(rng, n), random_tree(rng, n, roots=3)]
        parents = [t[0] for t in trees]
        for it in ("i32", "i64"):
            ends = np.array([t[1] for t in trees], NP_DTYPE[it])
            add(f"tree {it} subtree ends, GQA", list(qkv(2, n, n, 4, 2, 4)) + [ends],
                "tree", parents=parents)
        ends = np.array([trees[0][1]], np.int64)
        pos = np.array([[n - 1, 3, 0, 7]], np.int64)
        add("tree positions (queries at chosen tokens)",
            list(qkv(1, 4, n, 2, 2, 4)) + [ends, pos], "tree",
            parents=[parents[0]], positions=True)

        # gather_grad: repeated indices add up, out-of-range ones add nothing.
        for shape, dim, idx_shape in (((4, 6), 1, (4, 3)), ((5, 3), 0, (8, 3)),
                                      ((2, 3, 4), 1, (2, 5, 4)), ((16, 64), 1, (16, 1))):
            idx = rng.ints(idx_shape, "i64", 0, shape[dim])
            idx.ravel()[0] = -1
            idx.ravel()[-1] = shape[dim]
            dy = rng.uniform(idx_shape, et)
            cases.append(Case(f"gather_grad {shape} dim {dim}", et, [dy, idx],
                              f"%r0 = nn.gather_grad %a0, %a1 dim = {dim} : {T(dy)}, {T(idx)} to {ttype(shape, et)}",
                              lambda dy, idx, d=dim, s=shape: gather_grad_ref(dy, idx, d, s)))
        # A block of a larger result (rows [5, 9) of 12): indices outside
        # the block add nothing.
        idx = rng.ints((10, 3), "i64", 0, 12)
        dy = rng.uniform((10, 3), et)
        offset = np.array(5, dtype=np.int64)
        cases.append(Case("gather_grad with offset", et, [dy, idx, offset],
                          f"%r0 = nn.gather_grad %a0, %a1 dim = 0 offset %a2 : {T(dy)}, {T(idx)} to {ttype((4, 3), et)}",
                          lambda dy, idx, o: gather_grad_ref(dy, idx - o, 0, (4, 3))))
        idx = rng.ints((6, 2), "i32", 0, 3)
        dy = rng.uniform((6, 2), et)
        cases.append(Case("gather_grad i32 indices", et, [dy, idx],
                          f"%r0 = nn.gather_grad %a0, %a1 dim = 0 : {T(dy)}, {T(idx)} to {ttype((3, 2), et)}",
                          lambda dy, idx: gather_grad_ref(dy, idx, 0, (3, 2))))
        # slice_grad.
        for shape, offsets, strides, size in (((4, 8), (0, 2), (1, 2), (4, 3)),
                                              ((5, 6, 3), (1, 2, 0), (2, 2, 1), (2, 2, 3)),
                                              ((4, 3), (0, 0), (1, 1), (0, 3))):
            dy = rng.uniform(size, et)
            cases.append(Case(f"slice_grad {shape} offsets {offsets} strides {strides}", et, [dy],
                              f"%r0 = nn.slice_grad %a0 offsets = {list(offsets)} strides = {list(strides)} : {T(dy)} to {ttype(shape, et)}",
                              lambda dy, s=shape, o=offsets, st=strides: slice_grad_ref(dy, o, st, s)))
    # bf16: computed in f32, rounded once.
    x, dy = rng.uniform((4, 8), "bf16", -3, 3), rng.uniform((4, 8), "bf16")
    cases.append(Case("gelu_grad bf16", "bf16", [dy, x],
                      f"%r0 = nn.gelu_grad %a0, %a1 : {T(x)}",
                      lambda dy, x: gelu_grad_ref(dy, x, False)))
    idx = rng.ints((4, 3), "i64", 0, 5)
    cases.append(Case("gather_grad bf16", "bf16", [dy[:, :3].copy(), idx],
                      f"%r0 = nn.gather_grad %a0, %a1 dim = 1 : {ttype((4, 3), 'bf16')}, {T(idx)} to {ttype((4, 5), 'bf16')}",
                      lambda dy, idx: gather_grad_ref(dy, idx, 1, (4, 5))))
    return cases


def topk_ref(x, k):
    """Indices of the k largest along the last axis, largest first, ties in
    index order, NaN above any number, +inf included (an independent sort:
    lexsort on (index, negated value, not-NaN), whose last key is primary)."""
    nan = np.isnan(x)
    index = np.broadcast_to(np.arange(x.shape[-1]), x.shape)
    order = np.lexsort((index, np.where(nan, 0.0, -x), ~nan), axis=-1)
    return order[..., :k].astype(np.int64)


def route_ref(experts, num_experts, capacity=None, blocks=1):
    """Slots and counts of nn.moe_route, written independently: per expert,
    the flat positions of its entries in order, kept up to the capacity,
    laid out expert after expert; with blocks, each block of num_experts /
    blocks experts from row b * S, S the entries (T * k) or, with a
    capacity, at most capacity rows per expert of the block."""
    flat = experts.reshape(-1)
    slots = np.full(flat.shape, -1, dtype=np.int64)
    counts = np.zeros(num_experts, dtype=np.int64)
    per_block = num_experts // blocks
    stride = flat.size if capacity is None else min(flat.size,
                                                    capacity * per_block)
    row = 0
    for e in range(num_experts):
        if e % per_block == 0:
            row = (e // per_block) * stride
        picked = np.nonzero(flat == e)[0]
        if capacity is not None:
            picked = picked[:capacity]
        slots[picked] = np.arange(row, row + len(picked))
        counts[e] = len(picked)
        row += len(picked)
    return slots.reshape(experts.shape), counts


def grouped_matmul_ref(x, w, counts, blocks=1, transposed=False):
    """nn.grouped_matmul: per expert, its rows (by the counts, each block's
    from the block's first row) times its weight; other rows zero."""
    n, experts = x.shape[0], w.shape[0]
    per_block, block_rows = experts // blocks, n // blocks
    y = np.zeros((n, w.shape[1] if transposed else w.shape[2]))
    for b in range(blocks):
        row = b * block_rows
        for e in range(b * per_block, (b + 1) * per_block):
            m = int(counts[e])
            we = w[e].T if transposed else w[e]
            y[row:row + m] = x[row:row + m] @ we
            row += m
    return y


def family_moe(rng):
    cases = []
    for et in ("f32", "f64"):
        x = rng.uniform((16, 8), et)
        for k in (1, 2, 8):
            cases.append(Case(f"topk {k}", et, [x],
                              f"%r0 = nn.topk %a0 k = {k} : {T(x)}",
                              lambda x, k=k: topk_ref(x, k), out_types=["i64"],
                              exact=True))
        ties = np.asarray(np.arange(24).reshape(4, 6) % 3, dtype=NP_DTYPE[et])
        ties[1, 4] = np.nan
        ties[2, :4] = [np.inf, np.nan, -np.inf, np.inf]   # NaN, +inf, ..., -inf
        cases.append(Case("topk ties and NaN", et, [ties],
                          f"%r0 = nn.topk %a0 k = 3 : {T(ties)}",
                          lambda x: topk_ref(x, 3), out_types=["i64"],
                          exact=True))
    experts = rng.ints((16, 2), "i64", 0, 5)
    experts[1, 1] = 9   # out of range: dropped
    experts[4, 0] = -2
    for capacity in (None, 3):
        for blocks in (1, 2, 3):
            extra = "" if capacity is None else f" capacity = {capacity}"
            extra += "" if blocks == 1 else f" blocks = {blocks}"
            cases.append(Case(
                f"moe_route{extra}", "i64", [experts],
                f"%r0, %r1 = nn.moe_route %a0 num_experts = 6{extra} : "
                f"{T(experts)}",
                lambda e, c=capacity, b=blocks: route_ref(e.astype(np.int64),
                                                          6, c, b),
                out_types=["i64", "i64"], exact=True))
    # The grouped matmul over a buffer of 24 rows: one block (an expert
    # without rows, an unused tail) and two blocks of 12 (each with a tail).
    for et in ("f32", "f64"):
        x = rng.uniform((24, 5), et)
        for transposed in (False, True):
            w = rng.uniform((4, 3, 5) if transposed else (4, 5, 3), et)
            for blocks, counts in ((1, [7, 0, 9, 5]), (2, [7, 4, 0, 10])):
                c = np.asarray(counts, dtype=np.int64)
                extra = (" transpose_rhs" if transposed else "") + \
                    ("" if blocks == 1 else f" blocks = {blocks}")
                cases.append(Case(
                    f"grouped_matmul{extra}", et, [x, w, c],
                    f"%r0 = nn.grouped_matmul %a0, %a1, %a2{extra} : "
                    f"{T(x)}, {T(w)}, {T(c)}",
                    lambda x, w, c, b=blocks, t=transposed:
                        grouped_matmul_ref(x, w, c, b, t)))
    return cases


FAMILIES = {
    "elementwise": family_elementwise, "cast": family_cast,
    "reduce": family_reduce, "matmul": family_matmul, "shape": family_shape,
    "gather": family_gather, "norms": family_norms,
    "rope_dropout": family_rope_dropout, "attention": family_attention,
    "loss": family_loss, "optimizer": family_optimizer, "glue": family_glue,
    "bf16": family_bf16, "backward": family_backward, "moe": family_moe,
}

# Every op of the nn dialect the interpreter supports; `--family coverage`
# checks that the families above exercise each of them.
NN_OPS = """add sub mul div minimum maximum neg exp log sqrt rsqrt tanh relu silu
sin cos gelu compare select clamp cast reduce broadcast reshape transpose slice
concat gather iota softmax log_softmax layer_norm rms_norm rope dropout
embedding attention cross_entropy sgd_update adamw_update matmul fill gelu_grad
layer_norm_grad rms_norm_grad cross_entropy_grad attention_grad gather_grad
slice_grad topk moe_route grouped_matmul""".split()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", required=True, help="path to loom-run")
    parser.add_argument("--family", required=True,
                        choices=sorted(FAMILIES) + ["coverage"])
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--group", type=int, default=16,
                        help="cases per loom-run process (1 isolates a "
                             "failing case)")
    args = parser.parse_args()

    if args.family == "coverage":
        seen = set()
        for name, family in FAMILIES.items():
            for case in family(Rng(0)):
                seen.update(case.ops)
        missing = [op for op in NN_OPS if f"nn.{op}" not in seen]
        print(f"coverage: {len(NN_OPS) - len(missing)} of {len(NN_OPS)} nn ops "
              f"exercised")
        if missing:
            print("MISSING: " + ", ".join(missing))
            return 1
        return 0

    # A fixed seed per family: the same inputs on every run.
    seed = sum(ord(c) for c in args.family)
    cases = FAMILIES[args.family](Rng(seed))
    os.makedirs(args.work_dir, exist_ok=True)
    groups = [cases[i:i + args.group] for i in range(0, len(cases), args.group)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_group, group, args.tool, args.work_dir, i)
                   for i, group in enumerate(groups)]
        outcomes = [o for f in futures for o in f.result()]
    failures, worst = 0, {}
    for case, (ok, errors, text) in zip(cases, outcomes):
        print(f"{'PASS' if ok else 'FAIL'} {args.family}/{case.name} [{case.et}]: {text}")
        failures += not ok
        for et, err in errors.items():
            worst[et] = max(worst.get(et, 0.0), err)
    summary = ", ".join(f"max relerr {et} {err:.2e}" for et, err in sorted(worst.items()))
    print(f"{args.family}: {len(cases) - failures} of {len(cases)} cases passed"
          + (f"; {summary}" if summary else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
