// RUN: loom-opt %s --loom-lower-to-calls=entry=step --loom-emit-ascend -split-input-file -verify-diagnostics

// Ascend hardware has no f64 matmul or f64 reductions in HCCL: reported once,
// at the first op on f64.
func.func @step(%x: tensor<4xf64> {nn.data}) -> (tensor<f64> {nn.loss}) {
  // expected-error@+1 {{the Ascend target has no f64 (aclnnMatmul and HCCL's reductions take f32, f16 and bf16 on Atlas A2/A3); build the model in f32}}
  %y = nn.exp %x : tensor<4xf64>
  %l = nn.reduce sum %y dims = [0] : tensor<4xf64>
  return %l : tensor<f64>
}
