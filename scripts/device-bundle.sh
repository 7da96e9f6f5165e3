#!/usr/bin/env bash
# Writes Loom's device bundle: one folder (at most 64 MiB) that a bare GPU
# node builds and runs with only the NVIDIA driver, CUDA (nvcc, cudart,
# cuBLAS), NCCL (the library, or its Python wheel), CMake, g++ and Python:
# no MLIR, no MPI, no BLAS, no package registry.
#
#   scripts/device-bundle.sh OUT [--steps N]
#
# It holds, per program (the GPT-mini, LLaMA-mini and MoE GPT-mini AdamW
# training steps, 1 rank, f32): the generated C++ for the CUDA and the host target,
# the initial parameters and every step's data, and the host target's
# results on this machine (loss per step, final parameters); the MLIR-free
# runtime sources (runtime/kernels, host, driver, layout, moe, cuda, the MPI
# of one process in runtime/single), Abseil's headers and archives,
# GoogleTest's sources, the CUDA kernel tests and a GEMM benchmark. On the
# node: `OUT/run.sh` (OUT/README.md).
#
# Uses the Loom build in LOOM_BUILD_DIR when set (it must have the CUDA
# target: nvcc here); otherwise sets up and builds build-release.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { echo "usage: scripts/device-bundle.sh OUT [--steps N]" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
out=$1; shift
steps=8
while [[ $# -gt 0 ]]; do
  case $1 in
    --steps) [[ $# -ge 2 ]] || usage; steps=$2; shift 2 ;;
    *) usage ;;
  esac
done
[[ $steps =~ ^[1-9][0-9]*$ ]] || { echo "device-bundle: --steps must be a positive number" >&2; exit 2; }

if [[ -n ${LOOM_BUILD_DIR:-} ]]; then
  build=$LOOM_BUILD_DIR
else
  build=$root/build-release
  "$root/scripts/setup.sh"
  "$root/scripts/configure.sh" "$build" release
  cmake --build "$build" --target loom-opt loom-run loom-translate
fi
for tool in loom-opt loom-run; do
  [[ -x $build/bin/$tool ]] || { echo "device-bundle: no $build/bin/$tool" >&2; exit 1; }
done
if ! grep -q '^LOOM_ENABLE_CUDA:BOOL=ON$' "$build/CMakeCache.txt" 2>/dev/null; then
  echo "device-bundle: $build has no CUDA target (configure where nvcc, cuBLAS and NCCL are installed)" >&2
  exit 1
fi
for inc in runtime/kernels/HostKernels.h.inc runtime/cuda/CudaKernels.h.inc; do
  [[ -f $build/$inc ]] || { echo "device-bundle: $build has no $inc; build it first" >&2; exit 1; }
done

# OUT is replaced only when it is empty or an earlier bundle.
if [[ -e $out && ! -f $out/.loom-device-bundle ]] &&
   [[ -n $(ls -A "$out" 2>/dev/null) || ! -d $out ]]; then
  echo "device-bundle: $out exists and is not a device bundle; not replacing it" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out"
touch "$out/.loom-device-bundle"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. The runtime's sources (MLIR-free), with the kernel declarations the
# build generated from the kernel contracts.
src=$out/src
for dir in kernels host driver layout moe cuda single; do
  mkdir -p "$src/runtime/$dir"
  find "$root/runtime/$dir" -maxdepth 1 -type f \
       \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) \
       -exec cp {} "$src/runtime/$dir/" \;
done
rm -f "$src/runtime/driver/ProgramLoader."*
cp "$build/runtime/kernels/HostKernels.h.inc" "$src/runtime/kernels/"
cp "$build/runtime/cuda/CudaKernels.h.inc" "$src/runtime/cuda/"
mkdir -p "$src/include/loom-c" "$src/test"
cp "$root/include/loom-c/Program.h" "$src/include/loom-c/"
cp "$root/test/unit/CudaKernelsTest.cpp" "$root/scripts/bundle/GemmBench.cu" "$src/test/"
cp "$root/scripts/bundle/CMakeLists.txt" "$root/scripts/bundle/run.sh" \
   "$root/scripts/bundle/check.py" "$root/scripts/bundle/README.md" "$out/"

# 2. Abseil as built here (headers and the static archives Status and
# StatusOr need), GoogleTest's sources.
absl=$out/third_party/absl
mkdir -p "$absl/include" "$absl/lib"
cp -r /usr/include/absl "$absl/include/"
libdir=$(pkg-config --variable=libdir absl_statusor 2>/dev/null || true)
[[ -n $libdir ]] || libdir=/usr/lib/x86_64-linux-gnu
# The archives StatusOr needs: its shared library's Abseil dependencies.
if ! deps=$(ldd "$libdir/libabsl_statusor.so"); then
  echo "device-bundle: cannot list what $libdir/libabsl_statusor.so needs (libabsl-dev)" >&2
  exit 1
fi
for name in absl_statusor absl_status \
            $(sed -n 's/^\s*lib\(absl_[a-z0-9_]*\)\.so.*/\1/p' <<< "$deps"); do
  archive=$libdir/lib$name.a
  [[ -f $archive ]] || { echo "device-bundle: no $archive (libabsl-dev)" >&2; exit 1; }
  cp "$archive" "$absl/lib/"
done
mkdir -p "$out/third_party/googletest"
cp -r /usr/src/googletest/googletest/src /usr/src/googletest/googletest/include \
      "$out/third_party/googletest/"

# 3. The programs: each training step's C++ for both targets, its inputs
# and the host target's results here.
export OPENBLAS_NUM_THREADS=1
for name in gpt_mini llama_mini moe_gpt_mini; do
  dir=$out/programs/$name
  mkdir -p "$dir/reference"
  "$build/bin/loom-opt" "$root/examples/$name.mlir" \
      --loom-training-pipeline="optimizer=adamw lr=1e-2" -o "$work/$name.mlir"
  "$build/bin/loom-run" --interpret "$work/$name.mlir" --train --target host \
      --ranks 1 --steps "$steps" --json --work-dir "$work/$name-host" \
      --output-dir "$work/$name-params" > "$work/$name-host.log"
  "$build/bin/loom-run" --interpret "$work/$name.mlir" --train --target cuda \
      --ranks 1 --steps "$steps" --work-dir "$work/$name-cuda" \
      --emit-executable "$work/$name-cuda.exe" > /dev/null
  cp "$work/$name-host/program.cpp" "$dir/host.cpp"
  cp "$work/$name-cuda/program.cpp" "$dir/cuda.cpp"
  cp -r "$work/$name-host/in" "$dir/in"
  cp "$work/$name-host/out/loss.bin" "$work/$name-params/params.txt" "$dir/reference/"
  grep '^{' "$work/$name-host.log" > "$dir/reference/steps.jsonl" ||
    { echo "device-bundle: the host run of $name printed no steps" >&2; exit 1; }
  while read -r k i; do
    cp "$work/$name-host/out/arg$i.bin" "$dir/reference/"
  done < "$work/$name-params/params.txt"
  echo "$steps" > "$dir/steps"
  # The GEMMs of the CUDA program, for the benchmark: result, lhs and rhs
  # shapes and the two transpose flags of every distinct matmul call.
  python3 - "$dir/cuda.cpp" "$dir/gemms.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
call = re.compile(r"loom::cuda::matmul\([^,]+, \{([0-9, ]*)\}, [^,]+, \{([0-9, ]*)\}, "
                  r"[^,]+, \{([0-9, ]*)\}, ([^,]+), ([^)]+)\);")
flag = lambda s: "1" if s.strip() in ("1", "true") else "0"
seen = []
for m in call.finditer(text):
    shapes = [" ".join(x.replace(",", " ").split()) for x in m.groups()[:3]]
    line = " | ".join(shapes + [flag(m.group(4)), flag(m.group(5))])
    if line not in seen:
        seen.append(line)
if not seen:
    sys.exit("device-bundle: no matmul call found in " + sys.argv[1])
open(sys.argv[2], "w").write("\n".join(seen) + "\n")
PY
done

# 4. At most 64 MiB.
bytes=$(du -sb "$out" | cut -f1)
if (( bytes > 64 * 1024 * 1024 )); then
  echo "device-bundle: $out is $bytes bytes, over 64 MiB" >&2
  exit 1
fi
chmod +x "$out/run.sh"
echo "device-bundle: wrote $out ($((bytes / 1024)) KiB, $steps steps); on the GPU node run $out/run.sh"
