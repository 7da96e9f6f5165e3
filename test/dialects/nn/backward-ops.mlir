// RUN: loom-opt %s | loom-opt | FileCheck %s
// RUN: loom-opt %s --mlir-print-op-generic | loom-opt | FileCheck %s
// RUN: loom-opt %s --emit-bytecode | loom-opt | FileCheck %s
// RUN: %check-round-trip %s %t
// RUN: loom-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// Round trip of nn.fill, the backward ops that gradients use, and the
// inverse rotation of nn.rope. Result types are inferred where the custom
// form omits them (GENERIC shows them).

// CHECK-LABEL: func.func @fill
func.func @fill() -> (tensor<f32>, tensor<4x8xbf16>, tensor<2xf64>) {
  // CHECK: nn.fill 1.000000e+00 : tensor<f32>
  %0 = nn.fill 1.0 : tensor<f32>
  // CHECK: nn.fill 0.000000e+00 : tensor<4x8xbf16>
  %1 = nn.fill 0.0 : tensor<4x8xbf16>
  // CHECK: nn.fill 0xFFF0000000000000 : tensor<2xf64>
  %2 = nn.fill 0xFFF0000000000000 : tensor<2xf64>
  return %0, %1, %2 : tensor<f32>, tensor<4x8xbf16>, tensor<2xf64>
}

