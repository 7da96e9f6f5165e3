// RUN: loom-opt %s -split-input-file -verify-diagnostics

// matmul: the contracting dimensions differ.
func.func @matmul_contracting(%a: tensor<4x6xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.matmul' op operand #1 dimension 0 of size 4 does not match dimension 1 of size 6 of operand #0 (the contracting dimensions)}}
  %0 = nn.matmul %a, %b : tensor<4x6xf32>, tensor<4x8xf32>
  return
}

// -----

// matmul: transpose_rhs moves the contracting dimension of rhs to its last.
func.func @matmul_transpose_rhs(%a: tensor<4x6xf32>, %b: tensor<6x8xf32>) {
  // expected-error @+1 {{operand #1 dimension 1 of size 8 does not match dimension 1 of size 6 of operand #0}}
  %0 = nn.matmul %a, %b transpose_rhs : tensor<4x6xf32>, tensor<6x8xf32>
  return
}

// -----

// matmul: a vector is not a matrix.
func.func @matmul_rank(%a: tensor<6xf32>, %b: tensor<6x8xf32>) {
  // expected-error @+1 {{operand #0 must have rank at least 2 (a matrix or a batch of matrices), got rank 1}}
  %0 = nn.matmul %a, %b : tensor<6xf32>, tensor<6x8xf32>
  return
}

// -----

// matmul: batch dimensions broadcast with numpy rules.
func.func @matmul_batch(%a: tensor<3x4x6xf32>, %b: tensor<2x6x8xf32>) {
  // expected-error @+1 {{operand #1 dimension 0 of size 2 is not broadcast-compatible with dimension 0 of size 3 of operand #0 (sizes must be equal or 1)}}
  %0 = nn.matmul %a, %b : tensor<3x4x6xf32>, tensor<2x6x8xf32>
  return
}

// -----

// add: trailing dimensions 8 and 6 do not broadcast.
func.func @add_broadcast(%a: tensor<4x8xf32>, %b: tensor<6xf32>) {
  // expected-error @+1 {{'nn.add' op operand #1 dimension 0 of size 6 is not broadcast-compatible with dimension 1 of size 8 of operand #0 (sizes must be equal or 1)}}
  %0 = nn.add %a, %b : tensor<4x8xf32>, tensor<6xf32>
  return
}

// -----

// add: operands of different element types need an explicit cast.
func.func @add_mixed_types(%a: tensor<4xf32>, %b: tensor<4xf64>) {
  // expected-error @+1 {{operand #1 element type 'f64' does not match operand #0 element type 'f32'}}
  %0 = nn.add %a, %b : tensor<4xf32>, tensor<4xf64>
  return
}

// -----

