// RUN: loom-opt %s -split-input-file --nn-print-factor-rules --verify-diagnostics -o /dev/null

// A matrix product: M and N parallel, the contracting K a reduction(sum);
// linear in each operand.
func.func @matrix(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) {
  // expected-remark @below {{factor rule: ([i, k], [k, j]) -> ([i, j]) {i = 8, j = 4, k = 16 reduction(sum)} linear [0] linear [1]}}
  %0 = nn.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xf32>
  return
}

// -----

// Batch dimensions are parallel and broadcast like element-wise ops: a
// missing one (the weight of a batched matmul) and a 1 against a larger
// size map to no factor.
func.func @batched(%x: tensor<8x16x32xf32>, %w: tensor<32x64xf32>,
                   %a: tensor<2x1x4x8xf32>, %b: tensor<3x8x5xf32>,
                   %c: tensor<1x4x8xf32>, %d: tensor<1x8x2xf32>) {
  // expected-remark @below {{factor rule: ([i, j, l], [l, k]) -> ([i, j, k]) {i = 8, j = 16, k = 64, l = 32 reduction(sum)}}}
  %0 = nn.matmul %x, %w : tensor<8x16x32xf32>, tensor<32x64xf32>
  // expected-remark @below {{factor rule: ([i, 1, k, m], [j, m, l]) -> ([i, j, k, l]) {i = 2, j = 3, k = 4, l = 5, m = 8 reduction(sum)}}}
  %1 = nn.matmul %a, %b : tensor<2x1x4x8xf32>, tensor<3x8x5xf32>
  // expected-remark @below {{factor rule: ([i, j, l], [i, l, k]) -> ([i, j, k]) {i = 1, j = 4, k = 2, l = 8 reduction(sum)}}}
  %2 = nn.matmul %c, %d : tensor<1x4x8xf32>, tensor<1x8x2xf32>
  return
}

// -----

// Transposed operands read K and M (or N and K) the other way round.
func.func @transposed(%q: tensor<4x16x8xf32>, %k: tensor<4x16x8xf32>,
                      %a: tensor<16x8xf32>, %b: tensor<16x4xf32>,
                      %c: tensor<4x16xf32>) {
  // expected-remark @below {{factor rule: ([i, j, l], [i, k, l]) -> ([i, j, k]) {i = 4, j = 16, k = 16, l = 8 reduction(sum)}}}
  %0 = nn.matmul %q, %k transpose_rhs : tensor<4x16x8xf32>, tensor<4x16x8xf32>
  // expected-remark @below {{factor rule: ([k, i], [k, j]) -> ([i, j]) {i = 8, j = 4, k = 16 reduction(sum)}}}
  %1 = nn.matmul %a, %b transpose_lhs : tensor<16x8xf32>, tensor<16x4xf32>
  // expected-remark @below {{factor rule: ([k, i], [j, k]) -> ([i, j]) {i = 8, j = 4, k = 16 reduction(sum)}}}
  %2 = nn.matmul %a, %c transpose_lhs transpose_rhs : tensor<16x8xf32>, tensor<4x16xf32>
  return
}

// -----

// Vectors: nn.matmul takes matrices only (rank >= 2), so a matrix-vector
// product is a product with a [K, 1] or [1, K] matrix; its size-1 M or N is
// an ordinary factor.
func.func @vectors(%a: tensor<8x16xf32>, %v: tensor<16x1xf32>,
                   %r: tensor<1x16xf32>, %b: tensor<16x4xf32>) {
  // expected-remark @below {{factor rule: ([i, k], [k, j]) -> ([i, j]) {i = 8, j = 1, k = 16 reduction(sum)}}}
  %0 = nn.matmul %a, %v : tensor<8x16xf32>, tensor<16x1xf32>
  // expected-remark @below {{factor rule: ([i, k], [k, j]) -> ([i, j]) {i = 1, j = 4, k = 16 reduction(sum)}}}
  %1 = nn.matmul %r, %b : tensor<1x16xf32>, tensor<16x4xf32>
  // expected-remark @below {{factor rule: ([i, k], [k, j]) -> ([i, j]) {i = 1, j = 1, k = 16 reduction(sum)}}}
  %2 = nn.matmul %r, %v : tensor<1x16xf32>, tensor<16x1xf32>
  return
}

// -----

// Dynamic sizes: K takes the static size of whichever operand knows it.
func.func @dynamic(%a: tensor<?x16xf32>, %b: tensor<16x?xf32>,
                   %c: tensor<8x?xf32>, %d: tensor<16x4xf32>) {
  // expected-remark @below {{factor rule: ([i, k], [k, j]) -> ([i, j]) {i = ?, j = ?, k = 16 reduction(sum)}}}
  %0 = nn.matmul %a, %b : tensor<?x16xf32>, tensor<16x?xf32>
  // expected-remark @below {{factor rule: ([i, k], [k, j]) -> ([i, j]) {i = 8, j = 4, k = 16 reduction(sum)}}}
  %1 = nn.matmul %c, %d : tensor<8x?xf32>, tensor<16x4xf32>
  return
}
