// The GPT-mini forward pass becomes a training step: the loss, the gradient
// of every one of its 29 parameters, and an AdamW update of each.
// RUN: loom-opt %loom_src_root/examples/gpt_mini.mlir --loom-training-pipeline="optimizer=adamw lr=1e-2 weight-decay=0.01" | FileCheck %s
// RUN: loom-opt %loom_src_root/examples/gpt_mini.mlir --nn-autodiff | FileCheck %s --check-prefix=GRAD

// CHECK-LABEL: func.func @gpt_mini_train_step(
// CHECK-SAME: %{{.*}}: tensor<64x32xf32> {nn.name = "wte", nn.param}
// CHECK-SAME: %{{.*}}: tensor<64x32xf32> {nn.name = "wte.m", nn.state = 0 : i64}
// CHECK-SAME: %{{.*}}: tensor<32x64xf32> {nn.name = "whead.m", nn.state = 28 : i64}
// CHECK-SAME: %{{.*}}: tensor<i64> {nn.step}
// CHECK-SAME: %{{.*}}: tensor<8x16xi64> {nn.data, nn.name = "tokens"}, %{{.*}}: tensor<8x16xi64> {nn.data, nn.name = "targets"})
// CHECK-SAME: -> (tensor<f32> {nn.loss}, tensor<64x32xf32> {nn.updates = 0 : i64}
// CHECK-SAME: tensor<32x64xf32> {nn.updates = 86 : i64})
// CHECK: nn.cross_entropy_grad
// The two blocks backwards: attention, GELU MLP, four layer norms plus the
// final one.
// CHECK-COUNT-2: nn.attention_grad {{.*}} mask = causal
// CHECK: nn.gather_grad {{.*}} to tensor<16x32xf32>
// CHECK: nn.gather_grad {{.*}} to tensor<64x32xf32>
// CHECK-COUNT-29: nn.adamw_update {{.*}} {lr = 1.000000e-02 : f64}
// CHECK-NEXT: return

// The backward pass runs through the blocks in reverse: final norm, then
// per block MLP (GELU), second norm, attention, first norm; then the
// embeddings.
// GRAD-LABEL: func.func @gpt_mini_grad(
// GRAD: nn.cross_entropy_grad
// GRAD: nn.layer_norm_grad
// GRAD: nn.gelu_grad
// GRAD: nn.layer_norm_grad
// GRAD: nn.attention_grad
// GRAD: nn.layer_norm_grad
// GRAD: nn.gelu_grad
// GRAD: nn.layer_norm_grad
// GRAD: nn.attention_grad
// GRAD: nn.layer_norm_grad
// GRAD: nn.gather_grad
// GRAD: nn.gather_grad
// GRAD: return %{{.*}} : tensor<f32>, tensor<64x32xf32>, tensor<16x32xf32>,
