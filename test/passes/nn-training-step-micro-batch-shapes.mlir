// RUN: loom-opt %s --nn-training-step="optimizer=sgd lr=0.1 micro-batch-shapes=1x6,2x3*2,1x6" | FileCheck %s

// Micro-batches of their own shapes (length buckets): a step of two
// micro-batches of 1 row of 6 positions and two of 2 rows of 3 (24 tokens,
// the forward's 4x6). The forward is retyped once per shape, the data of
// rank >= 2 changing rows and length (dimension 1), the position ids (an
// iota shaped like the batch) and the reshapes that flatten and unflatten
// the rows and positions with them. The step takes each data argument once
// per shape, NAME_ROWSxLENGTH, holding that shape's micro-batches (micro-batch
// k: rows k, k + COUNT, ...); the losses and gradients of all four are
// summed (the attribute normaliser, 24 tokens, is the whole step's) and one
// update follows.
func.func @lm(%tokens: tensor<4x6xi64> {nn.data},
              %targets: tensor<4x6xi64> {nn.data},
              %wte: tensor<8x4xf32> {nn.param},
              %wpe: tensor<6x4xf32> {nn.param},
              %w: tensor<4x8xf32> {nn.param}) -> tensor<f32> {
  %t = nn.embedding %wte, %tokens : tensor<8x4xf32>, tensor<4x6xi64>
  %pos = nn.iota dim = 1 : tensor<4x6xi64>
  %p = nn.embedding %wpe, %pos : tensor<6x4xf32>, tensor<4x6xi64>
  %x = nn.add %t, %p : tensor<4x6x4xf32>, tensor<4x6x4xf32>
  %h = nn.reshape %x : tensor<4x6x4xf32> to tensor<24x4xf32>
  %logits = nn.matmul %h, %w : tensor<24x4xf32>, tensor<4x8xf32>
  %l3 = nn.reshape %logits : tensor<24x8xf32> to tensor<4x6x8xf32>
  %loss = nn.cross_entropy %l3, %targets {normalizer = 24.0 : f64} : tensor<4x6x8xf32>, tensor<4x6xi64>
  return %loss : tensor<f32>
}

// CHECK-LABEL: func.func @lm_train_step(
// CHECK-SAME: tensor<8x4xf32> {nn.name = "wte", nn.param}, %{{.*}}: tensor<6x4xf32> {nn.name = "wpe", nn.param}, %{{.*}}: tensor<4x8xf32> {nn.name = "w", nn.param},
// CHECK-SAME: %[[T6:[a-z0-9_]+]]: tensor<2x6xi64> {nn.data, nn.name = "tokens_1x6"}, %[[Y6:[a-z0-9_]+]]: tensor<2x6xi64> {nn.data, nn.name = "targets_1x6"}, %[[T3:[a-z0-9_]+]]: tensor<4x3xi64> {nn.data, nn.name = "tokens_2x3"}, %[[Y3:[a-z0-9_]+]]: tensor<4x3xi64> {nn.data, nn.name = "targets_2x3"})
// The first micro-batch of 1x6: row 0.
// CHECK:      %[[F0:.*]] = nn.reshape %[[T6]] : tensor<2x6xi64> to tensor<1x2x6xi64>
// CHECK-NEXT: nn.slice %[[F0]] offsets = [0, 0, 0] sizes = [1, 1, 6] strides = [1, 1, 1] : tensor<1x2x6xi64>
// CHECK:      nn.iota dim = 1 : tensor<1x6xi64>
// CHECK:      nn.reshape %{{.*}} : tensor<1x6x4xf32> to tensor<6x4xf32>
// CHECK:      nn.reshape %{{.*}} : tensor<6x8xf32> to tensor<1x6x8xf32>
// CHECK:      %[[L0:.*]] = nn.cross_entropy %{{.*}}, %{{.*}} {normalizer = 2.400000e+01 : f64} : tensor<1x6x8xf32>, tensor<1x6xi64>
// CHECK:      nn.slice %{{.*}} offsets = [0, 1, 0] sizes = [1, 1, 6] strides = [1, 1, 1] : tensor<1x2x6xi64>
// CHECK:      %[[L1:.*]] = nn.cross_entropy {{.*}} : tensor<1x6x8xf32>, tensor<1x6xi64>
// CHECK:      %[[S1:.*]] = nn.add %[[L0]], %[[L1]] : tensor<f32>, tensor<f32>
// The micro-batches of 2x3: rows 0, 2 and 1, 3.
// CHECK:      %[[F2:.*]] = nn.reshape %[[T3]] : tensor<4x3xi64> to tensor<2x2x3xi64>
// CHECK-NEXT: nn.slice %[[F2]] offsets = [0, 0, 0] sizes = [2, 1, 3] strides = [1, 1, 1] : tensor<2x2x3xi64>
// CHECK:      nn.iota dim = 1 : tensor<2x3xi64>
// CHECK:      nn.reshape %{{.*}} : tensor<2x3x4xf32> to tensor<6x4xf32>
// CHECK:      nn.reshape %{{.*}} : tensor<6x8xf32> to tensor<2x3x8xf32>
// CHECK:      %[[L2:.*]] = nn.cross_entropy {{.*}} : tensor<2x3x8xf32>, tensor<2x3xi64>
// CHECK:      %[[S2:.*]] = nn.add %[[S1]], %[[L2]] : tensor<f32>, tensor<f32>
// CHECK:      nn.slice %{{.*}} offsets = [0, 1, 0] sizes = [2, 1, 3] strides = [1, 1, 1] : tensor<2x2x3xi64>
// CHECK:      %[[L3:.*]] = nn.cross_entropy {{.*}} : tensor<2x3x8xf32>, tensor<2x3xi64>
// CHECK:      %[[LOSS:.*]] = nn.add %[[S2]], %[[L3]] : tensor<f32>, tensor<f32>
// CHECK:      nn.sgd_update
// CHECK:      return %[[LOSS]],
