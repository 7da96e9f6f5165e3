#!/usr/bin/env bash
# Quick start 1: set up, build (optimized) and run the main job on the bundled
# example: verify a heterogeneous 2-layer MLP and print every annotated value's
# layout and the shard each device holds.
#   scripts/run.sh [FILE.mlir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOOM_BUILD_DIR:-$root/build-release}
input=${1:-$root/examples/mlp_hetero.mlir}

"$root/scripts/setup.sh"
# Let ccache share objects between clones in different folders.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
"$root/scripts/configure.sh" "$build" release
cmake --build "$build" --target loom-opt loom-run
echo "== loom-opt --hspmd-print-shards $(basename "$input")"
"$build/bin/loom-opt" "$input" --hspmd-print-shards -o /dev/null
