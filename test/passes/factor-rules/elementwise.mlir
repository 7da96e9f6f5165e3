// RUN: loom-opt %s -split-input-file --nn-print-factor-rules --verify-diagnostics -o /dev/null

// Binary ops (sums linear in both operands at once, products in either):
// one parallel factor per result dimension; a missing leading
// dimension and a dimension of size 1 broadcast against a larger one map to
// no factor (`1`).
func.func @binary(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<4x1xf32>,
                  %d: tensor<1x8xf32>, %e: tensor<1x1xf32>,
                  %f: tensor<2x3x4xf32>, %s: tensor<f32>) {
  // expected-remark @below {{factor rule: ([i, j], [j]) -> ([i, j]) {i = 4, j = 8} linear [0, 1]}}
  %0 = nn.add %a, %b : tensor<4x8xf32>, tensor<8xf32>
  // expected-remark @below {{factor rule: ([i, 1], [1, j]) -> ([i, j]) {i = 4, j = 8} linear [0, 1]}}
  %1 = nn.sub %c, %d : tensor<4x1xf32>, tensor<1x8xf32>
  // expected-remark @below {{factor rule: ([i, j], [i, j]) -> ([i, j]) {i = 1, j = 1}}}
  %2 = nn.mul %e, %e : tensor<1x1xf32>, tensor<1x1xf32>
  // expected-remark @below {{factor rule: ([i, j, k], []) -> ([i, j, k]) {i = 2, j = 3, k = 4}}}
  %3 = nn.div %f, %s : tensor<2x3x4xf32>, tensor<f32>
  // expected-remark @below {{factor rule: ([], [i, j]) -> ([i, j]) {i = 4, j = 8}}}
  %4 = nn.maximum %s, %a : tensor<f32>, tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([1, 1], [i, j, k]) -> ([i, j, k]) {i = 2, j = 3, k = 4}}}
  %5 = nn.minimum %e, %f : tensor<1x1xf32>, tensor<2x3x4xf32>
  return
}

// -----

// Dynamic sizes: a dynamic operand dimension is the full dimension; the
// factor takes the static size where one operand knows it.
func.func @dynamic(%a: tensor<?x8xf32>, %b: tensor<4x1xf32>, %c: tensor<?xf32>) {
  // expected-remark @below {{factor rule: ([i, j], [i, 1]) -> ([i, j]) {i = 4, j = 8}}}
  %0 = nn.minimum %a, %b : tensor<?x8xf32>, tensor<4x1xf32>
  // expected-remark @below {{factor rule: ([i], [i]) -> ([i]) {i = ?}}}
  %1 = nn.maximum %c, %c : tensor<?xf32>, tensor<?xf32>
  return
}

// -----

// Unary ops, gelu and clamp: the operand's factors, all parallel.
func.func @unary(%x: tensor<4x8xf32>, %y: tensor<?x4xf32>, %s: tensor<f32>,
                 %z: tensor<2x3xbf16>) {
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = 4, j = 8}}}
  %0 = nn.neg %x : tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([]) -> ([]) {}}}
  %1 = nn.exp %s : tensor<f32>
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = ?, j = 4}}}
  %2 = nn.log %y : tensor<?x4xf32>
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = 2, j = 3}}}
  %3 = nn.sqrt %z : tensor<2x3xbf16>
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = 2, j = 3}}}
  %4 = nn.rsqrt %z : tensor<2x3xbf16>
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = 4, j = 8}}}
  %5 = nn.tanh %x : tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = 4, j = 8}}}
  %6 = nn.relu %x : tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = 4, j = 8}}}
  %7 = nn.silu %x : tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = 4, j = 8}}}
  %8 = nn.sin %x : tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = 4, j = 8}}}
  %9 = nn.cos %x : tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = 4, j = 8}}}
  %10 = nn.gelu %x approximate = tanh : tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = 4, j = 8}}}
  %11 = nn.clamp %x {max = 6.0 : f64, min = 0.0 : f64} : tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([i, j], [i, j]) -> ([i, j]) {i = 4, j = 8}}}
  %12 = nn.gelu_grad %x, %x : tensor<4x8xf32>
  return
}

// -----

