// One variant per shape bucket: the same rewrite at each capacity, named
// @<name>_c<capacity> in ascending order, in place of the original.
// RUN: loom-opt %s --nn-name-arguments-from-source --nn-prefix-dedup="buckets=16,8 bins=2" | FileCheck %s
// And through the training step: one step per variant, the same parameters.
// RUN: loom-opt %s --nn-name-arguments-from-source --nn-prefix-dedup="buckets=16,8 bins=2" --loom-training-pipeline="optimizer=sgd lr=0.1" | FileCheck %s --check-prefix=STEP

// CHECK-NOT: func.func @loss(
// CHECK-LABEL: func.func @loss_c8(
// CHECK-SAME: %{{.*}}: tensor<16x4xf32> {nn.name = "wte", nn.param}
// CHECK-SAME: %{{.*}}: tensor<2x8xi64> {nn.data, nn.name = "trie_tokens"}
// CHECK-SAME: attributes {nn.prefix_dedup = {batch = 4 : i64, bins = 2 : i64, capacity = 8 : i64, seq = 8 : i64, vocab = 16 : i64}}
// CHECK: nn.embedding %{{.*}} : tensor<16x4xf32>, tensor<2x8xi64>
// CHECK-LABEL: func.func @loss_c16(
// CHECK-SAME: %{{.*}}: tensor<16x4xf32> {nn.name = "wte", nn.param}
// CHECK-SAME: %{{.*}}: tensor<2x16xi64> {nn.data, nn.name = "trie_tokens"}
// CHECK-SAME: capacity = 16 : i64
// CHECK: nn.embedding %{{.*}} : tensor<16x4xf32>, tensor<2x16xi64>
// CHECK-NOT: func.func

// STEP-LABEL: func.func @loss_c8_train_step(
// STEP-SAME: tensor<16x4xf32> {nn.name = "wte", nn.param}
// STEP-SAME: tensor<2x8xi64>
// STEP-LABEL: func.func @loss_c16_train_step(
// STEP-SAME: tensor<16x4xf32> {nn.name = "wte", nn.param}
// STEP-SAME: tensor<2x16xi64>

func.func @loss(%tokens: tensor<4x8xi64> {nn.data}, %targets: tensor<4x8xi64> {nn.data},
                %weights: tensor<4x8xf32> {nn.data},
                %wte: tensor<16x4xf32> {nn.param},
                %whead: tensor<4x16xf32> {nn.param}) -> (tensor<f32> {nn.loss}) {
  %x = nn.embedding %wte, %tokens : tensor<16x4xf32>, tensor<4x8xi64>
  %logits = nn.matmul %x, %whead : tensor<4x8x4xf32>, tensor<4x16xf32>
  %l = nn.cross_entropy %logits, %targets weights %weights {normalizer = 32.0 : f64} : tensor<4x8x16xf32>, tensor<4x8xi64>, tensor<4x8xf32>
  return %l : tensor<f32>
}
