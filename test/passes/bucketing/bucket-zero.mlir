// Reduce-scatters and all-gathers along dimension 0 (ZeRO's gradients and
// parameters) share one collective each; one along dimension 1, whose
// blocks are not contiguous rows, stays alone. On 2 simulated ranks the
// bucketed function gives bitwise the results of the original one, and the
// simulator's bytes equal the report.
// RUN: loom-opt %s --hspmd-bucket-gradients | FileCheck %s
// RUN: loom-opt %s --hspmd-bucket-gradients -o %t.mlir
// RUN: loom-run --interpret %s --simulate 2 --random-inputs --seed 9 --output-dir %t.before
// RUN: loom-run --interpret %t.mlir --simulate 2 --random-inputs --seed 9 --output-dir %t.after --comm-stats | grep '^rank' > %t.sim
// RUN: cmp %t.before/rank_0/result_0.npy %t.after/rank_0/result_0.npy
// RUN: cmp %t.before/rank_1/result_1.npy %t.after/rank_1/result_1.npy
// RUN: cmp %t.before/rank_0/result_2.npy %t.after/rank_0/result_2.npy
// RUN: cmp %t.before/rank_1/result_3.npy %t.after/rank_1/result_3.npy
// RUN: cmp %t.before/rank_0/result_4.npy %t.after/rank_0/result_4.npy
// RUN: loom-opt %t.mlir --hspmd-comm-report -o /dev/null | grep '^rank' | diff - %t.sim

// CHECK-LABEL: func.func @zero(
// CHECK: hspmd.reduce_scatter sum %{{.*}} dim 1 over [0] of [2] : tensor<4x6xf64> -> tensor<4x3xf64>
// CHECK-NEXT: %[[A:.*]] = nn.reshape %{{.*}} : tensor<4x6xf64> to tensor<2x12xf64>
// CHECK-NEXT: %[[B:.*]] = nn.reshape %{{.*}} : tensor<8xf64> to tensor<2x4xf64>
// CHECK-NEXT: %[[C:.*]] = nn.concat %[[A]], %[[B]] dim = 1 : tensor<2x12xf64>, tensor<2x4xf64>
// CHECK-NEXT: %[[RS:.*]] = hspmd.reduce_scatter sum %[[C]] dim 0 over [0] of [2] : tensor<2x16xf64> -> tensor<1x16xf64>
// CHECK: %[[G:.*]] = hspmd.all_gather %{{.*}} dim 0 over [0] of [2] : tensor<1x16xf64> -> tensor<2x16xf64>
// CHECK-NEXT: %[[S:.*]] = nn.slice %[[G]] offsets = [0, 0] sizes = [2, 12] strides = [1, 1]
// CHECK-NEXT: nn.reshape %[[S]] : tensor<2x12xf64> to tensor<4x6xf64>
// CHECK-NOT: hspmd.all_gather
// CHECK: return
func.func @zero(%g1: tensor<4x6xf64>, %g2: tensor<8xf64>, %p1: tensor<2x6xf64>,
                %p2: tensor<4xf64>)
    -> (tensor<2x6xf64>, tensor<4xf64>, tensor<4x3xf64>, tensor<4x6xf64>, tensor<8xf64>)
    attributes {hspmd.group = #hspmd.group<[0, 1]>} {
  %r1 = hspmd.reduce_scatter sum %g1 dim 0 over [0] of [2] : tensor<4x6xf64> -> tensor<2x6xf64>
  %r2 = hspmd.reduce_scatter sum %g2 dim 0 over [0] of [2] : tensor<8xf64> -> tensor<4xf64>
  %r3 = hspmd.reduce_scatter sum %g1 dim 1 over [0] of [2] : tensor<4x6xf64> -> tensor<4x3xf64>
  %u1 = nn.sub %p1, %r1 : tensor<2x6xf64>, tensor<2x6xf64>
  %u2 = nn.sub %p2, %r2 : tensor<4xf64>, tensor<4xf64>
  %a1 = hspmd.all_gather %u1 dim 0 over [0] of [2] : tensor<2x6xf64> -> tensor<4x6xf64>
  %a2 = hspmd.all_gather %u2 dim 0 over [0] of [2] : tensor<4xf64> -> tensor<8xf64>
  return %r1, %r2, %r3, %a1, %a2 : tensor<2x6xf64>, tensor<4xf64>, tensor<4x3xf64>, tensor<4x6xf64>, tensor<8xf64>
}
