// RUN: loom-opt %s -split-input-file --nn-print-factor-rules --verify-diagnostics -o /dev/null

// The router's top k: the leading dimensions parallel (each row alone), the
// row and the k picked replicated. The routing: replicated (a slot counts
// every entry before it, of all tokens).
func.func @router(%s: tensor<16x4xf32>, %s3: tensor<2x8x4xf64>) {
  // expected-remark @below {{factor rule: ([i, j]) -> ([i, k]) {i = 16, j = 4 replicated, k = 2 replicated}}}
  %e = nn.topk %s k = 2 : tensor<16x4xf32>
  // expected-remark @below {{factor rule: ([i, j, k]) -> ([i, j, l]) {i = 2, j = 8, k = 4 replicated, l = 3 replicated}}}
  %e3 = nn.topk %s3 k = 3 : tensor<2x8x4xf64>
  // expected-remark @below {{factor rule: ([i, j]) -> ([k, l], [m]) {i = 16 replicated, j = 2 replicated, k = 16 replicated, l = 2 replicated, m = 6 replicated}}}
  %slots, %counts = nn.moe_route %e num_experts = 6 capacity = 5 : tensor<16x2xi64>
  return
}

// -----

// The buffer ops of a mixture-of-experts layer.
func.func @layer(%x: tensor<16x8xf32>, %slots: tensor<16x2xi64>, %w: tensor<16x2xf32>, %counts: tensor<4xi64>, %w1: tensor<4x8x12xf32>) {
  // The dispatch: tokens are a reduction (each rank's tokens fill their
  // rows of a full buffer; the partial buffers sum), the width parallel,
  // the choices and the buffer rows replicated (a slot names a global row);
  // linear in the input and in the weights.
  // expected-remark @below {{factor rule: ([i, j], [i, k], [i, k]) -> ([l, j]) {i = 16 reduction(sum), j = 8, k = 2 replicated, l = 32 replicated} linear [0] linear [2]}}
  %buffer = nn.moe_dispatch %x, %slots weights %w rows = 32 : tensor<16x8xf32>, tensor<16x2xi64>, tensor<16x2xf32>
  // expected-remark @below {{factor rule: ([i, j], [i, k]) -> ([l, j]) {i = 16 reduction(sum), j = 8, k = 2 replicated, l = 32 replicated} linear [0]}}
  %b2 = nn.moe_dispatch %x, %slots rows = 32 : tensor<16x8xf32>, tensor<16x2xi64>
  // The grouped matmul: buffer rows replicated (the counts place each row
  // in its expert's group by its global position), the experts too; the
  // contraction a reduction and the output width parallel.
  // expected-remark @below {{factor rule: ([i, j], [l, j, k], [l]) -> ([i, k]) {i = 32 replicated, j = 8 reduction(sum), k = 12, l = 4 replicated} linear [0] linear [1]}}
  %h = nn.grouped_matmul %buffer, %w1, %counts : tensor<32x8xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  // expected-remark @below {{factor rule: ([i, j], [l, k, j], [l]) -> ([i, k]) {i = 32 replicated, j = 12 reduction(sum), k = 8, l = 4 replicated} linear [0] linear [1]}}
  %o = nn.grouped_matmul %h, %w1, %counts transpose_rhs : tensor<32x12xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  // The combine: tokens and width parallel, the whole buffer on each rank.
  // expected-remark @below {{factor rule: ([i, j], [k, l], [k, l]) -> ([k, j]) {i = 32 replicated, j = 8, k = 16, l = 2 replicated} linear [0] linear [2]}}
  %y = nn.moe_combine %o, %slots weights %w : tensor<32x8xf32>, tensor<16x2xi64>, tensor<16x2xf32>
  // expected-remark @below {{factor rule: ([i, j], [k, l]) -> ([k, j]) {i = 32 replicated, j = 8, k = 16, l = 2 replicated} linear [0]}}
  %y2 = nn.moe_combine %o, %slots : tensor<32x8xf32>, tensor<16x2xi64>
  // The slot dot products: the width a reduction, tokens and choices
  // parallel.
  // expected-remark @below {{factor rule: ([i, j], [k, j], [k, l]) -> ([k, l]) {i = 32 replicated, j = 8 reduction(sum), k = 16, l = 2} linear [0] linear [1]}}
  %dw = nn.moe_slot_dot %o, %x, %slots : tensor<32x8xf32>, tensor<16x8xf32>, tensor<16x2xi64>
  // The weight gradient: both widths parallel, rows and experts
  // replicated.
  // expected-remark @below {{factor rule: ([i, j], [i, k], [l]) -> ([l, j, k]) {i = 32 replicated, j = 8, k = 12, l = 4 replicated} linear [0] linear [1]}}
  %g = nn.grouped_matmul_grad %buffer, %h, %counts : tensor<32x8xf32>, tensor<32x12xf32>, tensor<4xi64>
  return
}

// -----

// Expert blocks: the buffer rows and the experts share a parallel factor,
// the blocks (i = 2), and keep a replicated one inside the block, so a
// split along the blocks gives each device its own rows and experts.
func.func @blocks(%buffer: tensor<64x8xf32>, %w1: tensor<4x8x12xf32>,
                  %counts: tensor<4xi64>) {
  // expected-remark @below {{factor rule: ([i*j, k], [i*m, k, l], [i*m]) -> ([i*j, l]) {i = 2, j = 32 replicated, k = 8 reduction(sum), l = 12, m = 2 replicated} linear [0] linear [1]}}
  %h = nn.grouped_matmul %buffer, %w1, %counts blocks = 2 : tensor<64x8xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  // expected-remark @below {{factor rule: ([i*j, k], [i*j, l], [i*m]) -> ([i*m, k, l]) {i = 2, j = 32 replicated, k = 8, l = 12, m = 2 replicated} linear [0] linear [1]}}
  %g = nn.grouped_matmul_grad %buffer, %h, %counts blocks = 2 : tensor<64x8xf32>, tensor<64x12xf32>, tensor<4xi64>
  return
}

// -----

// A dynamic number of experts (in the weight, though the counts are
// static): no block factor, the rows and experts stay whole (a local op
// could not know its blocks).
func.func @blocks_dynamic(%buffer: tensor<64x8xf32>, %w1: tensor<?x8x12xf32>,
                          %counts: tensor<4xi64>) {
  // expected-remark @below {{factor rule: ([i, j], [l, j, k], [l]) -> ([i, k]) {i = 64 replicated, j = 8 reduction(sum), k = 12, l = 4 replicated} linear [0] linear [1]}}
  %h = nn.grouped_matmul %buffer, %w1, %counts blocks = 2 : tensor<64x8xf32>, tensor<?x8x12xf32>, tensor<4xi64>
  return
}
