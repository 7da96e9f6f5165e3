// Uneven splits inside a group through propagation. Explicit blocks are
// carried in their proportions: Q = X W with W's columns as 16/8/8 is cut
// 16/8/8 too, and the reshape to 4 heads of 8 cuts the heads 2/1/1 (the
// same columns; 2/1/1 is 4 over 3 balanced, so it is spelled S1:3). A
// balanced split (11/11/10 of 32) is not carried into the heads, where
// 11:11:10 does not divide 4 heads: the reshape takes another split (the
// batch) and the matmul's result is resharded.
// RUN: loom-opt %s --hspmd-propagate-layouts -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @heads(
// CHECK-SAME: -> (tensor<4x4x8xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2]: [S1:3]}>})
// CHECK: nn.matmul {{.*}}hspmd.result_layouts = [#hspmd.union<{[0, 1, 2]: [S1:[16, 8, 8]]}>]
// CHECK: nn.reshape {{.*}}hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2]: [S1:[16, 8, 8]]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2]: [S1:3]}>]
// CHECK: nn.neg {{.*}}hspmd.result_layouts = [#hspmd.union<{[0, 1, 2]: [S1:3]}>]
func.func @heads(%x: tensor<4x32xf64>, %w: tensor<32x32xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2]: [S1:[16, 8, 8]]}>}) -> tensor<4x4x8xf64> {
  %q = nn.matmul %x, %w : tensor<4x32xf64>, tensor<32x32xf64>
  %h = nn.reshape %q : tensor<4x32xf64> to tensor<4x4x8xf64>
  %y = nn.neg %h : tensor<4x4x8xf64>
  return %y : tensor<4x4x8xf64>
}

// -----

// CHECK-LABEL: func.func @balanced(
// CHECK: nn.matmul {{.*}}hspmd.result_layouts = [#hspmd.union<{[0, 1, 2]: [S1:3]}>]
// CHECK: nn.reshape {{.*}}hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2]: [S0:3]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2]: [S0:3]}>]
func.func @balanced(%x: tensor<4x32xf64>, %w: tensor<32x32xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2]: [S1:3]}>}) -> tensor<4x4x8xf64> {
  %q = nn.matmul %x, %w : tensor<4x32xf64>, tensor<32x32xf64>
  %h = nn.reshape %q : tensor<4x32xf64> to tensor<4x4x8xf64>
  %y = nn.neg %h : tensor<4x4x8xf64>
  return %y : tensor<4x4x8xf64>
}

// -----

// Proportions that do not divide a tensor's dimension are not carried
// there: 5:3 over 16 columns reaches the 2 heads of 8 only as 16 = 8 * 2,
// which 5 + 3 = 8 does not divide into whole heads.
// CHECK-LABEL: func.func @no_whole_heads(
// CHECK: nn.matmul {{.*}}hspmd.result_layouts = [#hspmd.union<{[0, 1]: [S1:[10, 6]]}>]
// CHECK-NOT: [2, 1]
// CHECK: nn.reshape {{.*}}hspmd.operand_layouts = [#hspmd.union<{[0, 1]: [{{S0:2|D:2}}]}>]
func.func @no_whole_heads(%x: tensor<4x16xf64>, %w: tensor<16x16xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:[10, 6]]}>}) -> tensor<4x2x8xf64> {
  %q = nn.matmul %x, %w : tensor<4x16xf64>, tensor<16x16xf64>
  %h = nn.reshape %q : tensor<4x16xf64> to tensor<4x2x8xf64>
  %y = nn.neg %h : tensor<4x2x8xf64>
  return %y : tensor<4x2x8xf64>
}

// -----

// A balanced batch split reaches a flatten as its proportions: 8 rows as
// 3/3/2 are 48/48/32 of the 128 flattened rows, not 128's own balanced
// 43/43/42.
// CHECK-LABEL: func.func @flatten(
// CHECK: nn.reshape {{.*}}hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2]: [S0:3]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2]: [S0:[48, 48, 32]]}>]
func.func @flatten(%x: tensor<8x16xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2]: [S0:3]}>}) -> tensor<128xf64> {
  %y = nn.neg %x : tensor<8x16xf64>
  %z = nn.reshape %y : tensor<8x16xf64> to tensor<128xf64>
  %w = nn.neg %z : tensor<128xf64>
  return %w : tensor<128xf64>
}
