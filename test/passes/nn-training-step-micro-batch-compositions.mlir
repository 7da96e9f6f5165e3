// RUN: loom-opt %s --nn-training-step="optimizer=sgd lr=0.1 micro-batch-shapes=1x6*2,2x3*2;2x6*2;2x3*4" | FileCheck %s
// RUN: loom-opt %s --nn-training-step="optimizer=sgd lr=0.1 micro-batch-shapes=1x6*2,2x3*2;2x6*2;2x3*4" | FileCheck %s --check-prefix=UNUSED

// Several compositions of micro-batch shapes (separated by ';'), each
// holding the forward's 24 tokens: one step per composition, variants of
// one step (the same parameters and results), @lm_train_step, _v1 and _v2.
// Every variant takes the data of every shape of any composition, in order
// of first appearance (1x6, 2x3, 2x6); a shape its composition lacks has no
// rows, and no op reads it. Each carries its tokens (nn.tokens), which its
// data arguments do not show.
func.func @lm(%tokens: tensor<4x6xi64> {nn.data},
              %targets: tensor<4x6xi64> {nn.data},
              %wte: tensor<8x4xf32> {nn.param},
              %w: tensor<4x8xf32> {nn.param}) -> tensor<f32> {
  %t = nn.embedding %wte, %tokens : tensor<8x4xf32>, tensor<4x6xi64>
  %h = nn.reshape %t : tensor<4x6x4xf32> to tensor<24x4xf32>
  %logits = nn.matmul %h, %w : tensor<24x4xf32>, tensor<4x8xf32>
  %l3 = nn.reshape %logits : tensor<24x8xf32> to tensor<4x6x8xf32>
  %loss = nn.cross_entropy %l3, %targets {normalizer = 24.0 : f64} : tensor<4x6x8xf32>, tensor<4x6xi64>
  return %loss : tensor<f32>
}

// Composition 1: two micro-batches of 1x6 and two of 2x3; no 2x6 rows.
// CHECK-LABEL: func.func @lm_train_step(
// CHECK-SAME: %{{[a-z0-9_]+}}: tensor<2x6xi64> {nn.data, nn.name = "tokens_1x6"}, %{{[a-z0-9_]+}}: tensor<2x6xi64> {nn.data, nn.name = "targets_1x6"}, %{{[a-z0-9_]+}}: tensor<4x3xi64> {nn.data, nn.name = "tokens_2x3"}, %{{[a-z0-9_]+}}: tensor<4x3xi64> {nn.data, nn.name = "targets_2x3"}, %[[A:[a-z0-9_]+]]: tensor<0x6xi64> {nn.data, nn.name = "tokens_2x6"}, %[[B:[a-z0-9_]+]]: tensor<0x6xi64> {nn.data, nn.name = "targets_2x6"})
// CHECK-SAME: attributes {nn.tokens = 24 : i64}
// CHECK-NOT: %[[A]]
// CHECK-NOT: %[[B]]
// CHECK-COUNT-2: nn.cross_entropy %{{.*}} : tensor<1x6x8xf32>, tensor<1x6xi64>
// CHECK-COUNT-2: nn.cross_entropy %{{.*}} : tensor<2x3x8xf32>, tensor<2x3xi64>
// CHECK-NOT: %[[A]]
// CHECK-NOT: %[[B]]
// CHECK: nn.sgd_update
// CHECK: return

// Composition 2: two micro-batches of 2x6, in the third shape's arguments.
// CHECK-LABEL: func.func @lm_train_step_v1(
// CHECK-SAME: %[[A1:[a-z0-9_]+]]: tensor<0x6xi64> {nn.data, nn.name = "tokens_1x6"}, %[[B1:[a-z0-9_]+]]: tensor<0x6xi64> {nn.data, nn.name = "targets_1x6"}, %[[A2:[a-z0-9_]+]]: tensor<0x3xi64> {nn.data, nn.name = "tokens_2x3"}, %[[B2:[a-z0-9_]+]]: tensor<0x3xi64> {nn.data, nn.name = "targets_2x3"}, %[[T:[a-z0-9_]+]]: tensor<4x6xi64> {nn.data, nn.name = "tokens_2x6"}, %{{[a-z0-9_]+}}: tensor<4x6xi64> {nn.data, nn.name = "targets_2x6"})
// CHECK-SAME: attributes {nn.tokens = 24 : i64}
// CHECK-NOT: %[[A1]]
// CHECK-NOT: %[[B1]]
// CHECK-NOT: %[[A2]]
// CHECK-NOT: %[[B2]]
// CHECK: nn.reshape %[[T]] : tensor<4x6xi64> to tensor<2x2x6xi64>
// CHECK-COUNT-2: nn.cross_entropy %{{.*}}, %{{.*}} {normalizer = 2.400000e+01 : f64} : tensor<2x6x8xf32>, tensor<2x6xi64>
// CHECK-NOT: nn.cross_entropy %
// CHECK: nn.sgd_update
// CHECK: return

