// --hspmd-specialize writes the function every device of a group runs:
// block shapes, local-view collectives, the global layouts kept as
// hspmd.global_layout. Each specialisation also runs sharded on the
// simulator from global inputs and must equal the global function.
// RUN: loom-opt %s --hspmd-specialize | FileCheck %s
// RUN: loom-opt %s --hspmd-specialize -o %t.mlir
// RUN: loom-run --interpret %t.mlir --simulate 2 --entry mlp_tp_group0 --global-entry mlp_tp --random-inputs --seed 1 --comm-stats | FileCheck %s --check-prefix=TP
// RUN: loom-run --interpret %t.mlir --simulate 2 --entry center_group0 --global-entry center --random-inputs --seed 2 | FileCheck %s --check-prefix=MEAN
// RUN: loom-run --interpret %t.mlir --simulate 2 --entry positions_group0 --global-entry positions --random-inputs | FileCheck %s --check-prefix=POS

#D2 = #hspmd.union<{[0, 1]: [D:2]}>
#S0 = #hspmd.union<{[0, 1]: [S0:2]}>
#S1 = #hspmd.union<{[0, 1]: [S1:2]}>
#P2 = #hspmd.union<{[0, 1]: [P(sum):2]}>

// Megatron MLP, lowered: W1 by columns, W2 by rows, one all-reduce.
// CHECK-LABEL: func.func @mlp_tp_group0(
// CHECK-SAME: %{{.*}}: tensor<8x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [D:2]}>, nn.name = "x"}
// CHECK-SAME: %{{.*}}: tensor<16x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [S1:2]}>, nn.name = "w1"}
// CHECK-SAME: %{{.*}}: tensor<16x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [S0:2]}>, nn.name = "w2"})
// CHECK-SAME: -> (tensor<8x16xf64> {hspmd.global_layout = #hspmd.union<{[0, 1]: [D:2]}>})
// CHECK-SAME: attributes {hspmd.group = #hspmd.group<[0, 1]>, hspmd.specializes = @mlp_tp}
// CHECK-NEXT: nn.matmul %{{.*}}, %{{.*}} : tensor<8x16xf64>, tensor<16x16xf64>
// CHECK-NEXT: nn.tanh %{{.*}} : tensor<8x16xf64>
// CHECK-NEXT: nn.matmul %{{.*}}, %{{.*}} : tensor<8x16xf64>, tensor<16x16xf64>
// CHECK-NEXT: hspmd.all_reduce sum %{{.*}} over [0] of [2] : tensor<8x16xf64> -> tensor<8x16xf64>
// CHECK-NOT: from
// CHECK-NEXT: return
// TP: result #0: tensor<8x16xf64> norm-wise relative error {{[0-9.]+e-(1[1-9]|[2-9][0-9])}}
// TP-NEXT: rank 0 all_reduce: calls 1, bytes sent 1024, received 1024
func.func @mlp_tp(%x: tensor<8x16xf64> {hspmd.layout = #D2},
                  %w1: tensor<16x32xf64> {hspmd.layout = #S1},
                  %w2: tensor<32x16xf64> {hspmd.layout = #S0})
    -> (tensor<8x16xf64> {hspmd.layout = #D2}) {
  %h = nn.matmul %x, %w1 {hspmd.operand_layouts = [#D2, #S1], hspmd.result_layouts = [#S1]}
      : tensor<8x16xf64>, tensor<16x32xf64>
  %g = nn.tanh %h {hspmd.operand_layouts = [#S1], hspmd.result_layouts = [#S1]} : tensor<8x32xf64>
  %p = nn.matmul %g, %w2 {hspmd.operand_layouts = [#S1, #S0], hspmd.result_layouts = [#P2]}
      : tensor<8x32xf64>, tensor<32x16xf64>
  %y = hspmd.all_reduce sum %p over [0] of [2] : tensor<8x16xf64> -> tensor<8x16xf64>
      from #P2 to #D2 {hspmd.operand_layouts = [#P2], hspmd.result_layouts = [#D2]}
  return {hspmd.operand_layouts = [#D2]} %y : tensor<8x16xf64>
}

// A mean over a split dimension: each device's mean of its half, scaled by
// 1/2, is a partial sum of the global mean.
// CHECK-LABEL: func.func @center_group0(
// CHECK: %[[M:.*]] = nn.reduce mean %{{.*}} dims = [1] keep_dims : tensor<4x4xf64>
// CHECK-NEXT: %[[H:.*]] = nn.fill 5.000000e-01 : tensor<f64>
// CHECK-NEXT: %[[S:.*]] = nn.mul %[[M]], %[[H]] : tensor<4x1xf64>, tensor<f64>
// CHECK-NEXT: hspmd.all_reduce sum %[[S]] over [0] of [2] : tensor<4x1xf64> -> tensor<4x1xf64>
// MEAN: result #0: tensor<4x1xf64> norm-wise relative error {{[0-9.]+e-(1[1-9]|[2-9][0-9])|0.000e\+00}}
func.func @center(%x: tensor<4x8xf64> {hspmd.layout = #S1})
    -> (tensor<4x1xf64> {hspmd.layout = #D2}) {
  %m = nn.reduce mean %x dims = [1] keep_dims {hspmd.operand_layouts = [#S1], hspmd.result_layouts = [#P2]}
      : tensor<4x8xf64>
  %r = hspmd.all_reduce sum %m over [0] of [2] : tensor<4x1xf64> -> tensor<4x1xf64>
      from #P2 to #D2 {hspmd.operand_layouts = [#P2], hspmd.result_layouts = [#D2]}
  return {hspmd.operand_layouts = [#D2]} %r : tensor<4x1xf64>
}

// An iota along a split dimension counts from the block's global start:
// the device's coordinate on the splitting axis times the block size.
// CHECK-LABEL: func.func @positions_group0(
// CHECK: %[[START:.*]] = hspmd.axis_index over [0] of [2] stride 4 : tensor<i64>
// CHECK-NEXT: nn.iota dim = 1 offset %[[START]] : tensor<3x4xi64>
// POS: result #0: tensor<3x8xi64> norm-wise relative error 0.000e+00
func.func @positions(%x: tensor<3x8xf64> {hspmd.layout = #S1}) -> (tensor<3x8xi64> {hspmd.layout = #S1}) {
  %i = nn.iota dim = 1 {hspmd.result_layouts = [#S1]} : tensor<3x8xi64>
  return {hspmd.operand_layouts = [#S1]} %i : tensor<3x8xi64>
}

// Functions without layouts are left alone.
// CHECK-LABEL: func.func @plain(
// CHECK-NOT: @plain_group0
func.func @plain(%x: tensor<4xf64>) -> tensor<4xf64> {
  return %x : tensor<4xf64>
}
