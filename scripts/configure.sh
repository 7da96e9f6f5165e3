#!/usr/bin/env bash
# Configures a Loom build folder.  configure.sh BUILD_DIR release|test
#   release: optimized, for running.
#   test:    optimized with debug info, AddressSanitizer + UBSan on Loom's
#            code, the libFuzzer target, unit tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$1 kind=$2

common=(-G Ninja -S "$root" -B "$build"
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit)
case "$kind" in
  release)
    cmake "${common[@]}" -DCMAKE_BUILD_TYPE=Release -DLOOM_ENABLE_TESTS=OFF >/dev/null ;;
  test)
    cmake "${common[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOM_ENABLE_TESTS=ON \
      -DLOOM_ENABLE_SANITIZERS=ON -DLOOM_ENABLE_FUZZER=ON >/dev/null ;;
  *) echo "configure.sh: unknown build kind '$kind' (release or test)" >&2; exit 2 ;;
esac
