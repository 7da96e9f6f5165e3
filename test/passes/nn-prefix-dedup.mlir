// RUN: loom-opt %s --nn-name-arguments-from-source --nn-prefix-dedup="capacity=16 bins=2" | FileCheck %s
// RUN: loom-opt %s --nn-name-arguments-from-source --nn-prefix-dedup="capacity=16 bins=2" --nn-autodiff | FileCheck %s --check-prefix=GRAD

// A step over a padded batch [4, 8] becomes a step over two bins of 16
// packed trie nodes: token-wise ops on [2, 16, ...], causal attention under
// the tree mask, rope at the nodes' original positions, and the weighted
// cross-entropy as a log-softmax per node gathered per (sample, token),
// with the batch's weights and normaliser. The padded tokens and the
// labels go; the new arguments come last.

// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[W:arg0]]: tensor<4x8xf32> {nn.data, nn.name = "weights"}, %[[WTE:arg1]]: tensor<16x8xf32> {nn.name = "wte", nn.param},
// CHECK-SAME: %[[WQ:arg2]]: tensor<8x8xf32> {nn.name = "wq", nn.param}, %[[WHEAD:arg3]]: tensor<8x16xf32> {nn.name = "whead", nn.param},
// CHECK-SAME: %[[TOK:arg4]]: tensor<2x16xi64> {nn.data, nn.name = "trie_tokens"}, %[[POS:arg5]]: tensor<2x16xi64> {nn.data, nn.name = "trie_positions"},
// CHECK-SAME: %[[END:arg6]]: tensor<2x16xi64> {nn.data, nn.name = "trie_subtree_end"}, %[[IDX:arg7]]: tensor<4x8xi64> {nn.data, nn.name = "trie_index_targets"}) -> tensor<f32>
// CHECK-SAME: attributes {nn.prefix_dedup = {batch = 4 : i64, bins = 2 : i64, capacity = 16 : i64, seq = 8 : i64, vocab = 16 : i64}}
// CHECK-NOT: nn.iota
// CHECK: %[[X:.*]] = nn.embedding %[[WTE]], %[[TOK]] : tensor<16x8xf32>, tensor<2x16xi64>
// CHECK: %[[Q:.*]] = nn.matmul %[[X]], %[[WQ]] : tensor<2x16x8xf32>
// CHECK: %[[QH:.*]] = nn.reshape %[[Q]] : tensor<2x16x8xf32> to tensor<2x16x2x4xf32>
// CHECK: %[[QR:.*]] = nn.rope %[[QH]], %[[POS]] : tensor<2x16x2x4xf32>, tensor<2x16xi64>
// CHECK: nn.attention %[[QR]], %[[QR]], %[[QH]] mask = tree subtree_end %[[END]] : {{.*}}, tensor<2x16xi64>
// CHECK: %[[LOGITS:.*]] = nn.matmul %{{.*}}, %[[WHEAD]] : tensor<2x16x8xf32>, tensor<8x16xf32>
// CHECK: %[[LSM:.*]] = nn.log_softmax %[[LOGITS]] dim = 2 : tensor<2x16x16xf32>
// CHECK: %[[FLAT:.*]] = nn.reshape %[[LSM]] : tensor<2x16x16xf32> to tensor<2x256xf32>
// CHECK: %[[ROWS:.*]] = nn.reshape %[[IDX]] : tensor<4x8xi64> to tensor<2x16xi64>
// CHECK: %[[LP:.*]] = nn.gather %[[FLAT]], %[[ROWS]] dim = 1 : tensor<2x256xf32>, tensor<2x16xi64>
// CHECK: %[[LP2:.*]] = nn.reshape %[[LP]] : tensor<2x16xf32> to tensor<4x8xf32>
// CHECK: %[[NLL:.*]] = nn.neg %[[LP2]]
// CHECK: nn.mul %[[NLL]], %[[W]]
// CHECK: nn.select
// CHECK: %[[SUM:.*]] = nn.reduce sum %{{.*}} dims = [0, 1] : tensor<4x8xf32>
// CHECK: %[[N:.*]] = nn.fill 3.200000e+01 : tensor<f32>
// CHECK: %[[LOSS:.*]] = nn.div %[[SUM]], %[[N]]
// CHECK: return %[[LOSS]]

