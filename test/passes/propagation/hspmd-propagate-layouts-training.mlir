// RUN: loom-opt %s --loom-training-pipeline="optimizer=sgd momentum=0.9" --hspmd-propagate-layouts | FileCheck %s

// Data parallel on 4 devices: only the data is laid out (batch split). The
// split flows through the forward and the backward of the training step:
// activations and their gradients are split by batch, parameters are
// duplicated, and the matmuls that produce parameter gradients contract
// the batch, so the gradients are pending sums. The update stays plain data
// parallel: splitting it would reduce-scatter the gradient but then have to
// all-gather the updated parameter back to its argument's layout (together
// as many bytes as the all-reduce, and more reshards), so each gradient is
// all-reduced (partial(sum) into the update, which needs it duplicated) and
// the momentum state is duplicated like its parameter. ZeRO is a user
// choice (hspmd-propagate-layouts-zero.mlir).
// CHECK-LABEL: func.func @mlp_train_step
// CHECK-SAME: %[[W1:[a-z0-9_]+]]: tensor<16x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.name = "w1", nn.param}
// CHECK-SAME: %[[W2:[a-z0-9_]+]]: tensor<32x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.name = "w2", nn.param}
// CHECK-SAME: %{{.*}}: tensor<16x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.name = "w1.momentum", nn.state = 0 : i64}
// CHECK-SAME: %{{.*}}: tensor<32x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.name = "w2.momentum", nn.state = 1 : i64}
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<8x16xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, nn.data, nn.name = "x"}
// CHECK-SAME: -> (tensor<f32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [P(sum):4]}>, nn.loss}
// CHECK-SAME: tensor<16x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.updates = 0 : i64}
// CHECK-SAME: tensor<32x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.updates = 1 : i64}
// CHECK-SAME: tensor<16x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.updates = 2 : i64}
// CHECK-SAME: tensor<32x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.updates = 3 : i64}
// Forward: the batch split flows to the activations.
// CHECK: %[[H:[a-z0-9_]+]] = nn.matmul %[[X]], %[[W1]] {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]}
// CHECK: nn.relu %[[H]] {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]}
// CHECK: nn.reduce sum {{.*}} hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [P(sum):4]}>]
// Backward: the gradient of W2 contracts the batch.
// CHECK: %[[DW2:[a-z0-9_]+]] = nn.matmul {{.*}} transpose_lhs {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [P(sum):4]}>]}
// CHECK: %[[DW1:[a-z0-9_]+]] = nn.matmul %[[X]], {{.*}} transpose_lhs {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [P(sum):4]}>]}
// The updates need the gradients duplicated: one all-reduce each (the
// pending sum the matmul produces against the duplicate the update takes),
// and compute on duplicates.
// CHECK: nn.sgd_update %[[W1]], %[[DW1]], {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>]
// CHECK: nn.sgd_update %[[W2]], %[[DW2]], {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>]
// CHECK: return {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [P(sum):4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>]}
func.func @mlp(%x: tensor<8x16xf32> {nn.data, hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>},
               %w1: tensor<16x32xf32> {nn.param}, %w2: tensor<32x4xf32> {nn.param}) -> tensor<f32> {
  %h = nn.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>
  %g = nn.relu %h : tensor<8x32xf32>
  %y = nn.matmul %g, %w2 : tensor<8x32xf32>, tensor<32x4xf32>
  %l = nn.reduce sum %y dims = [0, 1] : tensor<8x4xf32>
  return %l : tensor<f32>
}
