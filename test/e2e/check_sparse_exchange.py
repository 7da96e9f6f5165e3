#!/usr/bin/env python3
"""Expert parallelism's sparse dispatch against the counts, on MPI ranks.

A one-layer MoE model (a residual around the experts, the mean square
as the loss, a sum over a count so that steps split into micro-batches) whose routing is data (each token's experts are an
nn.data argument, distinct per token), its tokens and experts split over
N ranks (the experts' weights `[S0:N]`, so hspmd-expert-blocks puts them
in N blocks), is trained for a few steps with SGD in f64 on the host
target (loom-run --train --target host) from data written here, and
against the same steps on the interpreter before partitioning: every
step's loss and the final parameters within 1e-9. The partitioned program
must move the dispatched rows by hspmd.sparse_reduce_scatter (forward:
the dispatch; backward: the combine's gradient, a dispatch too), and the
bytes each rank's runtime counts for it must equal what the routing
implies, computed here from the experts alone: per call, to every other
member an 8-byte count, then an 8-byte index and a row of W f64 per entry
of the rank's tokens routed to that member's block, and as much received.

With --placement R the experts run where a plan puts them, per
micro-step (hspmd-moe-placement: a forecast argument, one row a token, R
replica slots a device; --micro-batches K splits each step, so each
micro-step plans from its own tokens' rows): the forecast is the routing's
own counts, or with --wrong-forecast those of other experts (the plan
replicates experts that get few entries). The training must still equal
the interpreter's (whose step is not placed), and the bytes follow the
plan: the plan of each micro-step is read back from nn.moe_plan on the
interpreter (the same kernel, each plan after the first given the
previous micro-step's lookup), and then the bytes are computed here: each
entry goes to the device of its expert's replica (an expert's entries
split evenly among its replicas in slot order); replicas stay resident
(hspmd-moe-resident-replicas), so each rank fetches the weights of the
distinct experts away from their home that it hosts in slots whose
expert changed since the previous micro-step (all slots in the first;
an index out, a weight back), and sends a replica's gradient home (an
index and a weight) in the micro-step whose plan moves it, by the expert
it held, or after the last micro-step.

With --tp P the experts are also split inside (tensor parallelism: each
expert's output columns over P devices, N x P ranks): the rows still move
whole between the P groups' members of one index, and a replica's weights
move as the device's column share, W * W / P f64.

    check_sparse_exchange.py --opt loom-opt --run loom-run --work-dir DIR
        [--ranks N] [--tp P [--hidden H]] [--steps S] [--dense]
        [--placement R [--micro-batches K] [--wrong-forecast]]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

T, K, W, E, V = 32, 2, 8, 4, 16
# The hidden width of the two-matmul experts (--tp).
H = 2 * W


def run(cmd, env=None):
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          env=None if env is None else {**os.environ, **env})
    if proc.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


# --groups: device d holds the tokens TOKENS_OF[d] and the experts' blocks
# OWNER[e] says. Group partitioning splits the combine's width between the
# groups, so each device combines the tokens COMBINES[d] (the pair splits
# every token between its two devices, the single device takes them all).
TOKENS_OF = [(0, T // 4), (T // 4, T // 2), (T // 2, T)]
COMBINES = [(0, T // 2), (T // 2, T), (0, T)]
OWNER = [0, 1, 2, 2]


def model(ranks, slots=0, tp=1, groups=False):
    split = "[" + ", ".join(str(r) for r in range(ranks * tp)) + "]"
    inner = f", D:{tp}" if tp > 1 else ""
    layout = f"#hspmd.union<{{{split}: [S0:{ranks}{inner}]}}>"
    # Tensor parallelism inside the experts: each expert's output columns
    # split over the inner axis.
    experts = (f"#hspmd.union<{{{split}: [S0:{ranks}, S2:{tp}]}}>" if tp > 1
               else layout)
    whole = f"#hspmd.union<{{{split}: [D:{ranks * tp}]}}>"
    if groups:
        # A group of 2 devices (tokens and experts split) and one device:
        # the tokens 1:1 between the groups, the experts 2:2.
        inner = "{[0, 1]: [S0:2]}, {[2]: []}"
        layout = f"#hspmd.union<split(0) shares [1, 1]: {inner}>"
        experts = f"#hspmd.union<split(0) shares [2, 2]: {inner}>"
        whole = "#hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>"
    # With tensor parallelism the experts are two matmuls, W -> H column-
    # then H -> W row-parallel (a partial sum over the inner axis comes
    # back), as in a transformer's MLP.
    second, mlp = "", f"""
    %h = nn.grouped_matmul %buf, %w1, %counts : tensor<{T * K}x{W}xf64>, tensor<{E}x{W}x{W}xf64>, tensor<{E}xi64>"""
    if tp > 1:
        second = f""",
      %w2: tensor<{E}x{H}x{W}xf64> {{nn.param, hspmd.layout = #hspmd.union<{{{split}: [S0:{ranks}, S1:{tp}]}}>}}"""
        mlp = f"""
    %h1 = nn.grouped_matmul %buf, %w1, %counts : tensor<{T * K}x{W}xf64>, tensor<{E}x{W}x{H}xf64>, tensor<{E}xi64>
    %a = nn.gelu %h1 : tensor<{T * K}x{H}xf64>
    %h = nn.grouped_matmul %a, %w2, %counts : tensor<{T * K}x{H}xf64>, tensor<{E}x{H}x{W}xf64>, tensor<{E}xi64>"""
    forecast = (f"""
      %forecast: tensor<{T}x1x{E}xi64> {{nn.data, nn.moe_forecast = {slots} : i64}},"""
                if slots else "")
    return f"""module {{
  func.func @moe_layer(
      %tokens: tensor<{T}xi64> {{nn.data, hspmd.layout = {layout}}},
      %experts: tensor<{T}x{K}xi64> {{nn.data, hspmd.layout = {layout}}},{forecast}
      %wte: tensor<{V}x{W}xf64> {{nn.param, hspmd.layout = {whole}}},
      %router: tensor<{W}x{E}xf64> {{nn.param, hspmd.layout = {whole}}},
      %w1: tensor<{E}x{W}x{H if tp > 1 else W}xf64> {{nn.param, hspmd.layout = {experts}}}{second})
      -> tensor<f64> {{
    %x = nn.embedding %wte, %tokens : tensor<{V}x{W}xf64>, tensor<{T}xi64>
    %logits = nn.matmul %x, %router : tensor<{T}x{W}xf64>, tensor<{W}x{E}xf64>
    %probs = nn.softmax %logits dim = 1 : tensor<{T}x{E}xf64>
    %gates = nn.gather %probs, %experts dim = 1 : tensor<{T}x{E}xf64>, tensor<{T}x{K}xi64>
    %slots, %counts = nn.moe_route %experts num_experts = {E} : tensor<{T}x{K}xi64>
    %buf = nn.moe_dispatch %x, %slots rows = {T * K} : tensor<{T}x{W}xf64>, tensor<{T}x{K}xi64>{mlp}
    %y = nn.moe_combine %h, %slots weights %gates : tensor<{T * K}x{W}xf64>, tensor<{T}x{K}xi64>, tensor<{T}x{K}xf64>
    %z = nn.add %x, %y : tensor<{T}x{W}xf64>, tensor<{T}x{W}xf64>
    %sq = nn.mul %z, %z : tensor<{T}x{W}xf64>, tensor<{T}x{W}xf64>
    %total = nn.reduce sum %sq dims = [0, 1] : tensor<{T}x{W}xf64>
    %count = nn.fill {float(T * W):e} : tensor<f64>
    %loss = nn.div %total, %count : tensor<f64>, tensor<f64>
    return %loss : tensor<f64>
  }}
}}
"""


def routed(experts, ranks):
    """n[r, j]: the entries of rank r's tokens (rows r*T/N..) routed to
    block j (experts j*E/N..) in a step whose experts are `experts`."""
    per = T // ranks
    owner = experts // (E // ranks)
    n = np.zeros((ranks, ranks), dtype=np.int64)
    for r in range(ranks):
        for j in range(ranks):
            n[r, j] = np.count_nonzero(owner[r * per:(r + 1) * per] == j)
    return n


def exchanged(n, ranks, row):
    """Per rank, (sent, received) bytes of one sparse reduce-scatter and of
    one sparse all-gather of rows of `row` bytes, n[r, j] entries of rank
    r's tokens routed to rank j: the dispatch sends each routed entry (an
    index and a row) to its block's rank; the way back asks each block's
    rank for the rows of its entries (indices) and gets them (rows)."""
    scatter, gather = [], []
    for r in range(ranks):
        others = [j for j in range(ranks) if j != r]
        scatter.append((sum(8 + n[r, j] * (8 + row) for j in others),
                        sum(8 + n[j, r] * (8 + row) for j in others)))
        gather.append((sum(8 + n[r, j] * 8 + n[j, r] * row for j in others),
                       sum(8 + n[j, r] * 8 + n[r, j] * row for j in others)))
    return scatter, gather


def routed_groups(experts, tokens=TOKENS_OF):
    """routed() for --groups: n[r, j] entries of device r's `tokens`
    routed to device j's experts."""
    owner = np.array(OWNER)[experts]
    n = np.zeros((3, 3), dtype=np.int64)
    for r, (lo, hi) in enumerate(tokens):
        for j in range(3):
            n[r, j] = np.count_nonzero(owner[lo:hi] == j)
    return n


def expected_bytes(experts, ranks):
    """One step's sparse reduce-scatter and sparse all-gather: whole rows
    (with tensor parallelism too: the tokens and the gradient the combine
    gets are whole on every member of a tensor-parallel group, and the
    experts' output a partial sum over it)."""
    return exchanged(routed(experts, ranks), ranks, W * 8)


def plan_of(args, forecast, path, previous=None):
    """hosts and lookup of nn.moe_plan for `forecast` (rows x 1 x E), on
    the interpreter: the plan the ranks make (after a micro-step whose
    lookup was `previous`, the plan that keeps replicas resident)."""
    rows = forecast.shape[0]
    expert_bytes = getattr(args, "expert_bytes", W * W * 8)
    p = args.ranks * args.placement
    after = (f" previous %p", f", %p: tensor<{p}xi64>", f", tensor<{p}xi64>"
             ) if previous is not None else ("", "", "")
    with open(path("plan.mlir"), "w") as f:
        f.write(f"""func.func @plan(%f: tensor<{rows}x1x{E}xi64>{after[1]})
    -> (tensor<{p}xi64>, tensor<{p}xi64>) {{
  %h, %l = nn.moe_plan %f{after[0]} layer = 0 devices = {args.ranks} slots = {args.placement} expert_bytes = {expert_bytes} : tensor<{rows}x1x{E}xi64>{after[2]}
  return %h, %l : tensor<{p}xi64>, tensor<{p}xi64>
}}
""")
    np.save(path("plan-input.npy"), forecast)
    inputs = ["--input", path("plan-input.npy")]
    if previous is not None:
        np.save(path("plan-previous.npy"), previous)
        inputs += ["--input", path("plan-previous.npy")]
    out = path("plan-out")
    shutil.rmtree(out, ignore_errors=True)
    run([args.run, "--interpret", path("plan.mlir"), "--entry", "plan",
         "--output-dir", out] + inputs)
    return (np.load(os.path.join(out, "result_0.npy")),
            np.load(os.path.join(out, "result_1.npy")))


def placed_bytes(experts, hosts, fetched, sent, ranks, slots, tp=1):
    """Per rank, (sent, received) bytes of one micro-step's sparse
    reduce-scatters (the dispatch and the combine's gradient, each as
    `dispatch`; the replicas' weight gradients home, `home`) and sparse
    all-gathers (the combine and the dispatch's gradient, `back`; the
    replicas' weights, `fetch`), for the micro-step's `experts` (its tokens
    in order, rank r's the r-th block) and plan."""
    tokens = experts.shape[0]
    per = tokens // ranks
    # Each entry's serving device: expert e's entries, in row-major order,
    # split evenly among its replicas in slot order.
    replicas = {e: [p for p in range(len(hosts)) if hosts[p] == e]
                for e in range(E)}
    flat = experts.reshape(-1)
    kept = np.bincount(flat, minlength=E)
    seen = np.zeros(E, dtype=np.int64)
    device = np.zeros(flat.shape, dtype=np.int64)
    for i, e in enumerate(flat):
        r, c, m = len(replicas[e]), kept[e], seen[e]
        share, longer = c // r, c % r
        j = (m // (share + 1) if m < longer * (share + 1)
             else longer + (m - longer * (share + 1)) // share)
        device[i] = replicas[e][j] // slots
        seen[e] += 1
    device = device.reshape(tokens, K)
    n = np.zeros((ranks, ranks), dtype=np.int64)
    for r in range(ranks):
        for j in range(ranks):
            n[r, j] = np.count_nonzero(device[r * per:(r + 1) * per] == j)
    # Weights: the distinct experts each device names, away from home.
    home = E // ranks

    def away(ids):
        f = np.zeros((ranks, ranks), dtype=np.int64)
        for r in range(ranks):
            for e in set(int(x) for x in ids[r * slots:(r + 1) * slots]):
                if e // home != r:
                    f[r, e // home] += 1
        return f

    # A replica's weight on one device: its tensor-parallel share.
    weight = (W * H if tp > 1 else W * W) * 8 // tp
    moved = {"fetch": [], "home": []}
    moved["dispatch"], moved["back"] = exchanged(n, ranks, W * 8)
    f = away(fetched)
    for r in range(ranks):
        others = [j for j in range(ranks) if j != r]
        moved["fetch"].append(
            (sum(8 + f[r, j] * 8 + f[j, r] * weight for j in others),
             sum(8 + f[j, r] * 8 + f[r, j] * weight for j in others)))
    # Each send home is one call: the ids it names.
    for ids in sent:
        f = away(ids)
        call = []
        for r in range(ranks):
            others = [j for j in range(ranks) if j != r]
            call.append((sum(8 + f[r, j] * (8 + weight) for j in others),
                         sum(8 + f[j, r] * (8 + weight) for j in others)))
        moved["home"].append(call)
    return moved


def main():
    global H
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--opt", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--groups", action="store_true",
                    help="expert parallelism over two device groups of 2 "
                         "and 1 devices (3 ranks): the rows by "
                         "hspmd.sparse_exchange both ways")
    ap.add_argument("--dense", action="store_true",
                    help="partition with moe-sparse=false (the dense "
                         "reduce-scatter) and check only the training")
    ap.add_argument("--placement", type=int, default=0,
                    help="replica slots a device: place the experts per "
                         "micro-step from a forecast")
    ap.add_argument("--micro-batches", type=int, default=1)
    ap.add_argument("--wrong-forecast", action="store_true",
                    help="forecast each token's other experts")
    ap.add_argument("--tp", type=int, default=1,
                    help="tensor parallelism inside the experts: --ranks "
                         "expert-parallel devices times this many")
    ap.add_argument("--hidden", type=int, default=H,
                    help="with --tp: the experts' hidden width (W gives "
                         "both weights one shape, whose gradients' ids "
                         "CSE would share)")
    args = ap.parse_args()
    H = args.hidden
    if args.groups:
        args.ranks = 3
    total = args.ranks * args.tp
    # Every weight of an expert: the cost of a replica away from home.
    args.expert_bytes = (2 * W * H if args.tp > 1 else W * W) * 8
    shutil.rmtree(args.work_dir, ignore_errors=True)
    os.makedirs(args.work_dir)
    path = lambda name: os.path.join(args.work_dir, name)

    rng = np.random.default_rng(args.seed)
    tokens = rng.integers(0, V, size=(args.steps, T), dtype=np.int64)
    # Distinct experts per token, skewed so that blocks get unequal rows.
    experts = np.stack([np.stack([rng.choice(E, size=K, replace=False,
                                             p=[0.4, 0.3, 0.2, 0.1])
                                  for _ in range(T)])
                        for _ in range(args.steps)]).astype(np.int64)
    data = path("data")
    os.makedirs(data)
    np.save(os.path.join(data, "tokens.npy"), tokens)
    np.save(os.path.join(data, "experts.npy"), experts)
    # One row a token: its routing's counts, or another expert's.
    forecast = np.zeros((args.steps, T, 1, E), dtype=np.int64)
    for s in range(args.steps):
        for t in range(T):
            for e in experts[s, t]:
                forecast[s, t, 0, (E - 1 - e) if args.wrong_forecast else e] += 1
    if args.placement:
        np.save(os.path.join(data, "forecast.npy"), forecast)

    with open(path("forward.mlir"), "w") as f:
        f.write(model(args.ranks, args.placement, args.tp, args.groups))
    with open(path("unplanned.mlir"), "w") as f:
        f.write(model(args.ranks, args.placement, args.tp, args.groups).replace(
            f", nn.moe_forecast = {args.placement} : i64", ""))
    opts = "--loom-training-pipeline=optimizer=sgd lr=5e-2"
    if args.micro_batches > 1:
        opts += f" micro-batches={args.micro_batches}"
    run([args.opt, path("forward.mlir"), opts, "-o", path("step.mlir")])
    # The reference: the step as one device runs it, unplanned, unsplit.
    run([args.opt, path("unplanned.mlir"),
         "--loom-training-pipeline=optimizer=sgd lr=5e-2", "-o",
         path("reference.mlir")])
    partition = "--loom-partition-pipeline" + (
        "=moe-sparse=false" if args.dense else "")
    run([args.opt, path("step.mlir"), partition, "-o", path("spmd.mlir")])
    with open(path("spmd.mlir")) as f:
        spmd = f.read()
    for kind in ("sparse_reduce_scatter", "sparse_all_gather",
                 "sparse_exchange"):
        print(f"{kind} in the program: "
              f"{len(re.findall(rf'hspmd[.]{kind} ', spmd))}")

    step = "moe_layer_train_step"
    common = ["--train", "--steps", str(args.steps), "--data", data,
              "--seed", str(args.seed)]
    ref = run([args.run, "--interpret", path("reference.mlir"), "--entry", step,
               "--output-dir", path("ref")] + common)
    host = run([args.run, "--interpret", path("spmd.mlir"), "--target",
                "host", "--ranks", str(total), "--global-entry", step,
                "--work-dir", path("host"), "--output-dir", path("out"),
                "--comm-stats", "--trace=" + path("trace.json")] + common)

    losses = lambda text: [float(v) for v in
                           re.findall(r"^step \d+ loss (\S+)", text, re.M)]
    ref_loss, host_loss = losses(ref), losses(host)
    if len(ref_loss) != args.steps or len(host_loss) != args.steps:
        sys.exit(f"FAIL: {len(host_loss)} host and {len(ref_loss)} "
                 f"reference losses for {args.steps} steps")
    loss_error = max(abs(a - b) / max(abs(b), 1e-300)
                     for a, b in zip(host_loss, ref_loss))
    param_error, k = 0.0, 0
    while os.path.exists(os.path.join(path("ref"), f"param_{k}.npy")):
        a = np.load(os.path.join(path("out"), f"param_{k}.npy"))
        b = np.load(os.path.join(path("ref"), f"param_{k}.npy"))
        param_error = max(param_error, float(np.linalg.norm(a - b) /
                                             max(np.linalg.norm(b), 1e-300)))
        k += 1
    # `not x <= y`: a NaN fails.
    params = 4 if args.tp > 1 else 3
    if k != params or not (loss_error <= 1e-9 and param_error <= 1e-9):
        sys.exit(f"FAIL: host training differs from the interpreter: loss "
                 f"error {loss_error:.2e}, parameter error "
                 f"{param_error:.2e} over {k} parameters (bound 1e-09)")
    print(f"host: {args.steps} steps on {total} ranks: loss error "
          f"{loss_error:.2e}, parameter error {param_error:.2e} (bound 1e-09)")
    if args.placement:
        # The replicas' fetches start right after the previous micro-step's
        # (hspmd-overlap-fetches) and run on the communication thread; run
        # where they start (LOOM_OVERLAP=0) they give the same bits and
        # bytes.
        local = spmd[spmd.index(f"func.func @{step}_group0"):]
        local = local[:local.find("func.func", 1)] if "func.func" in local[
            1:] else local
        starts = len(re.findall(r"hspmd[.]sparse_all_gather_start ", local))
        if starts == 0:
            sys.exit("FAIL: no replica fetch is started early")
        # Each rank ran every started fetch on its communication thread
        # (trace thread 2), every step.
        with open(path("trace.json")) as f:
            events = json.load(f)["traceEvents"]
        background = sum(1 for e in events
                         if e.get("cat") == "communication" and
                         e.get("tid") == 2)
        if background != starts * args.steps * total:
            sys.exit(f"FAIL: {background} collectives ran on the "
                     f"communication threads; {starts} started fetches x "
                     f"{args.steps} steps x {total} ranks expected")
        serial = run([args.run, "--interpret", path("spmd.mlir"), "--target",
                      "host", "--ranks", str(total), "--global-entry", step,
                      "--work-dir", path("host-serial"), "--output-dir",
                      path("out-serial"), "--comm-stats"] + common,
                     env={"LOOM_OVERLAP": "0"})
        counted = lambda text: [l for l in text.splitlines()
                                if l.startswith("rank ")]
        same = losses(serial) == host_loss and counted(serial) == counted(host)
        for j in range(k):
            name = f"param_{j}.npy"
            same = same and np.array_equal(
                np.load(os.path.join(path("out"), name)),
                np.load(os.path.join(path("out-serial"), name)))
        if not same:
            sys.exit("FAIL: the fetches run where they start (LOOM_OVERLAP=0) "
                     "give other bits or bytes than overlapped")
        print(f"overlap: {starts} fetches started early, run on the "
              f"communication threads; run where they start, the same bits "
              f"and bytes")
    if args.dense:
        return

    # Two calls of each a step: the dispatch and the combine's gradient (a
    # dispatch) scatter; the combine and the dispatch's gradient (a
    # combine) gather, the gates' gradient reusing the forward's rows.
    kinds = (("sparse_exchange",) if args.groups else
             ("sparse_reduce_scatter", "sparse_all_gather"))
    want = {kind: [[0, 0] for _ in range(args.ranks)] for kind in kinds}
    calls = (4 if args.groups else 2) * args.steps
    # The expert weights each micro-step fetches and sends home.
    weights = 2 if args.tp > 1 else 1
    for s in range(args.steps):
        if args.placement:
            # Micro-batch k: rows k, k + K, ...; every call once a
            # micro-step, the exchange's twice.
            calls = (2 + weights) * args.steps * args.micro_batches
            plans, kept = set(), 0
            lookups = []
            for k in range(args.micro_batches):
                rows = slice(k, None, args.micro_batches)
                hosts, lookup = plan_of(args, forecast[s, rows], path,
                                        lookups[-1] if lookups else None)
                lookups.append(lookup)
                plans.add(tuple(hosts))
                # Resident replicas (hspmd-moe-resident-replicas): a slot
                # that keeps its expert reads its device's first home
                # expert instead (no fetch), and a replica's gradient goes
                # home when its slot changes (by the expert it held) or
                # after the last micro-step.
                home = (np.arange(len(lookup)) // args.placement) * (
                    E // args.ranks)
                if k == 0:
                    fetched, sent = lookup, []
                else:
                    same = lookup == lookups[k - 1]
                    kept += int(np.count_nonzero(same))
                    fetched = np.where(same, home, lookup)
                    sent = [np.where(same, home, lookups[k - 1])]
                if k == args.micro_batches - 1:
                    sent.append(lookup)
                moved = placed_bytes(experts[s, rows], hosts, fetched, sent,
                                     args.ranks, args.placement, args.tp)
                parts = {"sparse_reduce_scatter":
                         [moved["dispatch"], moved["dispatch"]] +
                         moved["home"] * weights,
                         "sparse_all_gather":
                         [moved["back"], moved["back"]] +
                         [moved["fetch"]] * weights}
                for kind, calls_of in parts.items():
                    for call in calls_of:
                        for r, (sent_bytes, received) in enumerate(call):
                            want[kind][r][0] += sent_bytes
                            want[kind][r][1] += received
            print(f"step {s}: {len(plans)} placements in "
                  f"{args.micro_batches} micro-steps, {kept} slots kept")
            continue
        if args.groups:
            # Across the groups, a step's sparse exchanges: the dispatch and
            # the combine's gradient send each device's own tokens' rows to
            # the devices whose blocks hold them; the combine and the
            # dispatch's gradient fetch the rows of the tokens each device
            # combines.
            scatter, _ = exchanged(routed_groups(experts[s]), 3, W * 8)
            _, gather = exchanged(routed_groups(experts[s], COMBINES), 3,
                                  W * 8)
            for moved in (scatter, gather):
                for r, (sent, received) in enumerate(moved):
                    want["sparse_exchange"][r][0] += 2 * sent
                    want["sparse_exchange"][r][1] += 2 * received
            continue
        scatter, gather = expected_bytes(experts[s], args.ranks)
        for kind, moved in (("sparse_reduce_scatter", scatter),
                            ("sparse_all_gather", gather)):
            for r, (sent, received) in enumerate(moved):
                want[kind][r][0] += 2 * sent
                want[kind][r][1] += 2 * received
    # Rank g is expert-parallel member g // tp: every member of a
    # tensor-parallel group exchanges its group's rows (whole: the
    # buffer's width is not split) with the groups of its own index.
    for kind in want:
        for g in range(total):
            r = g // args.tp
            m = re.search(rf"^rank {g} {kind}: calls (\d+), bytes sent "
                          rf"(\d+), received (\d+)", host, re.M)
            got = tuple(int(x) for x in m.groups()) if m else None
            expect = (calls, int(want[kind][r][0]), int(want[kind][r][1]))
            if got != expect:
                sys.exit(f"FAIL: rank {g} {kind} counted {got}; the routing "
                         f"implies calls, sent, received {expect}")
            print(f"rank {g} {kind}: calls {got[0]}, bytes sent {got[1]}, "
                  f"received {got[2]}: equal to the routed entries'")
    if args.groups:
        # What else moves: the routing, the gates and the combine's output
        # (a width split between the groups, the tokens' rows), listed.
        for line in host.splitlines():
            if re.match(r"rank \d+ (all_to_all|reduce_scatter|exchange):",
                        line):
                print(line)
        return
    # Nothing else moves the buffer's rows: the only all-to-alls left
    # would be dense ones.
    if re.search(r"^rank \d+ (all_to_all|reduce_scatter):", host, re.M):
        sys.exit("FAIL: dense all-to-alls or reduce-scatters remain:\n" +
                 "\n".join(l for l in host.splitlines()
                           if l.startswith("rank ")))

if __name__ == "__main__":
    main()
