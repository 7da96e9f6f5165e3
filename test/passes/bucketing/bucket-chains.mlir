// Chained collectives (a reshard of a data-parallel gradient on a 2-D mesh:
// a slice over the tensor-parallel axis, an all-reduce over the
// data-parallel one, an all-gather back over the tensor-parallel one) do
// not cut each other's buckets short: an all-gather reading a pending
// all-reduce joins its own bucket, issued after the all-reduce bucket (an
// ordinary op reading it still issues it at once). Four all-reduces and
// three all-gathers give one of each per rank, bitwise the same
// results as before on 4 simulated ranks, and the simulator's bytes equal
// the report.
// RUN: loom-opt %s --hspmd-bucket-gradients | FileCheck %s
// RUN: loom-opt %s --hspmd-bucket-gradients -o %t.mlir
// RUN: loom-run --interpret %s --simulate 4 --random-inputs --seed 4 --output-dir %t.before
// RUN: loom-run --interpret %t.mlir --simulate 4 --random-inputs --seed 4 --output-dir %t.after --comm-stats | grep '^rank' > %t.sim
// RUN: cmp %t.before/rank_0/result_0.npy %t.after/rank_0/result_0.npy
// RUN: cmp %t.before/rank_1/result_1.npy %t.after/rank_1/result_1.npy
// RUN: cmp %t.before/rank_2/result_2.npy %t.after/rank_2/result_2.npy
// RUN: cmp %t.before/rank_3/result_3.npy %t.after/rank_3/result_3.npy
// RUN: loom-opt %t.mlir --hspmd-comm-report -o /dev/null | grep '^rank' | diff - %t.sim
// RUN: FileCheck %s --check-prefix=SIM < %t.sim

// CHECK-LABEL: func.func @chains(
// CHECK-COUNT-3: hspmd.local_slice
// CHECK: hspmd.all_reduce sum %{{.*}} over [0] of [2, 2] : tensor<1x12xf64> -> tensor<1x12xf64>
// CHECK-NOT: hspmd.all_reduce
// CHECK: nn.tanh
// CHECK: hspmd.all_gather %{{.*}} dim 0 over [1] of [2, 2] : tensor<1x8xf64> -> tensor<2x8xf64>
// CHECK-NOT: hspmd.all_gather
// SIM: rank 0 all_gather: calls 1
// SIM: rank 0 all_reduce: calls 1
func.func @chains(%a: tensor<8xf64>, %b: tensor<4xf64>, %c: tensor<4xf64>, %d: tensor<4xf64>)
    -> (tensor<8xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>) attributes {hspmd.group = #hspmd.group<[0, 1, 2, 3]>} {
  %a1 = hspmd.local_slice %a dim 0 over [1] of [2, 2] : tensor<8xf64> -> tensor<4xf64>
  %a2 = hspmd.all_reduce sum %a1 over [0] of [2, 2] : tensor<4xf64> -> tensor<4xf64>
  %a3 = hspmd.all_gather %a2 dim 0 over [1] of [2, 2] : tensor<4xf64> -> tensor<8xf64>
  %b1 = hspmd.local_slice %b dim 0 over [1] of [2, 2] : tensor<4xf64> -> tensor<2xf64>
  %b2 = hspmd.all_reduce sum %b1 over [0] of [2, 2] : tensor<2xf64> -> tensor<2xf64>
  %b3 = hspmd.all_gather %b2 dim 0 over [1] of [2, 2] : tensor<2xf64> -> tensor<4xf64>
  %c2 = hspmd.all_reduce sum %c over [0] of [2, 2] : tensor<4xf64> -> tensor<4xf64>
  %d1 = hspmd.local_slice %d dim 0 over [1] of [2, 2] : tensor<4xf64> -> tensor<2xf64>
  %d2 = hspmd.all_reduce sum %d1 over [0] of [2, 2] : tensor<2xf64> -> tensor<2xf64>
  %d3 = nn.tanh %d2 : tensor<2xf64>
  %d4 = hspmd.all_gather %d3 dim 0 over [1] of [2, 2] : tensor<2xf64> -> tensor<4xf64>
  return %a3, %b3, %c2, %d4 : tensor<8xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>
}