// The gradient follows the rewritten step: one backward per node.
// GRAD-LABEL: func.func @step_grad(
// GRAD: nn.gather_grad {{.*}} dim = 1 : tensor<2x16xf32>, tensor<2x16xi64> to tensor<2x256xf32>
// GRAD: nn.attention_grad {{.*}} mask = tree subtree_end
func.func @step(%tokens: tensor<4x8xi64> {nn.data}, %targets: tensor<4x8xi64> {nn.data},
    %weights: tensor<4x8xf32> {nn.data},
    %wte: tensor<16x8xf32> {nn.param}, %wq: tensor<8x8xf32> {nn.param},
    %whead: tensor<8x16xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x8xf32>, tensor<4x8xi64>
  %pos = nn.iota dim = 1 : tensor<4x8xi64>
  %q = nn.matmul %x, %wq : tensor<4x8x8xf32>, tensor<8x8xf32>
  %qh = nn.reshape %q : tensor<4x8x8xf32> to tensor<4x8x2x4xf32>
  %qr = nn.rope %qh, %pos : tensor<4x8x2x4xf32>, tensor<4x8xi64>
  %a = nn.attention %qr, %qr, %qh mask = causal : tensor<4x8x2x4xf32>, tensor<4x8x2x4xf32>, tensor<4x8x2x4xf32>
  %a2 = nn.reshape %a : tensor<4x8x2x4xf32> to tensor<4x8x8xf32>
  %logits = nn.matmul %a2, %whead : tensor<4x8x8xf32>, tensor<8x16xf32>
  %loss = nn.cross_entropy %logits, %targets weights %weights {normalizer = 32.0 : f64} : tensor<4x8x16xf32>, tensor<4x8xi64>, tensor<4x8xf32>
  return %loss : tensor<f32>
}

// Per-token log-probabilities (the forward pass RL frameworks run for the
// old and reference policies): a take-along gather over the classes, its
// indices a reshape of a data argument, becomes the same per-node gather;
// the result keeps the per-sample shape.
// (The labels, read only through their index now, go with their reshape.)
// CHECK-LABEL: func.func @logprobs(
// CHECK-SAME: %arg0: tensor<16x16xf32> {nn.name = "wte", nn.param}, %arg1: tensor<2x16xi64> {nn.data, nn.name = "trie_tokens"},
// CHECK-SAME: %arg2: tensor<2x16xi64> {nn.data, nn.name = "trie_positions"}, %arg3: tensor<2x16xi64> {nn.data, nn.name = "trie_subtree_end"},
// CHECK-SAME: %arg4: tensor<4x8xi64> {nn.data, nn.name = "trie_index_labels"}) -> tensor<4x8x1xf32>
// CHECK-NOT: nn.reshape %arg
// CHECK: %[[LSM:.*]] = nn.log_softmax %{{.*}} dim = 2 : tensor<2x16x16xf32>
// CHECK: %[[FLAT:.*]] = nn.reshape %[[LSM]] : tensor<2x16x16xf32> to tensor<2x256xf32>
// CHECK: %[[LP:.*]] = nn.gather %[[FLAT]], %{{.*}} dim = 1 : tensor<2x256xf32>, tensor<2x16xi64>
// CHECK: %[[OUT:.*]] = nn.reshape %[[LP]] : tensor<2x16xf32> to tensor<4x8x1xf32>
// CHECK: return %[[OUT]] : tensor<4x8x1xf32>
func.func @logprobs(%tokens: tensor<4x8xi64> {nn.data}, %labels: tensor<4x8xi64> {nn.data},
    %wte: tensor<16x16xf32> {nn.param}) -> tensor<4x8x1xf32> {
  %x = nn.embedding %wte, %tokens : tensor<16x16xf32>, tensor<4x8xi64>
  %lsm = nn.log_softmax %x dim = 2 : tensor<4x8x16xf32>
  %l = nn.reshape %labels : tensor<4x8xi64> to tensor<4x8x1xi64>
  %lp = nn.gather %lsm, %l dim = 2 : tensor<4x8x16xf32>, tensor<4x8x1xi64>
  return %lp : tensor<4x8x1xf32>
}

