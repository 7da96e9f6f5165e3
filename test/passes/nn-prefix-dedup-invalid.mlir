// RUN: loom-opt %s --split-input-file --nn-prefix-dedup="capacity=16" -verify-diagnostics -o /dev/null
// RUN: not loom-opt %s --split-input-file --nn-prefix-dedup="capacity=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CAPACITY
// RUN: not loom-opt %s --split-input-file --nn-prefix-dedup="capacity=16 func=nothing" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FUNC

// CAPACITY: error: nn-prefix-dedup needs capacity > 0 and bins > 0 (got capacity = 0, bins = 1)
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

// expected-error @+1 {{argument name 'trie_positions' is taken; prefix deduplication adds an argument of that name}}
func.func @name_taken(%tokens: tensor<4x8xi64> {nn.data}, %p: tensor<4x8xf32> {nn.data, nn.name = "trie_positions"},
    %wte: tensor<16x8xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x8xf32>, tensor<4x8xi64>
  %s = nn.reduce sum %x dims = [0, 1, 2] : tensor<4x8x8xf32>
  return %s : tensor<f32>
}