// Composition 3: four micro-batches of 2x3, in the second shape's.
// CHECK-LABEL: func.func @lm_train_step_v2(
// CHECK-SAME: tensor<0x6xi64> {nn.data, nn.name = "tokens_1x6"}, %{{[a-z0-9_]+}}: tensor<0x6xi64> {nn.data, nn.name = "targets_1x6"}, %{{[a-z0-9_]+}}: tensor<8x3xi64> {nn.data, nn.name = "tokens_2x3"}, %{{[a-z0-9_]+}}: tensor<8x3xi64> {nn.data, nn.name = "targets_2x3"}, %{{[a-z0-9_]+}}: tensor<0x6xi64> {nn.data, nn.name = "tokens_2x6"}, %{{[a-z0-9_]+}}: tensor<0x6xi64> {nn.data, nn.name = "targets_2x6"})
// CHECK-SAME: attributes {nn.tokens = 24 : i64}
// CHECK-COUNT-4: nn.cross_entropy %{{.*}}, %{{.*}} {normalizer = 2.400000e+01 : f64} : tensor<2x3x8xf32>, tensor<2x3xi64>
// CHECK-NOT: nn.cross_entropy %
// CHECK: nn.sgd_update

// No op of a variant reads the arguments of the shapes it lacks (each NOT
// spans the whole body, to the return).
// UNUSED-LABEL: func.func @lm_train_step(
// UNUSED-SAME: %[[A:[a-z0-9_]+]]: tensor<0x6xi64> {nn.data, nn.name = "tokens_2x6"}, %[[B:[a-z0-9_]+]]: tensor<0x6xi64> {nn.data, nn.name = "targets_2x6"})
// UNUSED-NOT: {{%}}[[A]]{{[^0-9]}}
// UNUSED-NOT: {{%}}[[B]]{{[^0-9]}}
// UNUSED: return
// UNUSED-LABEL: func.func @lm_train_step_v1(
// UNUSED-SAME: %[[A1:[a-z0-9_]+]]: tensor<0x6xi64> {nn.data, nn.name = "tokens_1x6"}, %[[B1:[a-z0-9_]+]]: tensor<0x6xi64> {nn.data, nn.name = "targets_1x6"}, %[[A2:[a-z0-9_]+]]: tensor<0x3xi64> {nn.data, nn.name = "tokens_2x3"}, %[[B2:[a-z0-9_]+]]: tensor<0x3xi64> {nn.data, nn.name = "targets_2x3"}
// UNUSED-NOT: {{%}}[[A1]]{{[^0-9]}}
// UNUSED-NOT: {{%}}[[B1]]{{[^0-9]}}
// UNUSED-NOT: {{%}}[[A2]]{{[^0-9]}}
// UNUSED-NOT: {{%}}[[B2]]{{[^0-9]}}
// UNUSED: return
// UNUSED-LABEL: func.func @lm_train_step_v2(
// UNUSED-SAME: %[[C1:[a-z0-9_]+]]: tensor<0x6xi64> {nn.data, nn.name = "tokens_1x6"}, %[[D1:[a-z0-9_]+]]: tensor<0x6xi64> {nn.data, nn.name = "targets_1x6"}, %{{[a-z0-9_]+}}: tensor<8x3xi64> {nn.data, nn.name = "tokens_2x3"}, %{{[a-z0-9_]+}}: tensor<8x3xi64> {nn.data, nn.name = "targets_2x3"}, %[[C2:[a-z0-9_]+]]: tensor<0x6xi64> {nn.data, nn.name = "tokens_2x6"}, %[[D2:[a-z0-9_]+]]: tensor<0x6xi64> {nn.data, nn.name = "targets_2x6"})
// UNUSED-NOT: {{%}}[[C1]]{{[^0-9]}}
// UNUSED-NOT: {{%}}[[D1]]{{[^0-9]}}
// UNUSED-NOT: {{%}}[[C2]]{{[^0-9]}}
// UNUSED-NOT: {{%}}[[D2]]{{[^0-9]}}
// UNUSED: return
