// RUN: loom-opt %s -split-input-file -verify-diagnostics

// fill: a constant needs a static shape.
func.func @fill_dynamic() {
  // expected-error @+1 {{'nn.fill' op result must have a static shape, got 'tensor<?xf32>'}}
  %0 = nn.fill 1.0 : tensor<?xf32>
  return
}

// -----

// fill: NaN is not a value to fill with.
func.func @fill_nan() {
  // expected-error @+1 {{'nn.fill' op value must not be NaN}}
  %0 = nn.fill 0x7FF8000000000000 : tensor<4xf32>
  return
}

// -----

// gelu_grad: the gradient has the input's type.
func.func @gelu_grad_type(%dy: tensor<4xf32>, %x: tensor<8xf32>) {
  // expected-error @+1 {{'nn.gelu_grad' op requires the same type for all operands and results}}
  %0 = "nn.gelu_grad"(%dy, %x) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

// layer_norm_grad: the incoming gradient has the forward result's type.
func.func @layer_norm_grad_type(%dy: tensor<8x16xf32>, %x: tensor<8x32xf32>) {
  // expected-error @+1 {{'nn.layer_norm_grad' op grad has type 'tensor<8x16xf32>' but the layer_norm result has type 'tensor<8x32xf32>'}}
  %0 = nn.layer_norm_grad %dy, %x : tensor<8x16xf32>, tensor<8x32xf32>
  return
}

// -----

// layer_norm_grad: the scale checks of layer_norm apply.
func.func @layer_norm_grad_scale(%dy: tensor<8x32xf32>, %x: tensor<8x32xf32>,
                                 %g: tensor<16xf32>) {
  // expected-error @+1 {{'nn.layer_norm_grad' op scale has shape [16] but the normalized trailing dimensions of the input is [32]}}
  %0 = nn.layer_norm_grad %dy, %x scale %g : tensor<8x32xf32>, tensor<8x32xf32>, tensor<16xf32>
  return
}

// -----

// rms_norm_grad: epsilon as in rms_norm.
func.func @rms_norm_grad_epsilon(%dy: tensor<8x32xf32>, %x: tensor<8x32xf32>) {
  // expected-error @+1 {{'nn.rms_norm_grad' op epsilon must be > 0, got 0}}
  %0 = nn.rms_norm_grad %dy, %x {epsilon = 0.0 : f64} : tensor<8x32xf32>, tensor<8x32xf32>
  return
}

// -----

// cross_entropy_grad: the gradient of a scalar loss is a scalar.
func.func @cross_entropy_grad_scalar(%dl: tensor<16xf32>, %z: tensor<16x64xf32>,
                                     %y: tensor<16xi64>) {
  // expected-error @+1 {{'nn.cross_entropy_grad' op grad has type 'tensor<16xf32>' but the cross_entropy result has type 'tensor<f32>'}}
  %0 = nn.cross_entropy_grad %dl, %z, %y {normalizer = 16.0 : f64} : tensor<16xf32>, tensor<16x64xf32>, tensor<16xi64>
  return
}

// -----

// cross_entropy_grad: exactly one normalizer, as for cross_entropy.
func.func @cross_entropy_grad_normalizer(%dl: tensor<f32>, %z: tensor<16x64xf32>,
                                         %y: tensor<16xi64>) {
  // expected-error @+1 {{'nn.cross_entropy_grad' op requires a normalizer: the 'normalizer' attribute or a normalizer operand}}
  %0 = nn.cross_entropy_grad %dl, %z, %y : tensor<f32>, tensor<16x64xf32>, tensor<16xi64>
  return
}

// -----

// attention_grad: the incoming gradient has the attention result's shape
// (the value head width is 6, not 8).
func.func @attention_grad_type(%do: tensor<2x16x4x8xf32>, %q: tensor<2x16x4x8xf32>,
                               %k: tensor<2x16x4x8xf32>, %v: tensor<2x16x4x6xf32>) {
  // expected-error @+1 {{'nn.attention_grad' op grad has type 'tensor<2x16x4x8xf32>' but the attention result has type 'tensor<2x16x4x6xf32>'}}
  %0:3 = nn.attention_grad %do, %q, %k, %v mask = none : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x6xf32>
  return
}

// -----

// attention_grad: the mask checks of attention apply.
func.func @attention_grad_tree(%do: tensor<2x16x4x8xf32>, %q: tensor<2x16x4x8xf32>,
                               %k: tensor<2x16x4x8xf32>, %v: tensor<2x16x4x8xf32>) {
  // expected-error @+1 {{'nn.attention_grad' op mask kind 'tree' requires a subtree_end operand}}
  %0:3 = nn.attention_grad %do, %q, %k, %v mask = tree : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>
  return
}

// -----

// gather_grad: one gradient element per index.
func.func @gather_grad_shape(%dy: tensor<16x2xf32>, %i: tensor<16x1xi64>) {
  // expected-error @+1 {{'nn.gather_grad' op grad has shape [16, 2] but the shape of the indices is [16, 1]}}
  %0 = nn.gather_grad %dy, %i dim = 1 : tensor<16x2xf32>, tensor<16x1xi64> to tensor<16x64xf32>
  return
}

// -----

// gather_grad: only the gather dimension may differ from the gradient's.
func.func @gather_grad_other_dim(%dy: tensor<16x1xf32>, %i: tensor<16x1xi64>) {
  // expected-error @+1 {{'nn.gather_grad' op result dimension 0 of size 8 does not match dimension 0 of size 16 of grad (only the gather dimension 1 may differ)}}
  %0 = nn.gather_grad %dy, %i dim = 1 : tensor<16x1xf32>, tensor<16x1xi64> to tensor<8x64xf32>
  return
}

// -----

// gather_grad: the gather dimension exists.
func.func @gather_grad_dim(%dy: tensor<16x1xf32>, %i: tensor<16x1xi64>) {
  // expected-error @+1 {{'nn.gather_grad' op dim 2 is out of range [0, 2) for an operand of rank 2}}
  %0 = nn.gather_grad %dy, %i dim = 2 : tensor<16x1xf32>, tensor<16x1xi64> to tensor<16x64xf32>
  return
}

// -----

// slice_grad: the positions written lie inside the result.
func.func @slice_grad_bounds(%dy: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.slice_grad' op slice of dimension 1 (offset 4, size 3, stride 2) reads index 8 but the dimension has size 8}}
  %0 = nn.slice_grad %dy offsets = [0, 4] strides = [1, 2] : tensor<4x3xf32> to tensor<4x8xf32>
  return
}

// -----

// slice_grad: the gradient's shape gives the slice sizes, so it is static.
func.func @slice_grad_dynamic(%dy: tensor<?x3xf32>) {
  // expected-error @+1 {{'nn.slice_grad' op grad must have a static shape (it gives the slice sizes), got 'tensor<?x3xf32>'}}
  %0 = nn.slice_grad %dy offsets = [0, 0] strides = [1, 1] : tensor<?x3xf32> to tensor<4x8xf32>
  return
}

// -----

// slice_grad: same rank.
func.func @slice_grad_rank(%dy: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.slice_grad' op result has rank 1 but grad has rank 2; they must be equal}}
  %0 = nn.slice_grad %dy offsets = [0, 0] strides = [1, 1] : tensor<4x3xf32> to tensor<32xf32>
  return
}
