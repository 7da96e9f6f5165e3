// ZeRO-1 as the user's choice: the optimizer state arguments (`nn.state`)
// of the data-parallel training step are laid out split by rows; nothing
// else changes from hspmd-propagate-layouts-training.mlir (data split by
// batch, parameters duplicated). Propagation then splits each update like
// its state: the gradient, a pending sum, is reduce-scattered into the
// state's layout, the duplicated parameter is sliced locally, and the
// updated parameter is all-gathered back to its argument's (duplicated)
// layout. Per parameter the only layout changes between a producer and an
// operand are: the gradient P(sum) -> S0 at the update (one
// reduce-scatter), the parameter D -> S0 at the update (a local slice,
// no communication) and the updated parameter S0 -> D at the return (one
// all-gather); the state stays S0 end to end. The step's whole body is
// pinned below, so no other reshard can appear.
// RUN: loom-opt %s --loom-training-pipeline="optimizer=sgd momentum=0.9" \
// RUN:   | sed -e 's/nn.state = \([0-9]*\) : i64}/hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, nn.state = \1 : i64}/g' \
// RUN:   | loom-opt --hspmd-propagate-layouts | FileCheck %s
// ZeRO is per parameter: with only W1's AdamW states (m and v, `nn.state =
// 0`) split, W1 is updated as above and W2 stays plain data parallel (its
// gradient all-reduced, its states duplicated).
// RUN: loom-opt %s --loom-training-pipeline="optimizer=adamw" \
// RUN:   | sed -e 's/nn.state = 0 : i64}/hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, nn.state = 0 : i64}/g' \
// RUN:   | loom-opt --hspmd-propagate-layouts | FileCheck %s --check-prefix=ADAMW

// CHECK-LABEL: func.func @mlp_train_step
// CHECK-SAME: %[[W1:[a-z0-9_]+]]: tensor<16x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.name = "w1", nn.param}
// CHECK-SAME: %[[W2:[a-z0-9_]+]]: tensor<32x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.name = "w2", nn.param}
// CHECK-SAME: %[[M1:[a-z0-9_]+]]: tensor<16x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, nn.name = "w1.momentum", nn.state = 0 : i64}
// CHECK-SAME: %[[M2:[a-z0-9_]+]]: tensor<32x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, nn.name = "w2.momentum", nn.state = 1 : i64}
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<8x16xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, nn.data, nn.name = "x"}
// CHECK-SAME: -> (tensor<f32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [P(sum):4]}>, nn.loss}
// CHECK-SAME: tensor<16x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.updates = 0 : i64}
// CHECK-SAME: tensor<32x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.updates = 1 : i64}
// CHECK-SAME: tensor<16x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, nn.updates = 2 : i64}
// CHECK-SAME: tensor<32x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, nn.updates = 3 : i64}
// CHECK-NEXT: nn.matmul %[[X]], %[[W1]] {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]
// CHECK-NEXT: nn.relu {{.*}}{hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]
// CHECK-NEXT: nn.matmul {{.*}}{hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]
// CHECK-NEXT: nn.reduce {{.*}}{hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [P(sum):4]}>]
// CHECK-NEXT: nn.fill {{.*}}{hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [D:4]}>]
// CHECK-NEXT: nn.reshape {{.*}}{hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [D:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [D:4]}>]
// CHECK-NEXT: nn.broadcast {{.*}}{hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [D:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]
// CHECK-NEXT: nn.matmul {{.*}}{hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]
// CHECK-NEXT: %[[DW2:[a-z0-9_]+]] = nn.matmul {{.*}} transpose_lhs {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [P(sum):4]}>]
// CHECK-NEXT: nn.fill {{.*}}{hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [D:4]}>]
// CHECK-NEXT: nn.compare {{.*}}{hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]
// CHECK-NEXT: nn.select {{.*}}{hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]
// CHECK-NEXT: %[[DW1:[a-z0-9_]+]] = nn.matmul %[[X]], {{.*}} transpose_lhs {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [P(sum):4]}>]
// CHECK-NEXT: %[[NP1:[a-z0-9_]+]], %[[NM1:[a-z0-9_]+]] = nn.sgd_update %[[W1]], %[[DW1]], %[[M1]] {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]
// CHECK-NEXT: %[[NP2:[a-z0-9_]+]], %[[NM2:[a-z0-9_]+]] = nn.sgd_update %[[W2]], %[[DW2]], %[[M2]] {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]
// CHECK-NEXT: return {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [P(sum):4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]} %{{[a-z0-9_]+}}, %[[NP1]], %[[NP2]], %[[NM1]], %[[NM2]] :

