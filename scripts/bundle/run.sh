#!/usr/bin/env bash
# Builds and runs Loom's device bundle on this node (README.md): the CUDA
# kernel tests, each program on the GPU and on this CPU against the host
# results made where the bundle was written, tokens/s, kernel and phase
# times, and GEMM throughput against cuBLAS. Needs CMake, a C++17 g++ and
# Python 3; for the GPU part nvcc (PATH or /usr/local/cuda/bin), cuBLAS and
# NCCL (NCCL_ROOT, the nvidia-nccl Python wheel, or next to CUDA). Without a
# GPU it still builds everything and runs the CPU part; the GPU part reports
# that it skipped.
#   ./run.sh [--no-cuda]      (BUNDLE_BUILD: build folder, default ./build)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUNDLE_BUILD:-$here/build}
cuda=ON
[[ ${1:-} == --no-cuda ]] && cuda=OFF

# (nvidia-smi picks the architecture to compile for; whether the GPU part
# runs, check.py asks the CUDA runtime itself, and fails where nvidia-smi
# lists a GPU the runtime cannot use.)
gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  gpu=1
fi
args=(-DCMAKE_BUILD_TYPE=Release -DBUNDLE_CUDA=$cuda)
if command -v ninja >/dev/null 2>&1; then args+=(-G Ninja); fi
if [[ $cuda == ON ]]; then
  nvcc=$(command -v nvcc || true)
  [[ -n $nvcc ]] || nvcc=/usr/local/cuda/bin/nvcc
  if [[ ! -x $nvcc ]]; then
    echo "bundle: no nvcc (PATH or /usr/local/cuda/bin); run ./run.sh --no-cuda for the CPU part alone" >&2
    exit 1
  fi
  args+=(-DCMAKE_CUDA_COMPILER="$nvcc")
  # NCCL: NCCL_ROOT, else a Python wheel's (nvidia-nccl-cu*), else CUDA's.
  nccl=${NCCL_ROOT:-}
  if [[ -z $nccl ]]; then
    nccl=$(python3 - <<'PY' 2>/dev/null || true
import glob, os, sys
for base in sys.path:
    for lib in sorted(glob.glob(os.path.join(base, "nvidia", "**", "libnccl.so*"), recursive=True)):
        root = os.path.dirname(os.path.dirname(lib))
        if os.path.exists(os.path.join(root, "include", "nccl.h")):
            print(root)
            sys.exit(0)
PY
)
  fi
  # (Always given, empty too: a cached NCCL_ROOT of an earlier run must not
  # stay.)
  args+=(-DNCCL_ROOT="$nccl")
  # The GPU's own architecture where nvidia-smi names it, else H100/H200's.
  if [[ $gpu == 1 ]]; then
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .' || true)
    [[ $cap =~ ^[0-9]+$ ]] && args+=(-DCMAKE_CUDA_ARCHITECTURES=$cap)
  fi
fi

start=$(date +%s)
cmake -S "$here" -B "$build" "${args[@]}" > "$build.configure.log" 2>&1 ||
  { cat "$build.configure.log" >&2; echo "bundle: configuring failed" >&2; exit 1; }
cmake --build "$build" -j "$(nproc)" > "$build.build.log" 2>&1 ||
  { tail -50 "$build.build.log" >&2; echo "bundle: building failed (all of it: $build.build.log)" >&2; exit 1; }
echo "bundle: built in $(( $(date +%s) - start )) s (cuda $cuda)"
exec python3 "$here/check.py" --bundle "$here" --build "$build" --cuda "$cuda" \
     --nvidia-smi-gpu "$gpu"
