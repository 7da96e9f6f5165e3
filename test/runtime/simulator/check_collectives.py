#!/usr/bin/env python3
"""Checks the simulator's collectives against an independent numpy model.

For every case a one-op local-view program runs on N simulated ranks
(`loom-run --interpret --simulate N --random-inputs`, rank r seeded with
seed + r); each rank's input and result come back as .npy. The model here
recomputes every rank's result from all ranks' inputs: sub-groups from the
mesh digits, reductions in sub-group rank order in the element type (so
results must be bitwise equal), blocks and concatenations with numpy. It
also recomputes the bytes each rank sends and receives (the formulas of
runtime/simulator/Simulator.h) and compares them with `--comm-stats`.

    check_collectives.py --run PATH/loom-run --work-dir DIR
"""

import argparse
import functools
import itertools
import os
import re
import subprocess
import sys

import numpy as np

DT = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}


def ttype(shape, et):
    return "tensor<" + "".join(f"{d}x" for d in shape) + et + ">"


def digits(index, sizes):
    out = []
    for size in reversed(sizes):
        out.append(index % size)
        index //= size
    return out[::-1]


def undigits(ds, sizes):
    index = 0
    for d, size in zip(ds, sizes):
        index = index * size + d
    return index


def subgroup(rank, mesh, axes):
    """Members of `rank`'s sub-group in rank order, and its position."""
    ds = digits(rank, mesh)
    sizes = [mesh[a] for a in axes]
    members = []
    for combo in itertools.product(*[range(s) for s in sizes]):
        m = list(ds)
        for a, d in zip(axes, combo):
            m[a] = d
        members.append(undigits(m, mesh))
    return members, members.index(rank)


def reduce(arrays, kind):
    if kind in ("sum", "mean"):
        out = functools.reduce(lambda a, b: (a + b).astype(a.dtype), arrays)
        if kind == "mean":
            out = (out / out.dtype.type(len(arrays))).astype(out.dtype)
        return out
    op = np.maximum if kind == "max" else np.minimum
    return functools.reduce(op, arrays)