// The broadcast check also runs on the generic form, where the result type is given.
func.func @sub_generic(%a: tensor<4x8xf32>, %b: tensor<3x8xf32>) {
  // expected-error @+1 {{'nn.sub' op operand #1 dimension 0 of size 3 is not broadcast-compatible with dimension 0 of size 4 of operand #0}}
  %0 = "nn.sub"(%a, %b) : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// A result type that differs from the inferred one is rejected.
func.func @mul_wrong_result(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'nn.mul' op result #0 has type 'tensor<8xf32>' but the operands imply 'tensor<4x8xf32>'}}
  %0 = "nn.mul"(%a, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

// Float-only ops reject integer tensors.
func.func @exp_integer(%a: tensor<4xi32>) {
  // expected-error @+1 {{'nn.exp' op operand #0 must be float tensor (f32, f64 or bf16), but got 'tensor<4xi32>'}}
  %0 = nn.exp %a : tensor<4xi32>
  return
}

// -----

// compare: both sides must have one element type.
func.func @compare_mixed(%a: tensor<4xf32>, %b: tensor<4xi64>) {
  // expected-error @+1 {{operand #1 element type 'i64' does not match operand #0 element type 'f32'}}
  %0 = nn.compare lt, %a, %b : tensor<4xf32>, tensor<4xi64>
  return
}

// -----

// select: the condition is an i1 tensor.
func.func @select_condition(%c: tensor<4xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.select' op operand #0 must be i1 tensor, but got 'tensor<4xf32>'}}
  %0 = nn.select %c, %a, %a : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// clamp: the interval must not be empty.
func.func @clamp_bounds(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.clamp' op min = 2 is greater than max = 1}}
  %0 = nn.clamp %a {min = 2.0 : f64, max = 1.0 : f64} : tensor<4xf32>
  return
}

// -----

// cast: only the element type changes.
func.func @cast_shape(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.cast' op result shape [4, 9] does not match operand shape [4, 8]; a cast only changes the element type}}
  %0 = nn.cast %a : tensor<4x8xf32> to tensor<4x9xbf16>
  return
}

// -----

// reduce: dims must name dimensions of the operand.
func.func @reduce_out_of_range(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.reduce' op dims entry 2 is out of range [0, 2) for an operand of rank 2}}
  %0 = nn.reduce sum %a dims = [2] : tensor<4x8xf32>
  return
}

// -----

// reduce: dims are distinct.
func.func @reduce_repeated(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.reduce' op dims [1, 1] name dimension 1 more than once}}
  %0 = nn.reduce max %a dims = [1, 1] : tensor<4x8xf32>
  return
}

// -----

// reduce: an empty dims list is rejected.
func.func @reduce_empty(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.reduce' op dims must name at least one dimension}}
  %0 = nn.reduce mean %a dims = [] : tensor<4x8xf32>
  return
}

// -----

// broadcast: a dimension of size 3 cannot become 8.
func.func @broadcast_incompatible(%a: tensor<3xf32>) {
  // expected-error @+1 {{'nn.broadcast' op operand dimension 0 of size 3 cannot be broadcast to result dimension 1 of size 8 (it must be 1 or equal)}}
  %0 = nn.broadcast %a : tensor<3xf32> to tensor<4x8xf32>
  return
}

// -----

// broadcast: explicit broadcast_dims cannot transpose.
func.func @broadcast_dims_order(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.broadcast' op broadcast_dims [2, 1] must be strictly increasing}}
  %0 = nn.broadcast %a broadcast_dims = [2, 1] : tensor<4x8xf32> to tensor<2x8x4xf32>
  return
}

// -----

// reshape: the element count is preserved.
func.func @reshape_count(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.reshape' op operand shape [4, 8] holds 32 elements but result shape [5, 6] holds 30; reshape preserves the element count}}
  %0 = nn.reshape %a : tensor<4x8xf32> to tensor<5x6xf32>
  return
}

// -----

// transpose: a repeated entry is not a permutation.
func.func @transpose_repeat(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.transpose' op permutation [0, 0] is not a permutation of [0, 2): dimension 0 appears more than once}}
  %0 = nn.transpose %a permutation = [0, 0] : tensor<4x8xf32>
  return
}

// -----

// transpose: one entry per dimension.
func.func @transpose_length(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.transpose' op permutation [1, 0, 2] has 3 entries but the operand has rank 2}}
  %0 = nn.transpose %a permutation = [1, 0, 2] : tensor<4x8xf32>
  return
}

// -----

// slice: reading past the end of a dimension.
func.func @slice_bounds(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.slice' op slice of dimension 1 (offset 2, size 4, stride 2) reads index 8 but the dimension has size 8}}
  %0 = nn.slice %a offsets = [0, 2] sizes = [4, 4] strides = [1, 2] : tensor<4x8xf32>
  return
}

// -----

// slice: strides are positive.
func.func @slice_stride(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.slice' op stride 0 of dimension 0 must be positive}}
  %0 = nn.slice %a offsets = [0, 0] sizes = [1, 1] strides = [0, 1] : tensor<4x8xf32>
  return
}

// -----

// concat: dimensions other than the concatenated one must match.
func.func @concat_mismatch(%a: tensor<4x3xf32>, %b: tensor<5x3xf32>) {
  // expected-error @+1 {{'nn.concat' op operand #1 dimension 0 of size 5 does not match dimension 0 of size 4 of operand #0 (only the concatenated dimension 1 may differ)}}
  %0 = nn.concat %a, %b dim = 1 : tensor<4x3xf32>, tensor<5x3xf32>
  return
}

// -----

// concat: dim names a dimension of the inputs.
func.func @concat_dim(%a: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.concat' op dim 2 is out of range [0, 2) for an operand of rank 2}}
  %0 = nn.concat %a, %a dim = 2 : tensor<4x3xf32>, tensor<4x3xf32>
  return
}

// -----

// gather: indices and input agree outside the gather dimension.
func.func @gather_shape(%a: tensor<16x64xf32>, %i: tensor<8x1xi64>) {
  // expected-error @+1 {{'nn.gather' op operand #1 dimension 0 of size 8 does not match dimension 0 of size 16 of operand #0 (only the gather dimension 1 may differ)}}
  %0 = nn.gather %a, %i dim = 1 : tensor<16x64xf32>, tensor<8x1xi64>
  return
}

// -----

// gather: indices are integers.
func.func @gather_float_indices(%a: tensor<16x64xf32>, %i: tensor<16x1xf32>) {
  // expected-error @+1 {{'nn.gather' op operand #1 must be integer tensor (i32 or i64), but got 'tensor<16x1xf32>'}}
  %0 = nn.gather %a, %i dim = 1 : tensor<16x64xf32>, tensor<16x1xf32>
  return
}

// -----

// iota: dim names a result dimension.
func.func @iota_dim() {
  // expected-error @+1 {{'nn.iota' op dim 2 is out of range [0, 2) for an operand of rank 2}}
  %0 = nn.iota dim = 2 : tensor<8x16xi64>
  return
}

// -----

// softmax: dim names an operand dimension.
func.func @softmax_dim(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.softmax' op dim -1 is out of range [0, 2) for an operand of rank 2}}
  %0 = nn.softmax %a dim = -1 : tensor<4x8xf32>
  return
}

// -----

// layer_norm: scale has the shape of the normalised trailing dimensions.
func.func @layer_norm_scale(%x: tensor<8x16x32xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op scale has shape [16] but the normalized trailing dimensions of the input is [32]}}
  %0 = nn.layer_norm %x scale %g : tensor<8x16x32xf32>, tensor<16xf32>
  return
}

// -----

// layer_norm: normalized_dims is between 1 and the rank.
func.func @layer_norm_dims(%x: tensor<8x32xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op normalized_dims 3 is out of range [1, 2] for an input of rank 2}}
  %0 = nn.layer_norm %x {normalized_dims = 3 : i64} : tensor<8x32xf32>
  return
}

