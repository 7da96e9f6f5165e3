// RUN: loom-opt %s -split-input-file --nn-print-factor-rules --verify-diagnostics -o /dev/null

// Rope: head_dim is replicated (features rotate in pairs i, i + d/2); the
// positions share the batch and sequence factors.
func.func @rope(%q: tensor<8x16x4x8xf32>, %pos: tensor<8x16xi64>,
                %r: tensor<2x3x16x4x8xf32>, %pos2: tensor<2x3x16xi32>,
                %s: tensor<16x4x8xf32>, %pos3: tensor<16xi64>) {
  // expected-remark @below {{factor rule: ([i, j, k, l], [i, j]) -> ([i, j, k, l]) {i = 8, j = 16, k = 4, l = 8 replicated}}}
  %0 = nn.rope %q, %pos : tensor<8x16x4x8xf32>, tensor<8x16xi64>
  // expected-remark @below {{factor rule: ([i, j, k, l, m], [i, j, k]) -> ([i, j, k, l, m]) {i = 2, j = 3, k = 16, l = 4, m = 8 replicated}}}
  %1 = nn.rope %r, %pos2 inverse : tensor<2x3x16x4x8xf32>, tensor<2x3x16xi32>
  // expected-remark @below {{factor rule: ([i, j, k], [i]) -> ([i, j, k]) {i = 16, j = 4, k = 8 replicated}}}
  %2 = nn.rope %s, %pos3 : tensor<16x4x8xf32>, tensor<16xi64>
  return
}

// -----

// Embedding: the vocabulary is a reduction(sum) factor (vocab-parallel
// lookup, partial results), width and the ids' dimensions parallel.
func.func @embedding(%table: tensor<64x32xf32>, %ids: tensor<8x16xi64>,
                     %id: tensor<i32>) {
  // expected-remark @below {{factor rule: ([i, j], [k, l]) -> ([k, l, j]) {i = 64 reduction(sum), j = 32, k = 8, l = 16}}}
  %0 = nn.embedding %table, %ids : tensor<64x32xf32>, tensor<8x16xi64>
  // expected-remark @below {{factor rule: ([i, j], []) -> ([j]) {i = 64 reduction(sum), j = 32}}}
  %1 = nn.embedding %table, %id : tensor<64x32xf32>, tensor<i32>
  return
}

// -----

// Multi-head attention: batch, query sequence, heads and value width
// parallel; key sequence and head_dim replicated.
func.func @attention(%q: tensor<8x16x4x8xf32>, %k: tensor<8x16x4x8xf32>,
                     %v: tensor<8x16x4x8xf32>) {
  // expected-remark @below {{factor rule: ([i, j, k, l], [i, m, k, l], [i, m, k, n]) -> ([i, j, k, n]) {i = 8, j = 16, k = 4, l = 8 replicated, m = 16 replicated, n = 8}}}
  %0 = nn.attention %q, %k, %v mask = causal : tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>
  return
}

// -----

// Grouped-query attention: the query heads are kv-groups (major) times the
// GQA ratio (minor); keys and values have the groups only. The value has
// its own head width.
func.func @gqa(%q: tensor<2x16x8x4xf32>, %k: tensor<2x16x2x4xf32>,
               %v: tensor<2x16x2x6xf32>) {
  // expected-remark @below {{factor rule: ([i, j, k*l, m], [i, n, k, m], [i, n, k, o]) -> ([i, j, k*l, o]) {i = 2, j = 16, k = 2, l = 4, m = 4 replicated, n = 16 replicated, o = 6}}}
  %0 = nn.attention %q, %k, %v mask = none : tensor<2x16x8x4xf32>, tensor<2x16x2x4xf32>, tensor<2x16x2x6xf32>
  return
}

// -----

// Dynamic heads: the GQA ratio is unknown, so it is a factor of size `?`;
// sizes known in any operand are used.
func.func @gqa_dynamic(%q: tensor<?x16x8x4xf32>, %k: tensor<2x?x?x4xf32>,
                       %v: tensor<2x16x?x4xf32>) {
  // expected-remark @below {{factor rule: ([i, j, k*l, m], [i, n, k, m], [i, n, k, o]) -> ([i, j, k*l, o]) {i = 2, j = 16, k = ?, l = ?, m = 4 replicated, n = 16 replicated, o = 4}}}
  %0 = nn.attention %q, %k, %v mask = none : tensor<?x16x8x4xf32>, tensor<2x?x?x4xf32>, tensor<2x16x?x4xf32>
  return
}

// -----

// Tree attention and positions: subtree_end indexes keys, positions index
// queries (a chunk of 4 queries against 32 keys).
func.func @tree(%q: tensor<1x32x4x8xf32>, %k: tensor<1x32x4x8xf32>,
                %v: tensor<1x32x4x8xf32>, %ends: tensor<1x32xi32>,
                %qc: tensor<1x4x4x8xf32>, %pos: tensor<1x4xi64>) {
  // expected-remark @below {{factor rule: ([i, j, k, l], [i, m, k, l], [i, m, k, n], [i, m]) -> ([i, j, k, n]) {i = 1, j = 32, k = 4, l = 8 replicated, m = 32 replicated, n = 8}}}
  %0 = nn.attention %q, %k, %v mask = tree subtree_end %ends : tensor<1x32x4x8xf32>, tensor<1x32x4x8xf32>, tensor<1x32x4x8xf32>, tensor<1x32xi32>
  // expected-remark @below {{factor rule: ([i, j, k, l], [i, m, k, l], [i, m, k, n], [i, j]) -> ([i, j, k, n]) {i = 1, j = 4, k = 4, l = 8 replicated, m = 32 replicated, n = 8}}}
  %1 = nn.attention %qc, %k, %v mask = causal positions %pos : tensor<1x4x4x8xf32>, tensor<1x32x4x8xf32>, tensor<1x32x4x8xf32>, tensor<1x4xi64>
  // expected-remark @below {{factor rule: ([i, j, k, l], [i, m, k, l], [i, m, k, n], [i, m], [i, j]) -> ([i, j, k, n]) {i = 1, j = 4, k = 4, l = 8 replicated, m = 32 replicated, n = 8}}}
  %2 = nn.attention %qc, %k, %v mask = tree subtree_end %ends positions %pos : tensor<1x4x4x8xf32>, tensor<1x32x4x8xf32>, tensor<1x32x4x8xf32>, tensor<1x32xi32>, tensor<1x4xi64>
  return
}

