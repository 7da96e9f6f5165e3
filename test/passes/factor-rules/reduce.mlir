// RUN: loom-opt %s -split-input-file --nn-print-factor-rules --verify-diagnostics -o /dev/null

// Reduced dimensions are reduction factors of the reduction's kind; kept
// dimensions are parallel.
func.func @kinds(%x: tensor<4x8xf32>) {
  // expected-remark @below {{factor rule: ([i, j]) -> ([i]) {i = 4, j = 8 reduction(sum)} linear [0]}}
  %0 = nn.reduce sum %x dims = [1] : tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([i, j]) -> ([]) {i = 4 reduction(max), j = 8 reduction(max)}}}
  %1 = nn.reduce max %x dims = [1, 0] : tensor<4x8xf32>
  // A split mean is a sum of partial means, each divided by the global
  // count.
  // expected-remark @below {{factor rule: ([i, j]) -> ([j]) {i = 4 reduction(sum), j = 8}}}
  %2 = nn.reduce mean %x dims = [0] : tensor<4x8xf32>
  return
}

// -----

// With keep_dims the reduced dimensions stay as 1, mapped to no factor.
func.func @keep_dims(%x: tensor<4x8xf32>, %y: tensor<2x3x4xf32>) {
  // expected-remark @below {{factor rule: ([i, j]) -> ([1, 1]) {i = 4 reduction(max), j = 8 reduction(max)}}}
  %0 = nn.reduce max %x dims = [0, 1] keep_dims : tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([i, j, k]) -> ([i, j, 1]) {i = 2, j = 3, k = 4 reduction(sum)}}}
  %1 = nn.reduce mean %y dims = [2] keep_dims : tensor<2x3x4xf32>
  // expected-remark @below {{factor rule: ([i, j, k]) -> ([j]) {i = 2 reduction(sum), j = 3, k = 4 reduction(sum)}}}
  %2 = nn.reduce sum %y dims = [0, 2] : tensor<2x3x4xf32>
  return
}

// -----

// A dynamic reduced dimension.
func.func @dynamic(%x: tensor<?x8xf32>) {
  // expected-remark @below {{factor rule: ([i, j]) -> ([j]) {i = ? reduction(sum), j = 8}}}
  %0 = nn.reduce sum %x dims = [0] : tensor<?x8xf32>
  return
}
