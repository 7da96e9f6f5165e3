// The communication report (computed from types) equals what the simulator
// counts while it moves the data, rank by rank and kind by kind, for every
// collective kind on a 2 x 2 mesh (an all-reduce of 7 elements has uneven
// chunks; the permute leaves ranks 0 and 3 in place).
// RUN: loom-opt %s --hspmd-comm-report -o /dev/null > %t.report
// RUN: FileCheck %s < %t.report
// RUN: loom-run --interpret %s --simulate 4 --random-inputs --comm-stats | grep '^rank' > %t.sim
// RUN: grep '^rank' %t.report | diff - %t.sim
// CHECK: comm report @mix: 4 devices, {{[0-9]+}} bytes sent per step in all
// CHECK: rank 0 all_reduce: calls 2, bytes sent 144, received 144
// CHECK: rank 0 permute: calls 1, bytes sent 0, received 0
// CHECK: rank 1 permute: calls 1, bytes sent 48, received 48

func.func @mix(%a: tensor<7xf64>, %b: tensor<2x3xf64>, %c: tensor<4x4xf32>)
    -> (tensor<7xf64>, tensor<4x3xf64>, tensor<2x4xf32>, tensor<8x2xf32>, tensor<4x2xf32>, tensor<2x3xf64>)
    attributes {hspmd.group = #hspmd.group<[0, 1, 2, 3]>} {
  %0 = hspmd.all_reduce sum %a over [0, 1] of [2, 2] : tensor<7xf64> -> tensor<7xf64>
  %1 = hspmd.all_reduce max %0 over [1] of [2, 2] : tensor<7xf64> -> tensor<7xf64>
  %2 = hspmd.all_gather %b dim 0 over [0] of [2, 2] : tensor<2x3xf64> -> tensor<4x3xf64>
  %3 = hspmd.reduce_scatter sum %c dim 0 over [1] of [2, 2] : tensor<4x4xf32> -> tensor<2x4xf32>
  %4 = hspmd.all_to_all %c split 1 concat 0 over [0] of [2, 2] : tensor<4x4xf32> -> tensor<8x2xf32>
  %5 = hspmd.local_slice %c dim 1 over [1] of [2, 2] : tensor<4x4xf32> -> tensor<4x2xf32>
  %6 = hspmd.permute %b perm [1, 0] over [0, 1] of [2, 2] : tensor<2x3xf64> -> tensor<2x3xf64>
  return %1, %2, %3, %4, %5, %6 : tensor<7xf64>, tensor<4x3xf64>, tensor<2x4xf32>, tensor<8x2xf32>, tensor<4x2xf32>, tensor<2x3xf64>
}
