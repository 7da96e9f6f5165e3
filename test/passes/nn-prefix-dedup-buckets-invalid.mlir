// RUN: not loom-opt %s --nn-prefix-dedup="capacity=16 buckets=16,32" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not loom-opt %s --nn-prefix-dedup="buckets=16,16" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not loom-opt %s --nn-prefix-dedup="buckets=0,16" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: loom-opt %s --split-input-file --nn-prefix-dedup="buckets=8,64" -verify-diagnostics -o /dev/null

// BOTH: error: nn-prefix-dedup takes capacity or buckets, not both
// TWICE: error: nn-prefix-dedup: bucket 16 is given twice
// ZERO: error: nn-prefix-dedup: bucket 0 is not positive

// A bucket larger than a bin's tokens (4 samples of 8: 32).
// expected-error @+1 {{capacity = 64 exceeds the 32 tokens}}
func.func @f(%tokens: tensor<4x8xi64> {nn.data}, %wte: tensor<16x8xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x8xf32>, tensor<4x8xi64>
  %s = nn.reduce sum %x dims = [0, 1, 2] : tensor<4x8x8xf32>
  return %s : tensor<f32>
}

// -----

func.func @g_c8() {
  return
}
// expected-error @+1 {{the variant name @g_c8 is already taken}}
func.func @g(%tokens: tensor<4x8xi64> {nn.data}, %wte: tensor<16x8xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x8xf32>, tensor<4x8xi64>
  %s = nn.reduce sum %x dims = [0, 1, 2] : tensor<4x8x8xf32>
  return %s : tensor<f32>
}

// -----

// expected-error @+1 {{is called; prefix deduplication changes its arguments: inline the calls first}}
func.func @h(%tokens: tensor<4x8xi64> {nn.data}, %wte: tensor<16x8xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x8xf32>, tensor<4x8xi64>
  %s = nn.reduce sum %x dims = [0, 1, 2] : tensor<4x8x8xf32>
  return %s : tensor<f32>
}
func.func @caller(%t: tensor<4x8xi64>, %w: tensor<16x8xf32>) -> tensor<f32> {
  %r = func.call @h(%t, %w) : (tensor<4x8xi64>, tensor<16x8xf32>) -> tensor<f32>
  return %r : tensor<f32>
}
