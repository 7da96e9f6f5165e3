// RUN: loom-opt %s -split-input-file --nn-print-factor-rules --verify-diagnostics -o /dev/null

// Broadcast: every result dimension parallel; new dimensions are
// result-only, and an input dimension that grows from 1 maps to no factor.
func.func @broadcast(%b: tensor<8xf32>, %c: tensor<4xf32>, %d: tensor<4x1xf32>) {
  // expected-remark @below {{factor rule: ([j]) -> ([i, j]) {i = 4, j = 8}}}
  %0 = nn.broadcast %b : tensor<8xf32> to tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([i]) -> ([i, j]) {i = 4, j = 8}}}
  %1 = nn.broadcast %c broadcast_dims = [0] : tensor<4xf32> to tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([j, 1]) -> ([i, j, k]) {i = 2, j = 4, k = 8}}}
  %2 = nn.broadcast %d : tensor<4x1xf32> to tensor<2x4x8xf32>
  // expected-remark @below {{factor rule: ([i, 1]) -> ([i, j, k]) {i = 4, j = 2, k = 8}}}
  %3 = nn.broadcast %d broadcast_dims = [0, 2] : tensor<4x1xf32> to tensor<4x2x8xf32>
  return
}

// -----

// Transpose: the input's factors, permuted.
func.func @transpose(%x: tensor<2x16x4x8xf32>, %y: tensor<3x5xi64>) {
  // expected-remark @below {{factor rule: ([i, j, k, l]) -> ([i, k, j, l]) {i = 2, j = 16, k = 4, l = 8}}}
  %0 = nn.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32>
  // expected-remark @below {{factor rule: ([i, j]) -> ([j, i]) {i = 3, j = 5}}}
  %1 = nn.transpose %y permutation = [1, 0] : tensor<3x5xi64>
  return
}

// -----

// Slice: a dimension taken whole is parallel; a sliced one is replicated,
// with a factor of its own on each side.
func.func @slice(%x: tensor<4x8xf32>, %y: tensor<?x8xf32>) {
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, k]) {i = 4, j = 8 replicated, k = 3 replicated}}}
  %0 = nn.slice %x offsets = [0, 2] sizes = [4, 3] strides = [1, 2] : tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([i, k]) -> ([j, k]) {i = 4 replicated, j = 2 replicated, k = 8}}}
  %1 = nn.slice %x offsets = [1, 0] sizes = [2, 8] strides = [1, 1] : tensor<4x8xf32>
  // Whole sizes but a stride: still a slice.
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, k]) {i = 4, j = 8 replicated, k = 4 replicated}}}
  %2 = nn.slice %x offsets = [0, 0] sizes = [4, 4] strides = [1, 2] : tensor<4x8xf32>
  // A dynamic dimension is not known to be taken whole.
  // expected-remark @below {{factor rule: ([i, k]) -> ([j, k]) {i = ? replicated, j = 3 replicated, k = 8}}}
  %3 = nn.slice %y offsets = [0, 0] sizes = [3, 8] strides = [1, 1] : tensor<?x8xf32>
  return
}

// -----

// Slice gradient: along a sliced dimension the gradient is a reduction(sum)
// factor (a shard written into zeros is a partial sum), the result's
// dimension replicated.
func.func @slice_grad(%dy: tensor<4x3xf32>, %dz: tensor<2x8xf32>) {
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, k]) {i = 4, j = 3 reduction(sum), k = 8 replicated}}}
  %0 = nn.slice_grad %dy offsets = [0, 2] strides = [1, 2] : tensor<4x3xf32> to tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([i, k]) -> ([j, k]) {i = 2 reduction(sum), j = 4 replicated, k = 8}}}
  %1 = nn.slice_grad %dz offsets = [1, 0] strides = [1, 1] : tensor<2x8xf32> to tensor<4x8xf32>
  return
}

// -----

// Concat: the joined dimension is replicated, a factor per input and one for
// the result; the others are shared and parallel.
func.func @concat(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>, %c: tensor<2x6xf32>,
                  %d: tensor<3x6xf32>, %e: tensor<1x6xf32>) {
  // expected-remark @below {{factor rule: ([i, j], [i, k]) -> ([i, l]) {i = 4, j = 3 replicated, k = 5 replicated, l = 8 replicated}}}
  %0 = nn.concat %a, %b dim = 1 : tensor<4x3xf32>, tensor<4x5xf32>
  // expected-remark @below {{factor rule: ([i, m], [j, m], [k, m]) -> ([l, m]) {i = 2 replicated, j = 3 replicated, k = 1 replicated, l = 6 replicated, m = 6}}}
  %1 = nn.concat %c, %d, %e dim = 0 : tensor<2x6xf32>, tensor<3x6xf32>, tensor<1x6xf32>
  return
}

// -----

// Gather: the input's gathered dimension is replicated; the indices and the
// result share a parallel factor along it, and every other factor.
func.func @gather(%logits: tensor<16x64xf32>, %labels: tensor<16x1xi64>,
                  %table: tensor<10x4xf32>, %rows: tensor<6x4xi32>) {
  // expected-remark @below {{factor rule: ([i, j], [i, k]) -> ([i, k]) {i = 16, j = 64 replicated, k = 1}}}
  %0 = nn.gather %logits, %labels dim = 1 : tensor<16x64xf32>, tensor<16x1xi64>
  // expected-remark @below {{factor rule: ([i, k], [j, k]) -> ([j, k]) {i = 10 replicated, j = 6, k = 4}}}
  %1 = nn.gather %table, %rows dim = 0 : tensor<10x4xf32>, tensor<6x4xi32>
  return
}

// -----

// Gather gradient: a scatter-add, so along the scattered dimension the
// gradient and the indices share a reduction(sum) factor, and the result's
// dimension is a parallel factor of its own (a device holding a block of
// the result scatters the indices in it).
func.func @gather_grad(%dy: tensor<16x1xf32>, %labels: tensor<16x1xi64>) {
  // expected-remark @below {{factor rule: ([i, j], [i, j]) -> ([i, k]) {i = 16, j = 1 reduction(sum), k = 64} linear [0]}}
  %0 = nn.gather_grad %dy, %labels dim = 1 : tensor<16x1xf32>, tensor<16x1xi64> to tensor<16x64xf32>
  return
}
