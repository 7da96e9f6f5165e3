#!/usr/bin/env bash
# Benchmarks, one command: set up, build the optimized tools, run every
# benchmark under test/bench/. Not part of CI; the figures are ratios
# against a baseline measured in the same run (the machine is shared).
#   test/bench/run.sh [ARGS for gpt_mini_fwd_bwd.py]
# Runs gpt_mini_fwd_bwd.py (interpreter vs numpy), compile_time.py
# (partitioning passes against blocks and devices) and hetero.py (compile
# time across 16 heterogeneous device groups vs one group; simulated step
# time of an asymmetric vs an even batch split between a fast and a slow
# group) and host_step.py (a training step as generated C++ on 1, 2 and 4
# MPI ranks against the interpreter and JAX on CPU; JAX is installed with
# pip when missing), attention_skipping.cpp (the host attention kernel's
# blocked and scalar range skipping against its dense path) and
# prefix_dedup.py (the prefix-dedup rewrite against the plain step on 2
# ranks), switch_plans.cpp (strategy-switch plans of a 1.3B GPT on 8-64
# devices), step_planner.cpp (the switching planner against the best static
# strategy on long-tailed lengths) and switching_host.py (switching measured
# on 2 host ranks).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${LOOM_BUILD_DIR:-$root/build-release}

"$root/scripts/setup.sh"
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
"$root/scripts/configure.sh" "$build" release
cmake --build "$build" --target loom-opt loom-run loom-translate loom-batch
python3 "$root/test/bench/gpt_mini_fwd_bwd.py" --build "$build" "$@"
python3 "$root/test/bench/compile_time.py" --build "$build"
python3 "$root/test/bench/hetero.py" --build "$build"
if ! python3 -c 'import jax' 2>/dev/null; then
  python3 -m pip install -q "jax[cpu]" || echo "bench: JAX could not be installed; host_step.py skips it"
fi
python3 "$root/test/bench/host_step.py" --build "$build"
# The host attention kernel: range skipping against dense (one thread).
c++ -O2 -std=c++17 -I"$root" -I"$build" "$root/test/bench/attention_skipping.cpp" \
    "$root"/runtime/kernels/*.cpp -lopenblas -lpthread -o "$build/attention-skipping"
OPENBLAS_NUM_THREADS=1 "$build/attention-skipping"
python3 "$root/test/bench/prefix_dedup.py" --build "$build"
# Strategy-switch plans of a 1.3B GPT between strategies on 8-64 devices
# (planning time; volume, per-device and per-link bytes against their
# bounds; relabelling off and on), and the step planner's makespan on
# long-tailed batches against the best static strategy (cost model fitted
# to GEMMs timed here on one thread).
c++ -O2 -std=c++17 -I"$root" -I"$build" "$root/test/bench/switch_plans.cpp" \
    "$root"/runtime/layout/*.cpp -labsl_statusor -labsl_status -labsl_strings \
    -o "$build/switch-plans"
"$build/switch-plans"
c++ -O2 -std=c++17 -I"$root" -I"$build" "$root/test/bench/step_planner.cpp" \
    "$root"/runtime/switching/*.cpp "$root"/runtime/layout/*.cpp -lopenblas \
    -labsl_statusor -labsl_status -labsl_strings -lpthread -o "$build/step-planner"
OPENBLAS_NUM_THREADS=1 "$build/step-planner"
# Switching measured on 2 host ranks: the LLaMA-mini under data and tensor
# parallelism at two lengths, static against switching on the same batches.
python3 "$root/test/bench/switching_host.py" --build "$build"
# MoE expert placement: planner latency for 256 experts x 64 devices per
# layer, and max load / lower bound for the planner and EPLB's greedy over
# skewed traces (distributions), with and without the previous placement;
# the simulated layer time of per-micro-step plans against static ones.
c++ -O2 -std=c++17 -I"$root" "$root/test/bench/moe_placement.cpp" \
    "$root"/runtime/moe/*.cpp -labsl_statusor -labsl_status -labsl_strings \
    -o "$build/moe-placement"
"$build/moe-placement"
# Expert parallelism's exchange on 2 host ranks: the MoE GPT-mini (and a
# wider one) trained with the dense reduce-scatter and all-to-alls and with
# the sparse exchange (routed rows alone), bytes per step and tokens/s.
python3 "$root/test/bench/moe_exchange.py" --build "$build"
# Placement per micro-step on 2 host ranks: static experts, planned
# replicas (resident, fetches overlapped with the previous micro-step),
# the same run with LOOM_OVERLAP=0, every replica fetched each micro-step,
# and a wrong forecast: tokens/s, bytes and balance.
python3 "$root/test/bench/moe_placement_run.py" --build "$build"
