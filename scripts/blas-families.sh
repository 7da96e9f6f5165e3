#!/usr/bin/env bash
# Runs the test suite of a built test folder once per OpenBLAS kernel family
# this CPU can run (OPENBLAS_CORETYPE forces one), so that a test holding only
# on one CPU's BLAS kernels shows up here rather than on the next machine.
#   scripts/blas-families.sh [BUILD_DIR] [-- CTEST_ARGS...]
# BUILD_DIR defaults to build-test (made by scripts/test.sh). LOOM_FAMILIES
# names the families to try (default: every x86-64 family of OpenBLAS 0.3.21).
# A family whose kernels this CPU cannot execute, or that OpenBLAS does not
# take (it falls back to another one), is reported and skipped. Ends with one
# line per family: passed, failed or skipped.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-test
if [ $# -gt 0 ] && [ "$1" != "--" ]; then build=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" = "--" ]; then shift; fi
probe=$build/bin/loom-host-kernel-tests
[ -x "$probe" ] || probe=$(find "$build" -name loom-host-kernel-tests -type f -perm -u+x | head -n 1)
if [ -z "$probe" ]; then
  echo "blas-families.sh: no loom-host-kernel-tests in $build (run scripts/test.sh first)" >&2
  exit 2
fi
families=${LOOM_FAMILIES:-"Prescott Core2 Penryn Dunnington Nehalem Atom Opteron Barcelona Bobcat Bulldozer Piledriver Steamroller Excavator Sandybridge Haswell Zen SkylakeX Cooperlake SapphireRapids"}
summary=()
status=0
for family in $families; do
  out=$(OPENBLAS_CORETYPE=$family OPENBLAS_VERBOSE=2 "$probe" --gtest_filter=HostKernels.Matmul 2>&1)
  if [ $? -ne 0 ]; then
    summary+=("$family: skipped (this CPU cannot run its kernels)")
    continue
  fi
  if ! grep -q "^Core: $family\$" <<<"$out"; then
    summary+=("$family: skipped (OpenBLAS took $(grep -m1 '^Core:' <<<"$out" | cut -c7-) instead)")
    continue
  fi
  echo "== OPENBLAS_CORETYPE=$family"
  if (cd "$build" && OPENBLAS_CORETYPE=$family ctest --output-on-failure --timeout 900 "$@"); then
    summary+=("$family: passed")
  else
    summary+=("$family: FAILED")
    status=1
  fi
done
printf '%s\n' "${summary[@]}"
exit $status