// -----

// rms_norm: epsilon is positive.
func.func @rms_norm_epsilon(%x: tensor<8x32xf32>) {
  // expected-error @+1 {{'nn.rms_norm' op epsilon must be > 0, got 0}}
  %0 = nn.rms_norm %x {epsilon = 0.0 : f64} : tensor<8x32xf32>
  return
}

// -----

// rope: features rotate in pairs, so head_dim is even.
func.func @rope_odd(%x: tensor<2x16x4x7xf32>, %p: tensor<2x16xi64>) {
  // expected-error @+1 {{'nn.rope' op head_dim (dimension 3) of size 7 must be even to rotate feature pairs}}
  %0 = nn.rope %x, %p : tensor<2x16x4x7xf32>, tensor<2x16xi64>
  return
}

// -----

// rope: one position per token.
func.func @rope_positions(%x: tensor<2x16x4x8xf32>, %p: tensor<16xi64>) {
  // expected-error @+1 {{'nn.rope' op positions has shape [16] but the input shape without its last two dimensions ([batch..., seq]) is [2, 16]}}
  %0 = nn.rope %x, %p : tensor<2x16x4x8xf32>, tensor<16xi64>
  return
}

// -----

// dropout: rate 1 would drop everything and divide by zero.
func.func @dropout_rate(%x: tensor<8xf32>) {
  // expected-error @+1 {{'nn.dropout' op rate must be in [0, 1), got 1}}
  %0 = nn.dropout %x {rate = 1.0 : f64, seed = 0 : i64} : tensor<8xf32>
  return
}

// -----

// dropout of a block: starts without the global shape they index.
func.func @dropout_starts_alone(%x: tensor<8xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.dropout' op takes `starts` and `global_shape` together (the position of a block in a global tensor), got starts without global_shape}}
  %0 = nn.dropout %x at [%s] {rate = 0.5 : f64, seed = 0 : i64} : tensor<8xf32>
  return
}

// -----

// dropout of a block: one start per dimension.
func.func @dropout_starts_count(%x: tensor<8x4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.dropout' op needs one start and one global size per dimension of its rank-2 input, got 1 starts and a rank-2 global_shape}}
  %0 = nn.dropout %x at [%s] {global_shape = array<i64: 16, 4>, rate = 0.5 : f64, seed = 0 : i64} : tensor<8x4xf32>
  return
}

// -----

// dropout of a block: the global shape is static.
func.func @dropout_global_dynamic(%x: tensor<8x4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.dropout' op global_shape dimension 0 is not a static size}}
  %0 = nn.dropout %x at [%s, %s] {global_shape = array<i64: -9223372036854775808, 4>, rate = 0.5 : f64, seed = 0 : i64} : tensor<8x4xf32>
  return
}

