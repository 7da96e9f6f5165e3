// loom-run --simulate: bad programs and options end with a diagnostic.
// RUN: not loom-run --interpret %s --entry global --simulate 2 --random-inputs 2>&1 | FileCheck %s --check-prefix=GLOBAL
// GLOBAL: error: 'hspmd.all_reduce' op is in the global view (it carries layouts); the simulator runs local-view programs, after specialisation
// RUN: not loom-run --interpret %s --entry local --simulate 3 --random-inputs 2>&1 | FileCheck %s --check-prefix=MESH
// MESH: error: 'hspmd.all_reduce' op runs over a mesh of 2 devices but its group has 3 ranks in the simulator
// RUN: not loom-run --interpret %s --entry local --simulate 0 --random-inputs 2>&1 | FileCheck %s --check-prefix=RANKS
// RANKS: error: --simulate expects 1 to 4096 ranks, got 0
// RUN: not loom-run --interpret %s --entry local --simulate 2 --repeat 2 --random-inputs 2>&1 | FileCheck %s --check-prefix=REPEAT
// REPEAT: error: --repeat times the single-device interpreter; it does not combine with --simulate
// The same rank 0 inputs as a plain run; rank 1 gets seed + 1.
// RUN: loom-run --interpret %s --entry local --simulate 2 --random-inputs --seed 5 --print --comm-stats | FileCheck %s --check-prefix=OK
// OK: rank 0 result #0: tensor<2xf64> = [[[A:.*]]]
// OK: rank 0 all_reduce: calls 1, bytes sent 16, received 16
// OK: rank 1 result #0: tensor<2xf64> = [[[A]]]
// OK: rank 1 all_reduce: calls 1, bytes sent 16, received 16

func.func @global(%x: tensor<4xf64>) -> tensor<4xf64> {
  %y = hspmd.all_reduce sum %x over [0] of [2] : tensor<4xf64> -> tensor<4xf64>
      from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[0, 1]: [D:2]}>
  return %y : tensor<4xf64>
}

func.func @local(%x: tensor<2xf64>) -> tensor<2xf64> {
  %y = hspmd.all_reduce sum %x over [0] of [2] : tensor<2xf64> -> tensor<2xf64>
  return %y : tensor<2xf64>
}