// Factors past the fourteenth letter are named f14, f15, ...
func.func @names(%x: tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x2x3xf32>) {
  // expected-remark @below {{factor rule: ([i, j, k, l, m, n, o, p, q, r, s, t, u, v, f14, f15]) -> ([i, j, k, l, m, n, o, p, q, r, s, t, u, v, f14, f15]) {i = 1, j = 1, k = 1, l = 1, m = 1, n = 1, o = 1, p = 1, q = 1, r = 1, s = 1, t = 1, u = 1, v = 1, f14 = 2, f15 = 3}}}
  %0 = nn.neg %x : tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x2x3xf32>
  return
}

// -----

// Compare, select and cast: element-wise with broadcasting, whatever the
// element types.
func.func @predicates(%a: tensor<4x8xf32>, %b: tensor<4x1xf32>,
                      %c: tensor<4x8xi1>, %d: tensor<8xi1>, %s: tensor<f32>,
                      %i: tensor<4x8xi64>) {
  // expected-remark @below {{factor rule: ([i, j], [i, 1]) -> ([i, j]) {i = 4, j = 8}}}
  %0 = nn.compare lt, %a, %b : tensor<4x8xf32>, tensor<4x1xf32>
  // expected-remark @below {{factor rule: ([i, j], [i, j], []) -> ([i, j]) {i = 4, j = 8}}}
  %1 = nn.select %c, %a, %s : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>
  // expected-remark @below {{factor rule: ([j], [i, 1], [i, j]) -> ([i, j]) {i = 4, j = 8}}}
  %2 = nn.select %d, %b, %a : tensor<8xi1>, tensor<4x1xf32>, tensor<4x8xf32>
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = 4, j = 8}}}
  %3 = nn.cast %a : tensor<4x8xf32> to tensor<4x8xbf16>
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = 4, j = 8}}}
  %4 = nn.cast %i : tensor<4x8xi64> to tensor<4x8xf32>
  return
}

// -----

// Dropout: parallel (the mask follows the global index); the 0-d offset
// maps to no dimension.
func.func @dropout(%x: tensor<8x32xf32>, %step: tensor<i64>) {
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, j]) {i = 8, j = 32}}}
  %0 = nn.dropout %x {rate = 1.0e-01 : f64, seed = 42 : i64} : tensor<8x32xf32>
  // expected-remark @below {{factor rule: ([i, j], []) -> ([i, j]) {i = 8, j = 32}}}
  %1 = nn.dropout %x, %step {rate = 1.0e-01 : f64, seed = 42 : i64} : tensor<8x32xf32>
  return
}

// -----

// Constants: every result dimension parallel, no operands.
func.func @constants() {
  // expected-remark @below {{factor rule: () -> ([i, j]) {i = 4, j = 8}}}
  %0 = nn.fill 0.0 : tensor<4x8xbf16>
  // expected-remark @below {{factor rule: () -> ([]) {}}}
  %1 = nn.fill 1.0 : tensor<f32>
  // expected-remark @below {{factor rule: () -> ([i, j]) {i = 8, j = 16}}}
  %2 = nn.iota dim = 1 : tensor<8x16xi64>
  return
}

// -----

// Optimizer updates: element-wise over parameter, gradient, states and
// results; the 0-d step maps to no dimension.
func.func @optimizers(%p: tensor<32x64xf32>, %g: tensor<32x64xf32>,
                      %m: tensor<32x64xf32>, %v: tensor<32x64xf32>,
                      %step: tensor<i64>) {
  // expected-remark @below {{factor rule: ([i, j], [i, j], [i, j]) -> ([i, j], [i, j]) {i = 32, j = 64}}}
  %0:2 = nn.sgd_update %p, %g, %m {lr = 1.0e-02 : f64, momentum = 9.0e-01 : f64} : tensor<32x64xf32>
  // expected-remark @below {{factor rule: ([i, j], [i, j], [i, j], [i, j], []) -> ([i, j], [i, j], [i, j]) {i = 32, j = 64}}}
  %1:3 = nn.adamw_update %p, %g, %m, %v, %step {lr = 1.0e-03 : f64} : tensor<32x64xf32>
  return
}
