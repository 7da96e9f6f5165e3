// The bundled GPT-mini forward pass verifies and round-trips: two causal
// attention blocks, the loss normalised by the 128 target tokens.
// RUN: loom-opt %loom_src_root/examples/gpt_mini.mlir | FileCheck %s
// RUN: %check-round-trip %loom_src_root/examples/gpt_mini.mlir %t

// CHECK-LABEL: func.func @gpt_mini(%{{.*}}: tensor<8x16xi64> {nn.data, nn.name = "tokens"}, %{{.*}}: tensor<8x16xi64> {nn.data, nn.name = "targets"}, %{{.*}}: tensor<64x32xf32> {nn.name = "wte", nn.param}
// CHECK-COUNT-2: nn.attention {{.*}} mask = causal
// CHECK: nn.matmul {{.*}} : tensor<8x16x32xf32>, tensor<32x64xf32>
// CHECK: nn.cross_entropy {{.*}} {normalizer = 1.280000e+02 : f64} : tensor<8x16x64xf32>, tensor<8x16xi64>
