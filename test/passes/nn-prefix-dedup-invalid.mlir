// RUN: loom-opt %s --split-input-file --nn-prefix-dedup="capacity=16" -verify-diagnostics -o /dev/null
// RUN: not loom-opt %s --split-input-file --nn-prefix-dedup="capacity=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CAPACITY
// RUN: not loom-opt %s --split-input-file --nn-prefix-dedup="capacity=16 func=nothing" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FUNC

// CAPACITY: error: nn-prefix-dedup needs capacity > 0 (or buckets) and bins > 0 (got capacity = 0, bins = 1)
// FUNC: error: nn-prefix-dedup: no function named 'nothing'

// Dropout draws a mask per (sample, token): two samples sharing a prefix
// would need different values at one node.
func.func @dropout(%tokens: tensor<4x8xi64> {nn.data}, %wte: tensor<16x8xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x8xf32>, tensor<4x8xi64>
  // expected-error @+1 {{drops token-derived activations at random; prefix deduplication cannot keep that exact}}
  %d = nn.dropout %x {rate = 1.0e-01 : f64, seed = 1 : i64} : tensor<4x8x8xf32>
  %s = nn.reduce sum %d dims = [0, 1, 2] : tensor<4x8x8xf32>
  return %s : tensor<f32>
}

// -----

// Bidirectional attention: a token sees later tokens, which differ between
// samples that share it.
func.func @bidirectional(%tokens: tensor<4x8xi64> {nn.data}, %wte: tensor<16x8xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x8xf32>, tensor<4x8xi64>
  %h = nn.reshape %x : tensor<4x8x8xf32> to tensor<4x8x2x4xf32>
  // expected-error @+1 {{has mask = none; prefix deduplication needs causal attention}}
  %a = nn.attention %h, %h, %h mask = none : tensor<4x8x2x4xf32>, tensor<4x8x2x4xf32>, tensor<4x8x2x4xf32>
  %s = nn.reduce sum %a dims = [0, 1, 2, 3] : tensor<4x8x2x4xf32>
  return %s : tensor<f32>
}

// -----

func.func @query_positions(%tokens: tensor<4x8xi64> {nn.data}, %at: tensor<4x8xi64> {nn.data},
    %wte: tensor<16x8xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x8xf32>, tensor<4x8xi64>
  %h = nn.reshape %x : tensor<4x8x8xf32> to tensor<4x8x2x4xf32>
  // expected-error @+1 {{has a positions operand; prefix deduplication needs attention over whole sequences}}
  %a = nn.attention %h, %h, %h mask = causal positions %at : tensor<4x8x2x4xf32>, tensor<4x8x2x4xf32>, tensor<4x8x2x4xf32>, tensor<4x8xi64>
  %s = nn.reduce sum %a dims = [0, 1, 2, 3] : tensor<4x8x2x4xf32>
  return %s : tensor<f32>
}

// -----

// Keys from a per-sample tensor (a cache): not a function of the prefix.
func.func @foreign_keys(%tokens: tensor<4x8xi64> {nn.data}, %cache: tensor<4x8x2x4xf32> {nn.data},
    %wte: tensor<16x8xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x8xf32>, tensor<4x8xi64>
  %h = nn.reshape %x : tensor<4x8x8xf32> to tensor<4x8x2x4xf32>
  // expected-error @+1 {{attends between token-derived and per-sample tensors}}
  %a = nn.attention %h, %cache, %cache mask = causal : tensor<4x8x2x4xf32>, tensor<4x8x2x4xf32>, tensor<4x8x2x4xf32>
  %s = nn.reduce sum %a dims = [0, 1, 2, 3] : tensor<4x8x2x4xf32>
  return %s : tensor<f32>
}

// -----

// Two token arguments: which one is the batch's?
// expected-error @+1 {{prefix deduplication needs exactly one token argument (an nn.data [batch, seq] integer tensor read as nn.embedding ids), found 2}}
func.func @two_token_arguments(%a: tensor<4x8xi64> {nn.data}, %b: tensor<4x8xi64> {nn.data},
    %wte: tensor<16x8xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %a : tensor<16x8xf32>, tensor<4x8xi64>
  %y = nn.embedding %wte, %b : tensor<16x8xf32>, tensor<4x8xi64>
  %z = nn.add %x, %y : tensor<4x8x8xf32>, tensor<4x8x8xf32>
  %s = nn.reduce sum %z dims = [0, 1, 2] : tensor<4x8x8xf32>
  return %s : tensor<f32>
}

// -----

// expected-error @+1 {{argument #1 is named 'trie_positions'; prefix deduplication adds the arguments named trie_*}}
func.func @name_taken(%tokens: tensor<4x8xi64> {nn.data}, %p: tensor<4x8xf32> {nn.data, nn.name = "trie_positions"},
    %wte: tensor<16x8xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x8xf32>, tensor<4x8xi64>
  %s = nn.reduce sum %x dims = [0, 1, 2] : tensor<4x8x8xf32>
  return %s : tensor<f32>
}

// -----

// An unweighted loss counts the padding positions, which have no trie node.
func.func @unweighted(%tokens: tensor<4x8xi64> {nn.data}, %targets: tensor<4x8xi64> {nn.data},
    %wte: tensor<16x16xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x16xf32>, tensor<4x8xi64>
  // expected-error @+1 {{has no weights; prefix deduplication keeps the loss at every real token}}
  %l = nn.cross_entropy %x, %targets {normalizer = 32.0 : f64} : tensor<4x8x16xf32>, tensor<4x8xi64>
  return %l : tensor<f32>
}

// -----

// A bin never holds more nodes than its samples' tokens.
// expected-error @+1 {{capacity = 16 exceeds the 8 tokens of a bin (batch / bins * seq)}}
func.func @small(%tokens: tensor<2x4xi64> {nn.data}, %wte: tensor<16x8xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x8xf32>, tensor<2x4xi64>
  %s = nn.reduce sum %x dims = [0, 1, 2] : tensor<2x4x8xf32>
  return %s : tensor<f32>
}

// -----

// Its callers would pass the old arguments.
// expected-error @+1 {{is called; prefix deduplication changes its arguments: inline the calls first}}
func.func @callee(%tokens: tensor<4x8xi64> {nn.data}, %wte: tensor<16x8xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x8xf32>, tensor<4x8xi64>
  %s = nn.reduce sum %x dims = [0, 1, 2] : tensor<4x8x8xf32>
  return %s : tensor<f32>
}
func.func @caller(%t: tensor<4x8xi64>, %w: tensor<16x8xf32>) -> tensor<f32> {
  %s = func.call @callee(%t, %w) : (tensor<4x8xi64>, tensor<16x8xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
