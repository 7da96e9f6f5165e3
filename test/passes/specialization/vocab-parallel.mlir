// Vocabulary parallelism: a table split along its rows. Each device looks
// up the ids in its block (shifted by the block's start, an
// hspmd.axis_index) and yields zeros for the others; the partial lookups
// sum to the whole one (one all-reduce). On the simulator the partitioned
// function equals the global one exactly (one non-zero term per element).
// RUN: loom-opt %s --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards --hspmd-specialize -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: loom-run --interpret %t.mlir --simulate 4 --entry lookup_group0 --global-entry lookup --random-inputs --int-range 0,64 --seed 2 --comm-stats | FileCheck %s --check-prefix=SIM

// CHECK-LABEL: func.func @lookup_group0(
// CHECK-SAME: tensor<16x8xf64>
// CHECK: %[[START:.*]] = hspmd.axis_index over [0] of [4] stride 16 : tensor<i64>
// CHECK-NEXT: %[[ROWS:.*]] = nn.embedding %{{.*}}, %{{.*}} offset %[[START]] : tensor<16x8xf64>, tensor<4x6xi64>
// CHECK-NEXT: hspmd.all_reduce sum %[[ROWS]] over [0] of [4] : tensor<4x6x8xf64> -> tensor<4x6x8xf64>
// SIM: result #0: tensor<4x6x8xf64> norm-wise relative error 0.000e+00
// SIM: rank 0 all_reduce: calls 1
func.func @lookup(%table: tensor<64x8xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>},
                  %ids: tensor<4x6xi64> {nn.data}) -> tensor<4x6x8xf64> {
  %rows = nn.embedding %table, %ids : tensor<64x8xf64>, tensor<4x6xi64>
  %y = nn.tanh %rows : tensor<4x6x8xf64>
  return %y : tensor<4x6x8xf64>
}

// The table's gradient, a scatter-add of the rows' gradients into a table
// split like the table: each device adds the ids in its block, shifted by
// the block's start; no communication.
// RUN: loom-run --interpret %t.mlir --simulate 4 --entry scatter_group0 --global-entry scatter --random-inputs --int-range 0,64 --seed 3 --comm-stats | FileCheck %s --check-prefix=SCATTER
// CHECK-LABEL: func.func @scatter_group0(
// CHECK: %[[START:.*]] = hspmd.axis_index over [0] of [4] stride 16 : tensor<i64>
// CHECK-NEXT: nn.gather_grad %{{.*}}, %{{.*}} dim = 0 offset %[[START]] : tensor<24x8xf64>, tensor<24x8xi64> to tensor<16x8xf64>
// SCATTER: result #0: tensor<64x8xf64> norm-wise relative error 0.000e+00
// SCATTER-NOT: rank 0
func.func @scatter(%rows: tensor<24x8xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>},
                   %ids: tensor<24x8xi64> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>})
    -> (tensor<64x8xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>}) {
  %g = nn.gather_grad %rows, %ids dim = 0 : tensor<24x8xf64>, tensor<24x8xi64> to tensor<64x8xf64>
  return %g : tensor<64x8xf64>
}
