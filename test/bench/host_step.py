#!/usr/bin/env python3
"""Benchmark: time of one training step of the GPT-mini (and a variant of
width 256) compiled to C++ for the host target and run on 1, 2 and 4 MPI
ranks (data parallel), against the reference interpreter and against JAX
on CPU running the same model and batch under jax.jit (1 device, and 4
host devices with the batch sharded the same way), on this machine in the
same run. Also the time to compile the generated C++, and the Ascend
target on Loom's CPU test double of CANN (1 and 2 ranks): the same host
kernels under the Ascend runtime's calls, so its ratio is the overhead of
that layer (descriptors, two-phase launches, HCCL over MPI), not Ascend's
speed.

Every side runs the same AdamW step (lr 1e-2) on the same shapes; figures
are tokens per second, the median over steps 2..K of each run (the first
step warms caches), and ratios against the generated code on 1 rank.
Threads: Loom's ranks run one thread each (OpenBLAS pinned); JAX is pinned
to one thread per device (--xla_cpu_multi_thread_eigen=false), so a rank
and a JAX device have the same compute. The machine has few cores: 4 ranks
(or 4 JAX devices) oversubscribe it, which the ratios show.

    test/bench/host_step.py [--build DIR] [--sizes mini,wide] [--steps K]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "examples"))
import gpt_mini_reference as ref  # noqa: E402

SIZES = {
    "mini": ref.Config(),
    "wide": ref.Config(batch=8, seq=128, vocab=512, width=256, heads=8,
                       layers=2, ffn=1024),
}


def check(command, env=None):
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(command[:4])} ... failed:\n"
                 f"{(proc.stdout + proc.stderr)[-3000:]}")
    return proc.stdout


def median_rate(output):
    rates = [float(r) for r in re.findall(r"tokens/s (\S+)", output)]
    return statistics.median(rates[1:] if len(rates) > 1 else rates)


def toolchain(build):
    """The compile command loom-run uses (tools/loom-run/HostToolchain.h)."""
    with open(os.path.join(build, "tools", "loom-run", "HostToolchain.h")) as f:
        text = f.read()
    get = lambda name: re.search(r"#define " + name + r' "(.*)"', text).group(1)
    return ([get("LOOM_HOST_CXX")] + get("LOOM_HOST_FLAGS").split()
            + get("LOOM_HOST_INCLUDES").split(), get("LOOM_HOST_LIBS").split())


def loom_side(args, cfg, name, work):
    opt = os.path.join(args.build, "bin", "loom-opt")
    run = os.path.join(args.build, "bin", "loom-run")
    translate = os.path.join(args.build, "bin", "loom-translate")
    text = ref.module_text(cfg, "f32")
    results = {}
    for ranks in (1, 2, 4):
        src = text
        if ranks > 1:
            layout = ("{hspmd.layout = #hspmd.union<{[" +
                      ", ".join(str(r) for r in range(ranks)) +
                      f"]: [S0:{ranks}]}}>, nn.data}}")
            src = re.sub(r"(%(?:tokens|targets): tensor<[^>]*>) \{nn\.data\}",
                         r"\1 " + layout, src)
        forward = os.path.join(work, f"{name}_{ranks}.mlir")
        step = os.path.join(work, f"{name}_{ranks}_step.mlir")
        with open(forward, "w") as f:
            f.write(src)
        check([opt, forward, "--loom-training-pipeline=optimizer=adamw lr=1e-2",
               "--loom-partition-pipeline", "-o", step])
        if ranks == 1:
            out = check([run, "--interpret", step, "--train", "--steps",
                         str(args.steps), "--vocab", str(cfg.vocab)])
            results["interpreter"] = median_rate(out)
            # The generated C++ and the time to compile it.
            cpp = os.path.join(work, f"{name}.cpp")
            check([translate, "--loom-to-host-cpp", step, "-o", cpp])
            head, libs = toolchain(args.build)
            start = time.perf_counter()
            check(head + [cpp, "-o", os.path.join(work, f"{name}.bin")] + libs)
            results["compile_s"] = time.perf_counter() - start
            with open(cpp) as f:
                results["cpp_lines"] = sum(1 for _ in f)
        out = check([run, "--interpret", step, "--train", "--target", "host",
                     "--ranks", str(ranks), "--global-entry",
                     "gpt_mini_train_step", "--steps", str(args.steps),
                     "--vocab", str(cfg.vocab),
                     "--work-dir", os.path.join(work, f"{name}_{ranks}_host")])
        results[f"host{ranks}"] = median_rate(out)
        if ranks <= 2:
            # The Ascend target on the CPU test double: the same host
            # kernels under the Ascend runtime's calls (descriptors,
            # two-phase launches, HCCL over MPI): its overhead, not
            # Ascend's speed.
            out = check([run, "--interpret", step, "--train", "--target",
                         "ascend", "--ascend-double", "--ranks", str(ranks),
                         "--global-entry", "gpt_mini_train_step", "--steps",
                         str(args.steps), "--vocab", str(cfg.vocab),
                         "--work-dir",
                         os.path.join(work, f"{name}_{ranks}_ascend")])
            results[f"ascend{ranks}"] = median_rate(out)
    return results


JAX_PROGRAM = r'''
import os, sys, time, statistics, json
import numpy as np
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
batch, seq, vocab, width, heads, layers, ffn, devices, steps = map(int, sys.argv[1:10])
D = width // heads
rng = np.random.default_rng(0)
def init(shape):
    if len(shape) >= 2:
        a = 1 / np.sqrt(shape[-2])
        return jnp.asarray(rng.uniform(-a, a, shape), jnp.float32)
    return jnp.ones(shape, jnp.float32)
params = {"wte": init((vocab, width)), "wpe": init((seq, width)),
          "lnf_g": init((width,)), "lnf_b": init((width,)),
          "whead": init((width, vocab))}
for l in range(layers):
    for n, s in (("ln1_g", (width,)), ("ln1_b", (width,)), ("wq", (width, width)),
                 ("wk", (width, width)), ("wv", (width, width)), ("wo", (width, width)),
                 ("ln2_g", (width,)), ("ln2_b", (width,)), ("w1", (width, ffn)),
                 ("b1", (ffn,)), ("w2", (ffn, width)), ("b2", (width,))):
        params[f"l{l}_{n}"] = init(s)
def ln(x, g, b):
    m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + 1e-5) * g + b
def loss_fn(p, tokens, targets):
    x = p["wte"][tokens] + p["wpe"][None]
    mask = jnp.tril(jnp.ones((seq, seq), bool))
    for l in range(layers):
        L = lambda n: p[f"l{l}_{n}"]
        h = ln(x, L("ln1_g"), L("ln1_b"))
        q, k, v = (jnp.reshape(h @ L(n), (batch, seq, heads, D)) for n in ("wq", "wk", "wv"))
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(D)
        s = jnp.where(mask, s, -jnp.inf)
        a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v).reshape(batch, seq, width)
        x = x + a @ L("wo")
        h2 = ln(x, L("ln2_g"), L("ln2_b"))
        x = x + jax.nn.gelu(h2 @ L("w1") + L("b1"), approximate=False) @ L("w2") + L("b2")
    logits = ln(x, p["lnf_g"], p["lnf_b"]) @ p["whead"]
    lse = jax.nn.logsumexp(logits, -1)
    picked = jnp.take_along_axis(logits, targets[..., None], -1)[..., 0]
    return (lse - picked).sum() / (batch * seq)
def step(p, m, v, t, tokens, targets):
    loss, g = jax.value_and_grad(loss_fn)(p, tokens, targets)
    b1, b2, lr, eps = 0.9, 0.999, 1e-2, 1e-8
    m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
    v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
    p = jax.tree.map(lambda p, m, v: p - lr * (m / (1 - b1 ** t)) / (jnp.sqrt(v / (1 - b2 ** t)) + eps), p, m, v)
    return loss, p, m, v
zeros = jax.tree.map(jnp.zeros_like, params)
m, v = zeros, zeros
if devices > 1:
    mesh = Mesh(np.array(jax.devices()[:devices]), ("d",))
    data = NamedSharding(mesh, P("d"))
    repl = NamedSharding(mesh, P())
    params, m, v = (jax.device_put(t, repl) for t in (params, m, v))
    fn = jax.jit(step, in_shardings=(repl, repl, repl, None, data, data),
                 out_shardings=(repl, repl, repl, repl))
else:
    data = None
    fn = jax.jit(step)
rates = []
for s in range(1, steps + 1):
    tokens = rng.integers(0, vocab, (batch, seq))
    targets = (7 * tokens + 3) % vocab
    tokens, targets = jnp.asarray(tokens), jnp.asarray(targets)
    if data is not None:
        tokens, targets = jax.device_put(tokens, data), jax.device_put(targets, data)
    start = time.perf_counter()
    loss, params, m, v = fn(params, m, v, float(s), tokens, targets)
    loss.block_until_ready()
    rates.append(batch * seq / (time.perf_counter() - start))
print(json.dumps({"rate": statistics.median(rates[1:]), "loss": float(loss)}))
'''


def jax_side(args, cfg, devices):
    env = dict(os.environ)
    env["XLA_FLAGS"] = (f"--xla_force_host_platform_device_count={devices} "
                        "--xla_cpu_multi_thread_eigen=false "
                        "intra_op_parallelism_threads=1")
    env["JAX_PLATFORMS"] = "cpu"
    out = check([sys.executable, "-c", JAX_PROGRAM, str(cfg.batch),
                 str(cfg.seq), str(cfg.vocab), str(cfg.width), str(cfg.heads),
                 str(cfg.layers), str(cfg.ffn), str(devices), str(args.steps)],
                env=env)
    return float(re.search(r'"rate": ([0-9.e+-]+)', out).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build-release"))
    ap.add_argument("--sizes", default="mini,wide")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--coretype", default="auto",
                    help="OPENBLAS_CORETYPE for every Loom side (auto: what "
                         "loom-run picks for the host target, SkylakeX on "
                         "AVX-512, Haswell on AVX2; none: OpenBLAS's own)")
    args = ap.parse_args()
    if args.coretype == "auto":
        flags = open("/proc/cpuinfo").read()
        args.coretype = ("SkylakeX" if "avx512f" in flags else
                         "Haswell" if "avx2" in flags else "none")
    if args.coretype != "none":
        os.environ["OPENBLAS_CORETYPE"] = args.coretype
    print(f"OpenBLAS kernels for Loom: "
          f"{os.environ.get('OPENBLAS_CORETYPE', 'detected by OpenBLAS')}")
    try:
        import jax  # noqa: F401
        have_jax = True
    except ImportError:
        have_jax = False
        print("note: JAX is not installed (pip install 'jax[cpu]'); "
              "its columns are skipped")
    with tempfile.TemporaryDirectory() as work:
        for name in args.sizes.split(","):
            cfg = SIZES[name]
            r = loom_side(args, cfg, name, work)
            if have_jax:
                r["jax1"] = jax_side(args, cfg, 1)
                r["jax4"] = jax_side(args, cfg, 4)
            base = r["host1"]
            print(f"{name} (batch {cfg.batch}, sequence {cfg.seq}, width "
                  f"{cfg.width}, f32, AdamW), tokens/s, median of steps 2.."
                  f"{args.steps}:")
            for key, label in (("host1", "generated C++, 1 rank"),
                               ("host2", "generated C++, 2 ranks (DP)"),
                               ("host4", "generated C++, 4 ranks (DP)"),
                               ("ascend1", "Ascend on the CPU double, 1"),
                               ("ascend2", "Ascend on the CPU double, 2"),
                               ("interpreter", "reference interpreter"),
                               ("jax1", "JAX jit, 1 CPU device"),
                               ("jax4", "JAX jit, 4 CPU devices (DP)")):
                if key in r:
                    print(f"  {label:32s} {r[key]:12.0f}   "
                          f"{r[key] / base:6.2f} x generated-1")
            print(f"  generated C++: {r['cpp_lines']} lines, compiled in "
                  f"{r['compile_s']:.1f} s")


if __name__ == "__main__":
    main()
