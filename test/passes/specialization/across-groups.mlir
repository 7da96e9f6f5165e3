// RUN: loom-opt %s --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards --hspmd-specialize | FileCheck %s
// RUN: loom-opt %s --hspmd-propagate-layouts --hspmd-insert-reshards --hspmd-lower-reshards --hspmd-specialize -o %t.mlir
// RUN: loom-run --interpret %t.mlir --simulate 4 --global-entry positions --comm-stats | FileCheck %s --check-prefix=SIM

// A sequence split 3:1 between group {0, 1} (which splits its 12 positions
// again) and group {2, 3} (which splits its 4 again). Each part is
// specialised into @<name>_group<g>: its arguments and results record the
// whole layout, and an iota along the split dimension counts from the
// group's start (0 or 12) plus the device's block start inside the group.
// CHECK-LABEL: func.func @positions_group0(
// CHECK-SAME: -> (tensor<2x6xi64> {hspmd.global_layout = #hspmd.union<split(1) shares [3, 1]: {[0, 1]: [S1:2]}, {[2, 3]: [S1:2]}>})
// CHECK-SAME: attributes {hspmd.group = #hspmd.group<[0, 1]>, hspmd.specializes = @positions}
// CHECK: %[[S0:.*]] = hspmd.axis_index over [0] of [2] stride 6 : tensor<i64>
// CHECK: nn.iota dim = 1 offset %[[S0]] : tensor<2x6xi64>
// CHECK-LABEL: func.func @positions_group1(
// CHECK-SAME: attributes {hspmd.group = #hspmd.group<[2, 3]>, hspmd.specializes = @positions}
// CHECK: %[[S1:.*]] = hspmd.axis_index over [0] of [2] stride 2 base 12 : tensor<i64>
// CHECK: nn.iota dim = 1 offset %[[S1]] : tensor<2x2xi64>
// The four ranks together give the single-device iota.
// SIM: result #0: tensor<2x16xi64> norm-wise relative error 0.000e+00
func.func @positions() -> (tensor<2x16xi64> {hspmd.layout = #hspmd.union<split(1) shares [3, 1]: {[0, 1]: [S1:2]}, {[2, 3]: [S1:2]}>}) {
  %i = nn.iota dim = 1 : tensor<2x16xi64>
  return %i : tensor<2x16xi64>
}

// A table split along the vocabulary across two groups (32 rows each):
// each group looks up the ids in its rows (shifted by its first row, 0 or
// 32) and zeros for the others; the groups' partial lookups sum by an
// exchange to the whole lookup, exactly (one non-zero term per element).
// RUN: loom-run --interpret %t.mlir --simulate 4 --global-entry lookup --random-inputs --int-range 0,64 --seed 7 | FileCheck %s --check-prefix=VOCAB
// CHECK-LABEL: func.func @lookup_group0(
// CHECK: nn.embedding %{{.*}}, %{{.*}} : tensor<32x8xf64>, tensor<4x6xi64>
// CHECK-LABEL: func.func @lookup_group1(
// CHECK: %[[ROW:.*]] = arith.constant dense<32> : tensor<i64>
// CHECK: nn.embedding %{{.*}}, %{{.*}} offset %[[ROW]] : tensor<32x8xf64>, tensor<4x6xi64>
// VOCAB: result #0: tensor<4x6x8xf64> norm-wise relative error 0.000e+00
func.func @lookup(%table: tensor<64x8xf64> {hspmd.layout = #hspmd.union<split(0) shares [1, 1]: {[0, 1]: [D:2]}, {[2, 3]: [D:2]}>},
                  %ids: tensor<4x6xi64> {hspmd.layout = #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2, 3]: [D:2]}>})
    -> (tensor<4x6x8xf64> {hspmd.layout = #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2, 3]: [D:2]}>}) {
  %rows = nn.embedding %table, %ids : tensor<64x8xf64>, tensor<4x6xi64>
  return %rows : tensor<4x6x8xf64>
}

// The table's gradient split the same way across groups, and again inside
// group {2, 3}: each device adds the ids in its rows, shifted by its
// block's start (the group's first row plus the block inside the group);
// no communication, and exactly the single-device scatter.
// RUN: loom-run --interpret %t.mlir --simulate 4 --global-entry scatter --random-inputs --int-range 0,64 --seed 8 --comm-stats | FileCheck %s --check-prefix=SCATTER
// CHECK-LABEL: func.func @scatter_group1(
// CHECK: %[[START:.*]] = hspmd.axis_index over [0] of [2] stride 16 base 32 : tensor<i64>
// CHECK: nn.gather_grad %{{.*}}, %{{.*}} dim = 0 offset %[[START]] : tensor<24x8xf64>, tensor<24x8xi64> to tensor<16x8xf64>
// SCATTER: result #0: tensor<64x8xf64> norm-wise relative error 0.000e+00
// SCATTER-NOT: all_reduce
func.func @scatter(%rows: tensor<24x8xf64> {hspmd.layout = #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2, 3]: [D:2]}>},
                   %ids: tensor<24x8xi64> {hspmd.layout = #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2, 3]: [D:2]}>})
    -> (tensor<64x8xf64> {hspmd.layout = #hspmd.union<split(0) shares [1, 1]: {[0, 1]: [D:2]}, {[2, 3]: [S0:2]}>}) {
  %g = nn.gather_grad %rows, %ids dim = 0 : tensor<24x8xf64>, tensor<24x8xi64> to tensor<64x8xf64>
  return %g : tensor<64x8xf64>
}
