#!/usr/bin/env bash
# Quick start 2: set up, build (sanitized) and run the whole test suite: lit +
# FileCheck, GoogleTest unit tests, the docs check and a bounded fuzz run, all
# under ctest, which ends with its summary line.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOOM_BUILD_DIR:-$root/build-test}

"$root/scripts/setup.sh"
# Let ccache share objects between clones in different folders.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
"$root/scripts/configure.sh" "$build" test
cmake --build "$build" --target all mlir-doc
cd "$build"
ctest --output-on-failure --timeout 900
