// The GPT-mini training step (examples/gpt_mini.mlir) on 4 devices: data
// parallel 2 (the tokens' batch, mesh axis 0) x tensor parallel 2 (Wq and
// W1 of both blocks split by columns, mesh axis 1). Everything else is
// derived: keys and values follow the queries' heads through attention, Wo
// and W2 are split by rows, their outputs are pending sums, the backward
// mirrors the forward, and the loss is a pending sum over the batch. The
// optimizer updates stay plain data parallel (each gradient all-reduced on
// the data-parallel axis, states laid out like their parameters): nothing
// asks for ZeRO (hspmd-propagate-layouts-zero.mlir).
// RUN: sed -e 's/%%tokens: tensor<8x16xi64> {nn.data}/%%tokens: tensor<8x16xi64> {nn.data, hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>}/' \
// RUN:     -e 's/\(%%l[01]_w[q1]: tensor<32x[0-9]*xf32>\) {nn.param}/\1 {nn.param, hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:2, S1:2]}>}/' \
// RUN:     %loom_src_root/examples/gpt_mini.mlir > %t.mlir
// RUN: loom-opt %t.mlir --loom-training-pipeline --hspmd-propagate-layouts | FileCheck %s

// CHECK-LABEL: func.func @gpt_mini_train_step
// Wk, Wv follow Wq; Wo and W2 are split by rows.
// CHECK-SAME: %{{[a-z0-9_]+}}: tensor<32x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:2, S1:2]}>, nn.name = "l0_wq", nn.param}, %{{[a-z0-9_]+}}: tensor<32x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:2, S1:2]}>, nn.name = "l0_wk", nn.param}, %{{[a-z0-9_]+}}: tensor<32x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:2, S1:2]}>, nn.name = "l0_wv", nn.param}, %{{[a-z0-9_]+}}: tensor<32x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:2, S0:2]}>, nn.name = "l0_wo", nn.param}
// CHECK-SAME: %{{[a-z0-9_]+}}: tensor<128x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [D:2, S0:2]}>, nn.name = "l0_w2", nn.param}
// CHECK-SAME: -> (tensor<f32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [P(sum):2, D:2]}>, nn.loss}
// Both blocks: attention on split batch and heads, then the row-parallel
// projections (Wo, W2) produce pending sums on the tensor-parallel axis
// that the adds after them take duplicated: the two activation all-reduces
// of a Megatron block in the forward.
// CHECK: nn.attention {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>]}
// CHECK: %[[WO0:[a-z0-9_]+]] = nn.matmul {{.*}} hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, P(sum):2]}>]}
// CHECK-NEXT: nn.add %{{[a-z0-9_]+}}, %[[WO0]] {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>]
// CHECK: %[[W20:[a-z0-9_]+]] = nn.matmul {{.*}} hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, P(sum):2]}>]}
// CHECK-NEXT: nn.add %[[W20]], %{{[a-z0-9_]+}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>]
// CHECK: nn.attention {{.*}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>]}
// CHECK: %[[WO1:[a-z0-9_]+]] = nn.matmul {{.*}} hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, P(sum):2]}>]}
// CHECK-NEXT: nn.add %{{[a-z0-9_]+}}, %[[WO1]] {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>]
// CHECK: %[[W21:[a-z0-9_]+]] = nn.matmul {{.*}} hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, P(sum):2]}>]}
// CHECK-NEXT: nn.add %[[W21]], %{{[a-z0-9_]+}} {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>, #hspmd.union<{[0, 1, 2, 3]: [D:4]}>]
// CHECK: nn.cross_entropy {{.*}} hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [P(sum):2, D:2]}>]
// CHECK-COUNT-2: nn.attention_grad {{.*}} hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>, #hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>]
// The updates split nothing on the data-parallel axis (mesh axis 0): no
// ZeRO unless the optimizer state is laid out so.
// CHECK-NOT: nn.adamw_update {{.*}}#hspmd.union<{[0, 1, 2, 3]: [S
// CHECK: return
