#!/usr/bin/env bash
# Quick start 1: set up, build (optimized) and run the main job on the bundled
# example, a 2-layer MLP on two device groups of different kinds, speeds and
# strategies:
#   1. verify it and print every annotated value's layout and the shard each
#      device holds;
#   2. choose the shares of the batch split across the groups from the
#      cluster's speeds and memories, build the SGD training step, lay it out
#      and partition it into one local program per group, and print them;
#   3. print the communication report of each group's program;
#   4. run the step on 6 simulated ranks (each group its own program) and
#      compare loss and updated weights with the single-device interpreter;
#   5-6. compile the programs to C++ for the host target (one class per group,
#      a static arena, Loom's CPU kernels and MPI collectives), build them
#      and train the example for 60 steps (SGD with momentum) on 6 real MPI ranks under
#      mpirun, printing every step's loss (the synthetic task: 64 classes,
#      each row labelled by a fixed random linear teacher).
#   scripts/run.sh [FILE.mlir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOOM_BUILD_DIR:-$root/build-release}
input=${1:-$root/examples/mlp_hetero.mlir}

"$root/scripts/setup.sh"
# Let ccache share objects between clones in different folders.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
"$root/scripts/configure.sh" "$build" release
cmake --build "$build" --target loom-opt loom-run loom-translate
opt="$build/bin/loom-opt"
work="$build/example"
mkdir -p "$work"
echo "== 1. loom-opt --hspmd-print-shards $(basename "$input")"
"$opt" "$input" --hspmd-print-shards -o /dev/null

echo "== 2. the training step, partitioned into one program per device group"
"$opt" "$input" --loom-training-pipeline="optimizer=sgd lr=0.2 momentum=0.9" \
    --loom-partition-pipeline="select-shares=true alignment=16" \
    -o "$work/step.mlir"
step=$(sed -n 's/.*func\.func @\([A-Za-z0-9_]*_train_step\)(.*/\1/p' "$work/step.mlir" | head -1)
# The local programs: every function that specialises the step.
awk -v step="$step" '
  /^  func\.func @/ { show = index($0, "@" step "_group") > 0 }
  /^}/ { show = 0 }
  show { print }' "$work/step.mlir"

echo "== 3. communication per step"
"$opt" "$work/step.mlir" --hspmd-comm-report -o /dev/null |
  awk -v step="$step" '/^comm report/ { show = index($0, "@" step "_group") > 0 } show'

echo "== 4. the step on 6 simulated ranks against one device (f32)"
"$build/bin/loom-run" --interpret "$work/step.mlir" --simulate 6 \
    --global-entry "$step" --random-inputs --int-range 0,63 --tolerance 1e-5

echo "== 5. the programs as C++ (host target): group {0, 1, 2, 3}'s forward phase"
"$opt" "$work/step.mlir" --loom-plan-arena -o /dev/null |
  grep "@${step}_group"
"$build/bin/loom-translate" --loom-to-host-cpp --loom-entry "$step" \
    "$work/step.mlir" -o "$work/program.cpp"
awk '/^class / { classes++ } classes == 1 && /void forward/ { show = 1 }
     show { print } show && /^  }/ { exit }' "$work/program.cpp"

echo "== 6. trained on 6 MPI ranks (mpirun), compiled from that C++"
"$build/bin/loom-run" --interpret "$work/step.mlir" --train --target host \
    --ranks 6 --global-entry "$step" --steps 60 --work-dir "$work/host" \
    --output-dir "$work/trained"
