// RUN: loom-opt %s --loom-lower-to-calls=entry=step --loom-emit-ascend -verify-diagnostics

// The Ascend target has kernels for a subset of the nn ops (those of
// runtime/ascend/AscendKernels.h); any other op is an error at the op, not
// a C++ compile error later.
func.func @step(%x: tensor<4xf32> {nn.data}) -> (tensor<f32> {nn.loss}) {
  // expected-error@+1 {{the Ascend target has no kernel for nn.clamp yet}}
  %y = nn.clamp %x {max = 6.0 : f64, min = 0.0 : f64} : tensor<4xf32>
  %l = nn.reduce sum %y dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}