class Case:
    def __init__(self, name, kind, mesh, axes, shape, et, attrs):
        self.name, self.kind, self.mesh, self.axes = name, kind, mesh, axes
        self.shape, self.et, self.attrs = shape, et, attrs
        self.k = int(np.prod([mesh[a] for a in axes]))

    def out_shape(self):
        s = list(self.shape)
        a = self.attrs
        if self.kind == "all_gather":
            s[a["dim"]] *= self.k
        elif self.kind in ("reduce_scatter", "local_slice"):
            s[a["dim"]] //= self.k
        elif self.kind == "sparse_reduce_scatter":
            s[0] //= self.k
        elif self.kind == "sparse_all_gather":
            s[0] *= self.k
        elif self.kind == "sparse_exchange":
            s[0] = a["whole"] if a.get("gather") else a["blocks"][1]
        elif self.kind == "make_partial" and "dim" in a:
            s[a["dim"]] *= self.k
        elif self.kind == "all_to_all":
            s[a["split"]] //= self.k
            s[a["concat"]] *= self.k
        return s

    def program(self):
        a = self.attrs
        tin, tout = ttype(self.shape, self.et), ttype(self.out_shape(), self.et)
        if self.kind.startswith("sparse_"):
            trows = ttype(a["rows"], "i64")
            over = (f"among {list(range(self.k))} blocks {a['blocks']}"
                    if self.kind == "sparse_exchange" else
                    f"over {self.axes} of {self.mesh}")
            return (f"func.func @main(%x: {tin}, %r: {trows}) -> {tout} {{\n"
                    f"  %y = hspmd.{self.kind}"
                    f"{' gather' if a.get('gather') else ''} %x rows %r {over}"
                    f" : {tin}, {trows} -> {tout}\n"
                    f"  return %y : {tout}\n}}\n")
        prefix = {"all_reduce": f"{a.get('red')} %x",
                  "all_gather": f"%x dim {a.get('dim')}",
                  "reduce_scatter": f"{a.get('red')} %x dim {a.get('dim')}",
                  "all_to_all": f"%x split {a.get('split')} concat "
                                f"{a.get('concat')}",
                  "permute": f"%x perm {a.get('perm')}",
                  "local_slice": f"%x dim {a.get('dim')}",
                  "make_partial": f"%x dim {a['dim']}" if "dim" in a
                                  else "%x"}[self.kind]
        return (f"func.func @main(%x: {tin}) -> {tout} {{\n"
                f"  %y = hspmd.{self.kind} {prefix} over {self.axes} of "
                f"{self.mesh} : {tin} -> {tout}\n"
                f"  return %y : {tout}\n}}\n")

    def expect(self, inputs, rank, named=None):
        """The result of `rank` and its (sent, received) bytes (`named`:
        every rank's row indices, for sparse_reduce_scatter)."""
        members, pos = subgroup(rank, self.mesh, self.axes)
        xs = [inputs[m] for m in members]
        k, a = self.k, self.attrs
        nbytes = xs[pos].nbytes
        if self.kind == "sparse_reduce_scatter":
            # Each member's distinct named rows (-1: none) of block `pos`,
            # added in member order into zeros; per other member a count,
            # then an index and a row per row sent.
            block = xs[pos].shape[0] // k
            row_bytes = nbytes // xs[pos].shape[0]
            n = xs[pos].shape[0]
            rows = [sorted({int(v) for v in named[m].ravel() if 0 <= v < n})
                    for m in members]
            out = np.zeros((block,) + xs[pos].shape[1:], xs[pos].dtype)
            for q in range(k):
                for row in rows[q]:
                    if row // block == pos:
                        out[row - pos * block] = out[row - pos * block] + \
                            xs[q][row]
            count = lambda q, p: sum(1 for row in rows[q] if row // block == p)
            sent = sum(8 + count(pos, p) * (8 + row_bytes)
                       for p in range(k) if p != pos)
            received = sum(8 + count(q, pos) * (8 + row_bytes)
                           for q in range(k) if q != pos)
            return out, (sent, received)
        if self.kind == "sparse_exchange" and a.get("gather"):
            # Zeros but the rank's distinct named rows, each from the first
            # member whose block holds it; per other member a count and an
            # index per row asked, the rows asked the other way.
            bl = a["blocks"]
            first, size = bl[0::2], bl[1::2]
            n = a["whole"]
            row_bytes = nbytes // xs[pos].shape[0]
            owner = lambda row: next((p for p in range(k)
                                      if first[p] <= row < first[p] + size[p]),
                                     None)
            # (A row no block holds is fetched from nobody: zero.)
            rows = [sorted({int(v) for v in named[m].ravel()
                            if 0 <= v < n and owner(int(v)) is not None})
                    for m in members]
            out = np.zeros((n,) + xs[pos].shape[1:], xs[pos].dtype)
            for row in rows[pos]:
                out[row] = xs[owner(row)][row - first[owner(row)]]
            count = lambda q, p: sum(1 for row in rows[q] if owner(row) == p)
            sent = sum(8 + count(pos, p) * 8 + count(p, pos) * row_bytes
                       for p in range(k) if p != pos)
            received = sum(8 + count(p, pos) * 8 + count(pos, p) * row_bytes
                           for p in range(k) if p != pos)
            return out, (sent, received)
        if self.kind == "sparse_exchange":
            # Member p holds rows [first_p, first_p + size_p), blocks that
            # may overlap: each member's distinct named rows go to every
            # member whose block holds them, added in member order.
            bl = a["blocks"]
            first = bl[0::2]
            size = bl[1::2]
            holds = lambda p, row: first[p] <= row < first[p] + size[p]
            row_bytes = nbytes // xs[pos].shape[0]
            n = xs[pos].shape[0]
            rows = [sorted({int(v) for v in named[m].ravel() if 0 <= v < n})
                    for m in members]
            out = np.zeros((size[pos],) + xs[pos].shape[1:], xs[pos].dtype)
            for q in range(k):
                for row in rows[q]:
                    if holds(pos, row):
                        out[row - first[pos]] = out[row - first[pos]] + \
                            xs[q][row]
            count = lambda q, p: sum(1 for row in rows[q] if holds(p, row))
            sent = sum(8 + count(pos, p) * (8 + row_bytes)
                       for p in range(k) if p != pos)
            received = sum(8 + count(q, pos) * (8 + row_bytes)
                           for q in range(k) if q != pos)
            return out, (sent, received)
        if self.kind == "sparse_all_gather":
            # Zeros but the rank's distinct named rows, each from the
            # member whose block holds it; per other member a count and
            # an index per row asked, the rows asked the other way.
            block = xs[pos].shape[0]
            row_bytes = nbytes // block
            rows = [sorted({int(v) for v in named[m].ravel()
                            if 0 <= v < block * k}) for m in members]
            out = np.zeros((block * k,) + xs[pos].shape[1:], xs[pos].dtype)
            for row in rows[pos]:
                out[row] = xs[row // block][row % block]
            count = lambda q, p: sum(1 for row in rows[q] if row // block == p)
            sent = sum(8 + count(pos, p) * 8 + count(p, pos) * row_bytes
                       for p in range(k) if p != pos)
            received = sum(8 + count(p, pos) * 8 + count(pos, p) * row_bytes
                           for p in range(k) if p != pos)
            return out, (sent, received)
        if self.kind == "all_reduce":
            n, size = xs[pos].size, xs[pos].itemsize
            own = (n // k + (1 if pos < n % k else 0)) * size
            others = n * size - own
            return reduce(xs, a["red"]), (others + (k - 1) * own,
                                          (k - 1) * own + others)
        if self.kind == "all_gather":
            return (np.concatenate(xs, axis=a["dim"]),
                    (nbytes * (k - 1), nbytes * (k - 1)))
        if self.kind == "reduce_scatter":
            r = reduce(xs, a["red"])
            return (np.split(r, k, axis=a["dim"])[pos],
                    (nbytes // k * (k - 1),) * 2)
        if self.kind == "all_to_all":
            blocks = [np.split(x, k, axis=a["split"])[pos] for x in xs]
            return (np.concatenate(blocks, axis=a["concat"]),
                    (nbytes // k * (k - 1),) * 2)
        if self.kind == "local_slice":
            return np.split(xs[pos], k, axis=a["dim"])[pos], (0, 0)
        if self.kind == "make_partial":
            # The rank's term of the sub-group's sum: its block at its
            # position in zeros, or (without dim) the buffer on rank 0 only.
            if "dim" not in a:
                return (xs[pos] if pos == 0 else np.zeros_like(xs[pos])), (0, 0)
            parts = [xs[pos] if q == pos else np.zeros_like(xs[pos])
                     for q in range(k)]
            return np.concatenate(parts, axis=a["dim"]), (0, 0)
        if self.kind == "permute":
            sizes = [self.mesh[x] for x in self.axes]
            perm = a["perm"]

            def source_of(p):
                to = digits(p, sizes)
                return undigits([to[perm[i]] for i in range(len(perm))],
                                sizes)
            src = source_of(pos)
            sent = nbytes if any(source_of(q) == pos and q != pos
                                 for q in range(k)) else 0
            received = nbytes if src != pos else 0
            return xs[src], (sent, received)
        raise AssertionError(self.kind)


CASES = [
    Case("all_reduce sum f64 [4] over [0]", "all_reduce", [4], [0], [3, 5],
         "f64", {"red": "sum"}),
    Case("all_reduce sum f32 [2,3] over [1], uneven chunks", "all_reduce",
         [2, 3], [1], [7], "f32", {"red": "sum"}),
    Case("all_reduce mean f64 [2,2] over [0,1]", "all_reduce", [2, 2], [0, 1],
         [4, 2], "f64", {"red": "mean"}),
    Case("all_reduce max f32 [2,2] over [0]", "all_reduce", [2, 2], [0],
         [6], "f32", {"red": "max"}),
    Case("all_reduce min i64 [4] over [0]", "all_reduce", [4], [0], [5],
         "i64", {"red": "min"}),
    Case("all_gather dim 0 [4] over [0]", "all_gather", [4], [0], [2, 3],
         "f32", {"dim": 0}),
    Case("all_gather dim 1 [2,2] over [1]", "all_gather", [2, 2], [1],
         [3, 2, 2], "f64", {"dim": 1}),
    Case("all_gather dim 2 [2,3] over [0,1]", "all_gather", [2, 3], [0, 1],
         [2, 2, 1], "i32", {"dim": 2}),
    Case("reduce_scatter sum dim 0 [2,2] over [0]", "reduce_scatter", [2, 2],
         [0], [4, 3], "f64", {"red": "sum", "dim": 0}),
    Case("reduce_scatter sum dim 1 [4] over [0]", "reduce_scatter", [4], [0],
         [2, 8], "f32", {"red": "sum", "dim": 1}),
    Case("all_to_all split 1 concat 0 [2,2] over [1]", "all_to_all", [2, 2],
         [1], [2, 4], "f64", {"split": 1, "concat": 0}),
    Case("all_to_all split 0 concat 2 [4] over [0]", "all_to_all", [4], [0],
         [8, 1, 2], "f32", {"split": 0, "concat": 2}),
    Case("permute [1,0] over [0,1] of [2,2]", "permute", [2, 2], [0, 1],
         [2, 3], "f64", {"perm": [1, 0]}),
    Case("permute [2,0,1] over [0,1,2] of [2,2,2]", "permute", [2, 2, 2],
         [0, 1, 2], [3], "f32", {"perm": [2, 0, 1]}),
    Case("local_slice dim 1 [2,2] over [1]", "local_slice", [2, 2], [1],
         [2, 4], "f64", {"dim": 1}),
    Case("make_partial dim 0 [2,2] over [0]", "make_partial", [2, 2], [0],
         [3, 2], "f64", {"dim": 0}),
    Case("make_partial [4] over [0]", "make_partial", [4], [0], [5], "f32",
         {}),
    Case("sparse_reduce_scatter f64 [2] over [0]", "sparse_reduce_scatter",
         [2], [0], [8, 3], "f64", {"rows": [5], "range": "-3,11"}),
    Case("sparse_reduce_scatter f32 [2,2] over [0,1], 2-D rows",
         "sparse_reduce_scatter", [2, 2], [0, 1], [8, 2, 2], "f32",
         {"rows": [3, 2], "range": "-1,8"}),
    Case("sparse_reduce_scatter i64 [2,2] over [1]", "sparse_reduce_scatter",
         [2, 2], [1], [6], "i64", {"rows": [4], "range": "-1,6"}),
    Case("sparse_all_gather f64 [2] over [0]", "sparse_all_gather", [2], [0],
         [4, 3], "f64", {"rows": [5], "range": "-3,11"}),
    Case("sparse_all_gather f32 [2,2] over [0,1], 2-D rows",
         "sparse_all_gather", [2, 2], [0, 1], [2, 2, 2], "f32",
         {"rows": [3, 2], "range": "-1,8"}),
    Case("sparse_all_gather i64 [2,2] over [0]", "sparse_all_gather",
         [2, 2], [0], [3], "i64", {"rows": [4], "range": "-1,6"}),
    # Blocks of one size (one function runs on every rank) at offsets of
    # their own, overlapping: rows 3 and 4 go to two members each.
    Case("sparse_exchange f64 among 3, overlapping blocks", "sparse_exchange",
         [3], [0], [9, 2], "f64",
         {"rows": [4, 2], "range": "-2,11", "blocks": [0, 5, 3, 5, 4, 5]}),
    Case("sparse_exchange f32 among 2, 2-D rows", "sparse_exchange",
         [2], [0], [6, 2, 2], "f32",
         {"rows": [5], "range": "-1,7", "blocks": [3, 3, 0, 3]}),
    # Gathered: overlapping blocks, a row from the first member holding it
    # (rows 2 and 3 from member 0, not 1); rows 8 and 9 held by none.
    Case("sparse_exchange gather f64 among 3, overlapping blocks",
         "sparse_exchange", [3], [0], [4, 2], "f64",
         {"rows": [5, 2], "range": "-2,12", "blocks": [0, 4, 2, 4, 4, 4],
          "gather": True, "whole": 10}),
]


def run_case(args, case, index):
    work = os.path.join(args.work_dir, f"case{index}")
    os.makedirs(work, exist_ok=True)
    prog = os.path.join(work, "prog.mlir")
    with open(prog, "w") as f:
        f.write(case.program())
    ranks = int(np.prod(case.mesh))
    proc = subprocess.run(
        [args.run, "--interpret", prog, "--simulate", str(ranks),
         "--random-inputs", "--seed", str(10 * index),
         "--int-range", case.attrs.get("range", "-50,50"), "--output-dir",
         work, "--comm-stats"],
        capture_output=True, text=True)
    if proc.returncode != 0:
        return f"loom-run failed: {proc.stderr.strip()}"
    stats = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"rank (\d+) (\w+): calls (\d+), bytes sent (\d+), "
                     r"received (\d+)", line)
        if m:
            stats[int(m.group(1))] = (int(m.group(4)), int(m.group(5)))
    inputs = [np.load(os.path.join(work, f"rank_{r}", "arg_0.npy"))
              for r in range(ranks)]
    if len({x.tobytes() for x in inputs}) != ranks:
        return "ranks got identical inputs; the check would be vacuous"
    named = None
    if case.kind.startswith("sparse_"):
        named = [np.load(os.path.join(work, f"rank_{r}", "arg_1.npy"))
                 for r in range(ranks)]
    for r in range(ranks):
        got = np.load(os.path.join(work, f"rank_{r}", "result_0.npy"))
        want, traffic = case.expect(inputs, r, named)
        if got.dtype != want.dtype or got.shape != want.shape or \
                got.tobytes() != want.tobytes():
            return (f"rank {r}: result differs from the model "
                    f"(max abs diff {np.max(np.abs(got - want)) if got.shape == want.shape else 'shape'})")
        if stats.get(r, (0, 0)) != traffic:
            return f"rank {r}: bytes {stats.get(r)} != model {traffic}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--work-dir", required=True)
    args = ap.parse_args()
    failures = 0
    for index, case in enumerate(CASES):
        error = run_case(args, case, index)
        print(f"{'FAIL' if error else 'ok'}: {case.name}"
              + (f": {error}" if error else ""))
        failures += bool(error)
    print(f"{len(CASES) - failures} of {len(CASES)} collective cases match "
          f"the model bitwise, bytes included")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