// -----

// Attention gradient: batch and kv-groups parallel; the query sequence and
// the GQA ratio are dimensions of dquery summed over in dkey and dvalue, the
// value width one of dvalue contracted into dquery and dkey: reductions, so
// a split query sequence (context parallelism) leaves dquery split and dkey,
// dvalue partial sums. Linear in the incoming gradient.
func.func @attention_grad(%dy: tensor<8x16x4x8xf32>, %q: tensor<8x16x4x8xf32>,
                          %k: tensor<8x16x4x8xf32>, %v: tensor<8x16x4x8xf32>,
                          %dy2: tensor<2x16x8x4xf32>, %q2: tensor<2x16x8x4xf32>,
                          %k2: tensor<2x16x2x4xf32>, %v2: tensor<2x16x2x4xf32>,
                          %ends: tensor<2x16xi64>) {
  // expected-remark @below {{factor rule: ([i, j, k, n], [i, j, k, l], [i, m, k, l], [i, m, k, n]) -> ([i, j, k, l], [i, m, k, l], [i, m, k, n]) {i = 8, j = 16 reduction(sum), k = 4, l = 8 replicated, m = 16 replicated, n = 8 reduction(sum)} linear [0]}}
  %0:3 = nn.attention_grad %dy, %q, %k, %v mask = causal : tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>
  // expected-remark @below {{factor rule: ([i, j, k*l, o], [i, j, k*l, m], [i, n, k, m], [i, n, k, o], [i, n]) -> ([i, j, k*l, m], [i, n, k, m], [i, n, k, o]) {i = 2, j = 16 reduction(sum), k = 2, l = 4 reduction(sum), m = 4 replicated, n = 16 replicated, o = 4 reduction(sum)} linear [0]}}
  %1:3 = nn.attention_grad %dy2, %q2, %k2, %v2 mask = tree subtree_end %ends : tensor<2x16x8x4xf32>, tensor<2x16x8x4xf32>, tensor<2x16x2x4xf32>, tensor<2x16x2x4xf32>, tensor<2x16xi64>
  return
}

// -----

// Cross-entropy: a weighted sum over tokens with a fixed normaliser, so the
// token dimensions are reduction(sum) factors of the 0-d loss; the classes
// are replicated.
func.func @cross_entropy(%logits: tensor<8x16x64xf32>, %labels: tensor<8x16xi64>,
                         %w: tensor<8x16xf32>, %n: tensor<f32>,
                         %row: tensor<64xf32>, %label: tensor<i64>) {
  // expected-remark @below {{factor rule: ([i, j, k], [i, j], [i, j]) -> ([]) {i = 8 reduction(sum), j = 16 reduction(sum), k = 64 replicated}}}
  %0 = nn.cross_entropy %logits, %labels weights %w {normalizer = 1.28e+02 : f64} : tensor<8x16x64xf32>, tensor<8x16xi64>, tensor<8x16xf32>
  // expected-remark @below {{factor rule: ([i, j, k], [i, j], []) -> ([]) {i = 8 reduction(sum), j = 16 reduction(sum), k = 64 replicated}}}
  %1 = nn.cross_entropy %logits, %labels normalizer %n : tensor<8x16x64xf32>, tensor<8x16xi64>, tensor<f32>
  // expected-remark @below {{factor rule: ([i, j, k], [i, j], [i, j], []) -> ([]) {i = 8 reduction(sum), j = 16 reduction(sum), k = 64 replicated}}}
  %2 = nn.cross_entropy %logits, %labels weights %w normalizer %n : tensor<8x16x64xf32>, tensor<8x16xi64>, tensor<8x16xf32>, tensor<f32>
  // expected-remark @below {{factor rule: ([i], []) -> ([]) {i = 64 replicated}}}
  %3 = nn.cross_entropy %row, %label {normalizer = 1.0 : f64} : tensor<64xf32>, tensor<i64>
  return
}

// -----

// Cross-entropy gradient: tokens parallel, classes replicated; the 0-d
// incoming gradient and normaliser map to no dimension.
func.func @cross_entropy_grad(%dl: tensor<f32>, %logits: tensor<8x16x64xf32>,
                              %labels: tensor<8x16xi64>, %w: tensor<8x16xf32>,
                              %n: tensor<f32>) {
  // expected-remark @below {{factor rule: ([], [i, j, k], [i, j], [i, j]) -> ([i, j, k]) {i = 8, j = 16, k = 64 replicated}}}
  %0 = nn.cross_entropy_grad %dl, %logits, %labels weights %w {normalizer = 1.28e+02 : f64} : tensor<f32>, tensor<8x16x64xf32>, tensor<8x16xi64>, tensor<8x16xf32>
  // expected-remark @below {{factor rule: ([], [i, j, k], [i, j], []) -> ([i, j, k]) {i = 8, j = 16, k = 64 replicated}}}
  %1 = nn.cross_entropy_grad %dl, %logits, %labels normalizer %n : tensor<f32>, tensor<8x16x64xf32>, tensor<8x16xi64>, tensor<f32>
  return
}