// ADAMW-LABEL: func.func @mlp_train_step
// ADAMW-SAME: %[[W1:[a-z0-9_]+]]: tensor<16x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.name = "w1", nn.param}
// ADAMW-SAME: %[[W2:[a-z0-9_]+]]: tensor<32x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.name = "w2", nn.param}
// ADAMW-SAME: %[[M1:[a-z0-9_]+]]: tensor<16x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, nn.name = "w1.m", nn.state = 0 : i64}
// ADAMW-SAME: %[[M2:[a-z0-9_]+]]: tensor<32x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.name = "w2.m", nn.state = 1 : i64}
// ADAMW-SAME: %[[V1:[a-z0-9_]+]]: tensor<16x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, nn.name = "w1.v", nn.state = 0 : i64}
// ADAMW-SAME: %[[V2:[a-z0-9_]+]]: tensor<32x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.name = "w2.v", nn.state = 1 : i64}
// ADAMW-SAME: %[[X:[a-z0-9_]+]]: tensor<8x16xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, nn.data, nn.name = "x"}
// ADAMW-SAME: tensor<16x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.updates = 0 : i64}
// ADAMW-SAME: tensor<32x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.updates = 1 : i64}
// ADAMW-SAME: tensor<16x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, nn.updates = 2 : i64}
// ADAMW-SAME: tensor<32x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.updates = 3 : i64}
// ADAMW-SAME: tensor<16x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, nn.updates = 4 : i64}
// ADAMW-SAME: tensor<32x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, nn.updates = 5 : i64}
// ADAMW: %[[DW2:[a-z0-9_]+]] = nn.matmul {{.*}} transpose_lhs {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [P(sum):4]}>]}
// ADAMW: %[[DW1:[a-z0-9_]+]] = nn.matmul %[[X]], {{.*}} transpose_lhs {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [P(sum):4]}>]}
// W1: the gradient is reduce-scattered into its states' layout.
// ADAMW: %[[NP1:[a-z0-9_]+]], %{{.*}}, %{{.*}} = nn.adamw_update %[[W1]], %[[DW1]], %[[M1]], %[[V1]], %{{[a-z0-9_]+}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]
// W2: plain data parallel, the gradient all-reduced.
// ADAMW: %[[NP2:[a-z0-9_]+]], %{{.*}}, %{{.*}} = nn.adamw_update %[[W2]], %[[DW2]], %[[M2]], %[[V2]], %{{[a-z0-9_]+}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>]
// Only W1's updated parameter is all-gathered (S -> D) at the return.
// ADAMW: return {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [P(sum):4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>]} %{{[a-z0-9_]+}}, %[[NP1]], %[[NP2]],

func.func @mlp(%x: tensor<8x16xf32> {nn.data, hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>},
               %w1: tensor<16x32xf32> {nn.param}, %w2: tensor<32x4xf32> {nn.param}) -> tensor<f32> {
  %h = nn.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>
  %g = nn.relu %h : tensor<8x32xf32>
  %y = nn.matmul %g, %w2 : tensor<8x32xf32>, tensor<32x4xf32>
  %l = nn.reduce sum %y dims = [0, 1] : tensor<8x4xf32>
  return %l : tensor<f32>
}