// -----

// dropout of a block: the global tensor holds the block.
func.func @dropout_global_smaller(%x: tensor<8x4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.dropout' op global_shape dimension 1 is 2, smaller than the input's 4}}
  %0 = nn.dropout %x at [%s, %s] {global_shape = array<i64: 16, 2>, rate = 0.5 : f64, seed = 0 : i64} : tensor<8x4xf32>
  return
}

// -----

// embedding: the table is [vocab, row...].
func.func @embedding_table(%t: tensor<64xf32>, %ids: tensor<8xi64>) {
  // expected-error @+1 {{'nn.embedding' op operand #0 (table) must have rank 2 or more ([vocab, row...]), got rank 1}}
  %0 = nn.embedding %t, %ids : tensor<64xf32>, tensor<8xi64>
  return
}

// -----

// embedding: a table of higher rank gives whole rows, not its width.
func.func @embedding_rows(%t: tensor<4x16x12xf32>, %ids: tensor<6xi64>) {
  // expected-error @+1 {{'nn.embedding' op result #0 has type 'tensor<6x192xf32>' but the operands imply 'tensor<6x16x12xf32>'}}
  %0 = "nn.embedding"(%t, %ids) : (tensor<4x16x12xf32>, tensor<6xi64>) -> tensor<6x192xf32>
  return
}

// -----

// attention: a tree mask needs the subtree ends.
func.func @attention_tree_without_ends(%q: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{'nn.attention' op mask kind 'tree' requires a subtree_end operand}}
  %0 = nn.attention %q, %q, %q mask = tree : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
  return
}

// -----

// attention: subtree ends only make sense with a tree mask.
func.func @attention_ends_with_causal(%q: tensor<1x8x2x4xf32>, %e: tensor<1x8xi32>) {
  // expected-error @+1 {{'nn.attention' op subtree_end is only valid with mask kind 'tree', got 'causal'}}
  %0 = nn.attention %q, %q, %q mask = causal subtree_end %e : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8xi32>
  return
}

// -----

// attention: one subtree end per key token.
func.func @attention_ends_shape(%q: tensor<1x8x2x4xf32>, %e: tensor<8xi32>) {
  // expected-error @+1 {{'nn.attention' op subtree_end has shape [8] but [batch, key sequence length] is [1, 8]}}
  %0 = nn.attention %q, %q, %q mask = tree subtree_end %e : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<8xi32>
  return
}

// -----

// attention: queries and keys have the same head width.
func.func @attention_head_dim(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x6xf32>) {
  // expected-error @+1 {{'nn.attention' op key head_dim (dimension 3) of size 6 does not match query head_dim of size 4}}
  %0 = nn.attention %q, %k, %k mask = none : tensor<1x8x2x4xf32>, tensor<1x8x2x6xf32>, tensor<1x8x2x6xf32>
  return
}

// -----

// attention: each key/value head serves a whole group of query heads.
func.func @attention_heads(%q: tensor<1x8x4x4xf32>, %k: tensor<1x8x3x4xf32>) {
  // expected-error @+1 {{'nn.attention' op query heads 4 are not a multiple of the key/value heads 3}}
  %0 = nn.attention %q, %k, %k mask = none : tensor<1x8x4x4xf32>, tensor<1x8x3x4xf32>, tensor<1x8x3x4xf32>
  return
}

// -----

// attention: without positions a causal mask needs as many queries as keys.
func.func @attention_causal_lengths(%q: tensor<1x4x2x4xf32>, %k: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{'nn.attention' op mask kind 'causal' without positions needs equal query and key sequence lengths, got 4 and 8}}
  %0 = nn.attention %q, %k, %k mask = causal : tensor<1x4x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
  return
}

// -----

// attention: positions only place queries for a mask.
func.func @attention_positions_unmasked(%q: tensor<1x8x2x4xf32>, %p: tensor<1x8xi64>) {
  // expected-error @+1 {{'nn.attention' op positions need a causal or tree mask, got mask kind 'none'}}
  %0 = nn.attention %q, %q, %q mask = none positions %p : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8xi64>
  return
}

// -----

// attention: operands share one element type.
func.func @attention_mixed(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xbf16>) {
  // expected-error @+1 {{'nn.attention' op key element type 'bf16' does not match query element type 'f32'}}
  %0 = nn.attention %q, %k, %k mask = none : tensor<1x8x2x4xf32>, tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>
  return
}