// CHECK-LABEL: func.func @gelu_grad
func.func @gelu_grad(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: nn.gelu_grad %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %0 = nn.gelu_grad %dy, %x : tensor<4x8xf32>
  // CHECK: nn.gelu_grad %{{.*}}, %{{.*}} approximate = tanh : tensor<4x8xf32>
  %1 = nn.gelu_grad %dy, %x approximate = tanh : tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @norm_grads
// GENERIC-LABEL: sym_name = "norm_grads"
func.func @norm_grads(%dy: tensor<8x16x32xf32>, %x: tensor<8x16x32xf32>,
                      %g: tensor<32xf32>, %g2: tensor<16x32xf32>)
    -> (tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>,
        tensor<8x16x32xf32>) {
  // CHECK: nn.layer_norm_grad %{{.*}}, %{{.*}} scale %{{.*}} : tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<32xf32>
  // GENERIC: "nn.layer_norm_grad"{{.*}} -> tensor<8x16x32xf32>
  %0 = nn.layer_norm_grad %dy, %x scale %g : tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<32xf32>
  // CHECK: nn.layer_norm_grad %{{.*}}, %{{.*}} scale %{{.*}} {epsilon = {{.*}} : f64, normalized_dims = 2 : i64} : tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<16x32xf32>
  %1 = nn.layer_norm_grad %dy, %x scale %g2 {epsilon = 1.0e-06 : f64, normalized_dims = 2 : i64} : tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<16x32xf32>
  // CHECK: nn.rms_norm_grad %{{.*}}, %{{.*}} scale %{{.*}} : tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<32xf32>
  // GENERIC: "nn.rms_norm_grad"{{.*}} -> tensor<8x16x32xf32>
  %2 = nn.rms_norm_grad %dy, %x scale %g : tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<32xf32>
  // CHECK: nn.rms_norm_grad %{{.*}}, %{{.*}} : tensor<8x16x32xf32>, tensor<8x16x32xf32>
  %3 = nn.rms_norm_grad %dy, %x : tensor<8x16x32xf32>, tensor<8x16x32xf32>
  return %0, %1, %2, %3 : tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>
}

// CHECK-LABEL: func.func @cross_entropy_grad
// GENERIC-LABEL: sym_name = "cross_entropy_grad"
func.func @cross_entropy_grad(%dl: tensor<f32>, %logits: tensor<8x16x64xf32>,
                              %labels: tensor<8x16xi64>, %w: tensor<8x16xf32>,
                              %n: tensor<f32>)
    -> (tensor<8x16x64xf32>, tensor<8x16x64xf32>) {
  // CHECK: nn.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} weights %{{.*}} {normalizer = 1.280000e+02 : f64} : tensor<f32>, tensor<8x16x64xf32>, tensor<8x16xi64>, tensor<8x16xf32>
  // GENERIC: "nn.cross_entropy_grad"{{.*}} -> tensor<8x16x64xf32>
  %0 = nn.cross_entropy_grad %dl, %logits, %labels weights %w {normalizer = 1.28e+02 : f64} : tensor<f32>, tensor<8x16x64xf32>, tensor<8x16xi64>, tensor<8x16xf32>
  // CHECK: nn.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} normalizer %{{.*}} : tensor<f32>, tensor<8x16x64xf32>, tensor<8x16xi64>, tensor<f32>
  %1 = nn.cross_entropy_grad %dl, %logits, %labels normalizer %n : tensor<f32>, tensor<8x16x64xf32>, tensor<8x16xi64>, tensor<f32>
  return %0, %1 : tensor<8x16x64xf32>, tensor<8x16x64xf32>
}

// CHECK-LABEL: func.func @attention_grad
// GENERIC-LABEL: sym_name = "attention_grad"
func.func @attention_grad(%do: tensor<2x16x4x6xf32>, %q: tensor<2x16x4x8xf32>,
                          %k: tensor<2x16x2x8xf32>, %v: tensor<2x16x2x6xf32>,
                          %ends: tensor<2x16xi32>, %pos: tensor<2x4xi64>,
                          %doc: tensor<2x4x4x6xf32>, %qc: tensor<2x4x4x8xf32>)
    -> (tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x6xf32>) {
  // Grouped-query attention: the key/value gradients have 2 heads.
  // CHECK: nn.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} mask = causal : tensor<2x16x4x6xf32>, tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x6xf32>
  // GENERIC: "nn.attention_grad"{{.*}} -> (tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x6xf32>)
  %dq, %dk, %dv = nn.attention_grad %do, %q, %k, %v mask = causal : tensor<2x16x4x6xf32>, tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x6xf32>
  // CHECK: nn.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} mask = tree subtree_end %{{.*}} {scale = 2.500000e-01 : f64} : tensor<2x16x4x6xf32>, tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x6xf32>, tensor<2x16xi32>
  %t:3 = nn.attention_grad %do, %q, %k, %v mask = tree subtree_end %ends {scale = 2.5e-01 : f64} : tensor<2x16x4x6xf32>, tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x6xf32>, tensor<2x16xi32>
  // A chunk of 4 queries at explicit positions in 16 keys.
  // CHECK: nn.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} mask = causal positions %{{.*}} : tensor<2x4x4x6xf32>, tensor<2x4x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x6xf32>, tensor<2x4xi64>
  %c:3 = nn.attention_grad %doc, %qc, %k, %v mask = causal positions %pos : tensor<2x4x4x6xf32>, tensor<2x4x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x6xf32>, tensor<2x4xi64>
  return %dq, %dk, %dv : tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x6xf32>
}

// CHECK-LABEL: func.func @scatter_grads
func.func @scatter_grads(%dy: tensor<16x1xf32>, %labels: tensor<16x1xi64>,
                         %ds: tensor<4x3xf32>)
    -> (tensor<16x64xf32>, tensor<4x8xf32>) {
  // CHECK: nn.gather_grad %{{.*}}, %{{.*}} dim = 1 : tensor<16x1xf32>, tensor<16x1xi64> to tensor<16x64xf32>
  %0 = nn.gather_grad %dy, %labels dim = 1 : tensor<16x1xf32>, tensor<16x1xi64> to tensor<16x64xf32>
  // CHECK: nn.slice_grad %{{.*}} offsets = [0, 2] strides = [1, 2] : tensor<4x3xf32> to tensor<4x8xf32>
  %1 = nn.slice_grad %ds offsets = [0, 2] strides = [1, 2] : tensor<4x3xf32> to tensor<4x8xf32>
  return %0, %1 : tensor<16x64xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @rope_inverse
func.func @rope_inverse(%x: tensor<8x16x4x8xf32>, %pos: tensor<8x16xi64>)
    -> tensor<8x16x4x8xf32> {
  // CHECK: nn.rope %{{.*}}, %{{.*}} inverse {theta = 5.000000e+05 : f64} : tensor<8x16x4x8xf32>, tensor<8x16xi64>
  %0 = nn.rope %x, %pos inverse {theta = 5.0e+05 : f64} : tensor<8x16x4x8xf32>, tensor<8x16xi64>
  return %0 : tensor<8x16x4x8xf32>
}