// An op that mixes tokens (a sum over the batch and sequence) reads the
// per-sample form, gathered from the nodes by trie_nodes: exact, not
// deduplicated. A fill with the token dimensions gets a node form.
// CHECK-LABEL: func.func @mixing(
// CHECK-SAME: %[[NODES:[a-z0-9]+]]: tensor<4x8xi64> {nn.data, nn.name = "trie_nodes"})
// CHECK: %[[ONE:.*]] = nn.fill 1.000000e+00 : tensor<2x16x8xf32>
// CHECK: %[[G:.*]] = nn.add %{{.*}}, %[[ONE]] : tensor<2x16x8xf32>, tensor<2x16x8xf32>
// CHECK: %[[COL:.*]] = nn.reshape %[[NODES]] : tensor<4x8xi64> to tensor<2x16x1xi64>
// CHECK: %[[IDX:.*]] = nn.broadcast %[[COL]] : tensor<2x16x1xi64> to tensor<2x16x8xi64>
// CHECK: %[[PER:.*]] = nn.gather %[[G]], %[[IDX]] dim = 1 : tensor<2x16x8xf32>, tensor<2x16x8xi64>
// CHECK: %[[S:.*]] = nn.reshape %[[PER]] : tensor<2x16x8xf32> to tensor<4x8x8xf32>
// CHECK: nn.reduce sum %[[S]] dims = [0, 1, 2] : tensor<4x8x8xf32>
func.func @mixing(%tokens: tensor<4x8xi64> {nn.data}, %wte: tensor<16x8xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x8xf32>, tensor<4x8xi64>
  %one = nn.fill 1.0 : tensor<4x8x8xf32>
  %g = nn.add %x, %one : tensor<4x8x8xf32>, tensor<4x8x8xf32>
  %s = nn.reduce sum %g dims = [0, 1, 2] : tensor<4x8x8xf32>
  return %s : tensor<f32>
}

// Learned position embeddings read the nodes' positions; an iota in
// another type is cast from them.
// CHECK-LABEL: func.func @positions(
// CHECK-SAME: %[[POS:[a-z0-9]+]]: tensor<2x16xi64> {nn.data, nn.name = "trie_positions"}
// CHECK: %[[P32:.*]] = nn.cast %[[POS]] : tensor<2x16xi64> to tensor<2x16xi32>
// CHECK: nn.embedding %{{.*}}, %[[P32]] : tensor<8x8xf32>, tensor<2x16xi32>
func.func @positions(%tokens: tensor<4x8xi64> {nn.data}, %wte: tensor<16x8xf32> {nn.param},
    %wpe: tensor<8x8xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x8xf32>, tensor<4x8xi64>
  %p = nn.iota dim = 1 : tensor<4x8xi32>
  %e = nn.embedding %wpe, %p : tensor<8x8xf32>, tensor<4x8xi32>
  %y = nn.add %x, %e : tensor<4x8x8xf32>, tensor<4x8x8xf32>
  %s = nn.reduce sum %y dims = [0, 1, 2] : tensor<4x8x8xf32>
  return %s : tensor<f32>
}

// A slice of the features (a fused QKV projection) takes the token
// dimensions whole: on the nodes too.
// CHECK-LABEL: func.func @fused(
// CHECK: %[[QKV:.*]] = nn.matmul %{{.*}}, %{{.*}} : tensor<2x16x8xf32>, tensor<8x24xf32>
// CHECK: nn.slice %[[QKV]] offsets = [0, 0, 8] sizes = [2, 16, 8] strides = [1, 1, 1] : tensor<2x16x24xf32>
func.func @fused(%tokens: tensor<4x8xi64> {nn.data}, %wte: tensor<16x8xf32> {nn.param}, %wqkv: tensor<8x24xf32> {nn.param}) -> tensor<f32> {
  %x = nn.embedding %wte, %tokens : tensor<16x8xf32>, tensor<4x8xi64>
  %qkv = nn.matmul %x, %wqkv : tensor<4x8x8xf32>, tensor<8x24xf32>
  %k = nn.slice %qkv offsets = [0, 0, 8] sizes = [4, 8, 8] strides = [1, 1, 1] : tensor<4x8x24xf32>
  %s = nn.reduce sum %k dims = [0, 1, 2] : tensor<4x8x8xf32>
  return %s : tensor<f32>
}

// A function without a token argument is left alone.
// CHECK-LABEL: func.func @reward(%arg0: tensor<4x8xf32> {nn.data, nn.name = "r"}) -> tensor<f32> {
// CHECK-NEXT: nn.reduce sum %arg0
func.func @reward(%r: tensor<4x8xf32> {nn.data}) -> tensor<f32> {
  %s = nn.reduce sum %r dims = [0, 1] : tensor<4x8xf32>
  return %s : tensor<f32>
}