// -----

// cross_entropy: one label per row of logits.
func.func @cross_entropy_labels(%l: tensor<8x16x64xf32>, %y: tensor<8x15xi64>) {
  // expected-error @+1 {{'nn.cross_entropy' op labels has shape [8, 15] but the logits shape without the vocabulary dimension is [8, 16]}}
  %0 = nn.cross_entropy %l, %y {normalizer = 1.0 : f64} : tensor<8x16x64xf32>, tensor<8x15xi64>
  return
}

// -----

// cross_entropy: the normaliser is an attribute or an operand, not both.
func.func @cross_entropy_two_normalizers(%l: tensor<8x64xf32>, %y: tensor<8xi64>, %n: tensor<f32>) {
  // expected-error @+1 {{'nn.cross_entropy' op takes the normalizer either as the 'normalizer' attribute or as an operand, not both}}
  %0 = nn.cross_entropy %l, %y normalizer %n {normalizer = 8.0 : f64} : tensor<8x64xf32>, tensor<8xi64>, tensor<f32>
  return
}

// -----

// cross_entropy: the normaliser is never implicit.
func.func @cross_entropy_no_normalizer(%l: tensor<8x64xf32>, %y: tensor<8xi64>) {
  // expected-error @+1 {{'nn.cross_entropy' op requires a normalizer: the 'normalizer' attribute or a normalizer operand}}
  %0 = nn.cross_entropy %l, %y : tensor<8x64xf32>, tensor<8xi64>
  return
}

// -----

// cross_entropy: weights have the logits' element type.
func.func @cross_entropy_weights(%l: tensor<8x64xf32>, %y: tensor<8xi64>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{'nn.cross_entropy' op weights element type 'bf16' does not match logits element type 'f32'}}
  %0 = nn.cross_entropy %l, %y weights %w {normalizer = 8.0 : f64} : tensor<8x64xf32>, tensor<8xi64>, tensor<8xbf16>
  return
}

// -----

// sgd_update: Nesterov momentum needs momentum.
func.func @sgd_nesterov(%p: tensor<4xf32>) {
  // expected-error @+1 {{'nn.sgd_update' op nesterov needs momentum > 0, got 0}}
  %0:2 = nn.sgd_update %p, %p, %p {lr = 0.1 : f64, nesterov} : tensor<4xf32>
  return
}

// -----

// sgd_update: the learning rate is not negative.
func.func @sgd_lr(%p: tensor<4xf32>) {
  // expected-error @+1 {{'nn.sgd_update' op lr must be >= 0, got -0.1}}
  %0:2 = nn.sgd_update %p, %p, %p {lr = -0.1 : f64} : tensor<4xf32>
  return
}

// -----

// sgd_update: a learning-rate schedule needs the step.
func.func @sgd_schedule_step(%p: tensor<4xf32>) {
  // expected-error @+1 {{'nn.sgd_update' op a learning-rate schedule needs the step operand (`step %s`)}}
  %0:2 = nn.sgd_update %p, %p, %p {lr = 0.1 : f64, warmup_steps = 4 : i64} : tensor<4xf32>
  return
}

// -----

