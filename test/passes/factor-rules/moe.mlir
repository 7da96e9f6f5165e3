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
