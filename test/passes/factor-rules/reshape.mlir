// RUN: loom-opt %s -split-input-file --nn-print-factor-rules --verify-diagnostics -o /dev/null

// Splitting a dimension: the operand's dimension is the product of the
// result's, major first.
func.func @split(%x: tensor<8x32xf32>) {
  // expected-remark @below {{factor rule: ([i, j*k]) -> ([i, j, k]) {i = 8, j = 4, k = 8}}}
  %0 = nn.reshape %x : tensor<8x32xf32> to tensor<8x4x8xf32>
  return
}

// -----

// Merging dimensions.
func.func @merge(%x: tensor<8x16x32xf32>) {
  // expected-remark @below {{factor rule: ([i, j, k]) -> ([i*j, k]) {i = 8, j = 16, k = 32}}}
  %0 = nn.reshape %x : tensor<8x16x32xf32> to tensor<128x32xf32>
  return
}

// -----

// Split and merge in one group: [4, 6] -> [8, 3] refines to 4, 2, 3.
func.func @mixed(%x: tensor<4x6xf32>, %y: tensor<2x12x5xf32>) {
  // expected-remark @below {{factor rule: ([i, j*k]) -> ([i*j, k]) {i = 4, j = 2, k = 3}}}
  %0 = nn.reshape %x : tensor<4x6xf32> to tensor<8x3xf32>
  // expected-remark @below {{factor rule: ([i, j*k*l, m]) -> ([i*j, k, l*m]) {i = 2, j = 2, k = 3, l = 2, m = 5}}}
  %1 = nn.reshape %y : tensor<2x12x5xf32> to tensor<4x3x10xf32>
  return
}

// -----

// Groups that do not nest: each side's dimensions get their own replicated
// factors; common major factors found before are still shared.
func.func @non_nesting(%x: tensor<2x3xf32>, %y: tensor<6x4xf32>,
                       %z: tensor<2x3x5xf32>) {
  // expected-remark @below {{factor rule: ([i, j]) -> ([k, l]) {i = 2 replicated, j = 3 replicated, k = 3 replicated, l = 2 replicated}}}
  %0 = nn.reshape %x : tensor<2x3xf32> to tensor<3x2xf32>
  // expected-remark @below {{factor rule: ([i*j, k]) -> ([i*l, m]) {i = 2, j = 3 replicated, k = 4 replicated, l = 2 replicated, m = 6 replicated}}}
  %1 = nn.reshape %y : tensor<6x4xf32> to tensor<4x6xf32>
  // expected-remark @below {{factor rule: ([i, j, m]) -> ([k, l, m]) {i = 2 replicated, j = 3 replicated, k = 3 replicated, l = 2 replicated, m = 5}}}
  %2 = nn.reshape %z : tensor<2x3x5xf32> to tensor<3x2x5xf32>
  return
}

// -----

// Dimensions of size 1 map to no factor, on either side.
func.func @unit_dims(%x: tensor<1x8x1x4xf32>, %y: tensor<32xf32>,
                     %s: tensor<f32>) {
  // expected-remark @below {{factor rule: ([1, i, 1, j]) -> ([i*j]) {i = 8, j = 4}}}
  %0 = nn.reshape %x : tensor<1x8x1x4xf32> to tensor<32xf32>
  // expected-remark @below {{factor rule: ([i]) -> ([1, i, 1]) {i = 32}}}
  %1 = nn.reshape %y : tensor<32xf32> to tensor<1x32x1xf32>
  // expected-remark @below {{factor rule: ([]) -> ([1, 1]) {}}}
  %2 = nn.reshape %s : tensor<f32> to tensor<1x1xf32>
  return
}

// -----

// Dynamic sizes: static groups are found from both ends; the middle group
// is shared when one side of it is a single dimension, replicated otherwise.
func.func @dynamic(%x: tensor<?x32xf32>, %y: tensor<?x4xf32>,
                   %z: tensor<?x6xf32>, %w: tensor<?xf32>) {
  // expected-remark @below {{factor rule: ([i, j*k]) -> ([i, j, k]) {i = ?, j = 4, k = 8}}}
  %0 = nn.reshape %x : tensor<?x32xf32> to tensor<?x4x8xf32>
  // expected-remark @below {{factor rule: ([i, j]) -> ([i*j]) {i = ?, j = 4}}}
  %1 = nn.reshape %y : tensor<?x4xf32> to tensor<?xf32>
  // expected-remark @below {{factor rule: ([i, j]) -> ([k, l]) {i = ? replicated, j = 6 replicated, k = 2 replicated, l = ? replicated}}}
  %2 = nn.reshape %z : tensor<?x6xf32> to tensor<2x?xf32>
  // expected-remark @below {{factor rule: ([i*j*k]) -> ([i, j, k]) {i = 2, j = ?, k = 4}}}
  %3 = nn.reshape %w : tensor<?xf32> to tensor<2x?x4xf32>
  return
}

// -----

// A tensor without elements: nothing to refine, every dimension replicated.
func.func @empty(%x: tensor<0x4xf32>) {
  // expected-remark @below {{factor rule: ([i, j]) -> ([k, l]) {i = 0 replicated, j = 4 replicated, k = 4 replicated, l = 0 replicated}}}
  %0 = nn.reshape %x : tensor<0x4xf32> to tensor<4x0xf32>
  return
}
