// RUN: loom-opt %s -split-input-file --nn-print-factor-rules --verify-diagnostics -o /dev/null

// Softmax and log-softmax: the axis is replicated, the rest parallel.
func.func @softmax(%x: tensor<4x8xf32>, %y: tensor<2x3x5xf32>) {
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = 4, j = 8 replicated}}}
  %0 = nn.softmax %x dim = 1 : tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = 4 replicated, j = 8}}}
  %1 = nn.softmax %x dim = 0 : tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([i, j, k]) -> ([i, j, k]) {i = 2, j = 3, k = 5 replicated}}}
  %2 = nn.log_softmax %y dim = 2 : tensor<2x3x5xf32>
  return
}

// -----

// Layer norm: the normalised trailing dimensions are replicated, scale and
// bias map to them; the leading dimensions are parallel.
func.func @layer_norm(%x: tensor<8x16x32xf32>, %g: tensor<32xf32>,
                      %b: tensor<32xf32>, %y: tensor<8x32xf32>) {
  // expected-remark @below {{factor rule: ([i, j, k], [k], [k]) -> ([i, j, k]) {i = 8, j = 16, k = 32 replicated}}}
  %0 = nn.layer_norm %x scale %g bias %b : tensor<8x16x32xf32>, tensor<32xf32>, tensor<32xf32>
  // expected-remark @below {{factor rule: ([i, j, k]) -> ([i, j, k]) {i = 8, j = 16 replicated, k = 32 replicated}}}
  %1 = nn.layer_norm %x {normalized_dims = 2 : i64} : tensor<8x16x32xf32>
  // expected-remark @below {{factor rule: ([i, j], [j]) -> ([i, j]) {i = 8, j = 32 replicated}}}
  %2 = nn.layer_norm %y bias %b : tensor<8x32xf32>, tensor<32xf32>
  return
}

// -----

// RMS norm, with one and two normalised dimensions.
func.func @rms_norm(%x: tensor<8x16x32xf32>, %g: tensor<32xf32>,
                    %h: tensor<16x32xf32>) {
  // expected-remark @below {{factor rule: ([i, j, k], [k]) -> ([i, j, k]) {i = 8, j = 16, k = 32 replicated}}}
  %0 = nn.rms_norm %x scale %g : tensor<8x16x32xf32>, tensor<32xf32>
  // expected-remark @below {{factor rule: ([i, j, k], [j, k]) -> ([i, j, k]) {i = 8, j = 16 replicated, k = 32 replicated}}}
  %1 = nn.rms_norm %x scale %h {normalized_dims = 2 : i64} : tensor<8x16x32xf32>, tensor<16x32xf32>
  return
}

// -----

// The input gradients of the norms follow their forward rules: gradient and
// input share the factors.
func.func @norm_grads(%dy: tensor<8x16x32xf32>, %x: tensor<8x16x32xf32>,
                      %g: tensor<32xf32>) {
  // expected-remark @below {{factor rule: ([i, j, k], [i, j, k], [k]) -> ([i, j, k]) {i = 8, j = 16, k = 32 replicated}}}
  %0 = nn.layer_norm_grad %dy, %x scale %g : tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<32xf32>
  // expected-remark @below {{factor rule: ([i, j, k], [i, j, k]) -> ([i, j, k]) {i = 8, j = 16 replicated, k = 32 replicated}}}
  %1 = nn.rms_norm_grad %dy, %x {normalized_dims = 2 : i64} : tensor<8x16x32xf32>, tensor<8x16x32xf32>
  // expected-remark @below {{factor rule: ([i, j, k], [i, j, k], [k]) -> ([i, j, k]) {i = 8, j = 16, k = 32 replicated}}}
  %2 = nn.rms_norm_grad %dy, %x scale %g : tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<32xf32>
  return
}