// A decay needs its length.
func.func @schedule_decay_steps(%p: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.sgd_update' op decay = linear needs decay_steps > 0}}
  %0:2 = nn.sgd_update %p, %p, %p step %s {lr = 0.1 : f64, decay = #nn<lr_decay linear>} : tensor<4xf32>
  return
}

// -----

// The floor lies in [0, lr].
func.func @schedule_floor(%p: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.adamw_update' op min_lr must lie in [0, lr = 0.001], got 0.01}}
  %0:3 = nn.adamw_update %p, %p, %p, %p, %s {lr = 1.0e-3 : f64, decay = #nn<lr_decay cosine>, decay_steps = 10 : i64, min_lr = 1.0e-2 : f64} : tensor<4xf32>
  return
}

// -----

// A constant learning rate has no decay length or floor.
func.func @schedule_constant(%p: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.adamw_update' op decay = constant takes no decay_steps or min_lr (got 10 and 0); give decay = linear or cosine}}
  %0:3 = nn.adamw_update %p, %p, %p, %p, %s {lr = 1.0e-3 : f64, decay_steps = 10 : i64} : tensor<4xf32>
  return
}

// -----

// The warm-up is not negative.
func.func @schedule_warmup(%p: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.adamw_update' op warmup_steps must be >= 0, got -1}}
  %0:3 = nn.adamw_update %p, %p, %p, %p, %s {lr = 1.0e-3 : f64, warmup_steps = -1 : i64} : tensor<4xf32>
  return
}

// -----

// adamw_update: betas are in [0, 1).
func.func @adamw_beta(%p: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.adamw_update' op beta2 must be in [0, 1), got 1}}
  %0:3 = nn.adamw_update %p, %p, %p, %p, %s {lr = 1.0e-3 : f64, beta2 = 1.0 : f64} : tensor<4xf32>
  return
}

// -----

// adamw_update: epsilon is positive.
func.func @adamw_epsilon(%p: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.adamw_update' op epsilon must be > 0, got 0}}
  %0:3 = nn.adamw_update %p, %p, %p, %p, %s {lr = 1.0e-3 : f64, epsilon = 0.0 : f64} : tensor<4xf32>
  return
}

// -----

// adamw_update: optimizer state has the parameter's type.
func.func @adamw_state_type(%p: tensor<4xf32>, %m: tensor<4xbf16>, %s: tensor<i64>) {
  // expected-error @+1 {{'nn.adamw_update' op failed to verify that all of {param, grad, m, v, new_param, new_m, new_v} have same type}}
  %0:3 = "nn.adamw_update"(%p, %p, %m, %p, %s) <{lr = 1.0e-3 : f64}> : (tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// nn.param marks tensors only.
// expected-error @+1 {{'func.func' op argument #1 of type 'f32' is marked 'nn.param', which requires a tensor-typed argument}}
func.func @param_scalar(%w: tensor<4xf32> {nn.param}, %lr: f32 {nn.param}) {
  return
}

// -----

// An argument is a parameter or data, not both.
// expected-error @+1 {{'func.func' op argument #0 is marked both 'nn.param' and 'nn.data'; an argument has one role (parameter, data, optimizer state or step counter) at most}}
func.func @param_and_data(%w: tensor<4xf32> {nn.param, nn.data}) {
  return
}

// -----

// nn.data is a unit attribute.
// expected-error @+1 {{'func.func' op argument #0 attribute 'nn.data' must be a unit attribute, got true}}
func.func @data_not_unit(%x: tensor<4xf32> {nn.data = true}) {
  return
}

// -----

// The classification attributes belong on arguments, not results.
// expected-error @+1 {{'func.func' op carries 'nn.param' on result #0, but it is only valid on function arguments}}
func.func @param_on_result(%x: tensor<4xf32>) -> (tensor<4xf32> {nn.param}) {
  return %x : tensor<4xf32>
}

// -----

// Unknown nn argument attributes are rejected.
// expected-error @+1 {{'func.func' op has unknown nn argument attribute 'nn.weight' on argument #0 (expected 'nn.param', 'nn.data', 'nn.state', 'nn.step', 'nn.name' or 'nn.moe_forecast')}}
func.func @unknown_arg_attr(%x: tensor<4xf32> {nn.weight}) {
  return
}

// -----

// nn.param is not an op attribute.
func.func @param_on_op(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.relu' op carries 'nn.param' as an op attribute, but it is only valid on function arguments}}
  %0 = nn.relu %x {nn.param} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0 attribute 'nn.name' must be a non-empty string, got 3 : i64}}
func.func @bad_name(%x: tensor<4xf32> {nn.name = 3 : i64}) {
  return
}

// -----

// nn.tokens counts a step's tokens: a positive integer on a function.
// expected-error @+1 {{'func.func' op carries 'nn.tokens', which must be a positive integer below 2^62 on a function}}
func.func @no_tokens() attributes {nn.tokens = 0 : i64} {
  return
}

// -----

// expected-error @+1 {{'func.func' op carries 'nn.tokens', which must be a positive integer below 2^62 on a function}}
func.func @unsigned_tokens() attributes {nn.tokens = 4 : ui64} {
  return
}

// -----

func.func @tokens_on_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.relu' op carries 'nn.tokens', which must be a positive integer below 2^62 on a function}}
  %y = nn.relu %x {nn.tokens = 4 : i64} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// nn.moe_replicas marks a replicas' lookup or its gradient, nothing else.
func.func @moe_replicas_mark(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.exp' op carries 'nn.moe_replicas', which must be a non-negative integer on an nn.embedding or nn.gather_grad}}
  %0 = nn.exp %x {nn.moe_replicas = 0 : i64} : tensor<4xf32>
  return
}
