#!/usr/bin/env bash
# The CUDA target on a machine with one NVIDIA GPU that can build Loom:
# writes the device bundle (scripts/device-bundle.sh) from this build and
# runs it here: the CUDA kernel tests, the GPT-mini, the LLaMA-mini and the
# MoE GPT-mini trained on 1 rank from the generated CUDA code against the host target
# (f32; 1e-4 relative for the losses, 1e-3 norm-wise for the parameters:
# GEMMs differ between cuBLAS and OpenBLAS), tokens/s, kernel times and
# GEMM throughput against cuBLAS. Skips (exit 0) where there is no GPU.
# NCCL refuses two ranks on one GPU: several ranks need several GPUs.
#   scripts/cuda-check.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-release}

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "cuda-check: no NVIDIA GPU here; skipped"
  exit 0
fi
"$root/scripts/setup.sh"
"$root/scripts/configure.sh" "$build" release
cmake --build "$build" --target loom-opt loom-run loom-translate
# (In the build folder: its build/runs/ and build/report.json stay.)
LOOM_BUILD_DIR=$build "$root/scripts/device-bundle.sh" "$build/device-bundle" --steps 10
"$build/device-bundle/run.sh"
