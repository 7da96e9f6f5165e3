// RUN: loom-opt %s --hspmd-propagate-layouts -split-input-file -verify-diagnostics

// Unions over different lists of groups in one function.
// expected-note @+1 {{first layout over several groups here}}
func.func @other_groups(%x: tensor<8x8xf32> {hspmd.layout = #hspmd.union<split(0) shares [3, 1]: {[0, 1]: [S1:2]}, {[2]: []}>}) -> tensor<8x8xf32> {
  // expected-error @+1 {{is over other device groups than #hspmd.union<split(0) shares [3, 1]: {[0, 1]: [S1:2]}, {[2]: []}> (or the same in another order); the unions of a function are over one list of groups}}
  %0 = hspmd.annotate %x : tensor<8x8xf32> as #hspmd.union<replicated: {[0, 1]: [S1:2]}, {[3]: []}>
  return %0 : tensor<8x8xf32>
}

// -----

// A one-group layout among unions of several groups.
// expected-note @+1 {{layout over several groups here}}
func.func @one_group(%x: tensor<8x8xf32> {hspmd.layout = #hspmd.union<split(0) shares [3, 1]: {[0, 1]: [S1:2]}, {[2]: []}>}) -> tensor<8x8xf32> {
  // expected-error @+1 {{is on one device group but other layouts of the function span 2 groups}}
  %0 = hspmd.annotate %x : tensor<8x8xf32> as #hspmd.union<{[0, 1]: [S1:2]}>
  return %0 : tensor<8x8xf32>
}

// -----

// Splits across groups in two ratios.
// expected-note @+1 {{first split here}}
func.func @ratios(%x: tensor<8x8xf32> {hspmd.layout = #hspmd.union<split(0) shares [3, 1]: {[0, 1]: [S1:2]}, {[2]: []}>}) -> tensor<8x8xf32> {
  // expected-error @+1 {{splits in another ratio than #hspmd.union<split(0) shares [3, 1]: {[0, 1]: [S1:2]}, {[2]: []}>; the splits across groups of one function share one ratio}}
  %0 = hspmd.annotate %x : tensor<8x8xf32> as #hspmd.union<split(1) shares [1, 1]: {[0, 1]: [S0:2]}, {[2]: []}>
  return %0 : tensor<8x8xf32>
}

// -----

// An iota along a dimension split across groups whose offset is computed
// at run time: the group's start cannot be added to it.
func.func @iota_offset(%o: tensor<i64>) -> (tensor<4x8xi64> {hspmd.layout = #hspmd.union<split(1) shares [1, 1]: {[0, 1]: [D:2]}, {[2]: []}>}) {
  // expected-error @+1 {{'nn.iota' op cannot be localised for its layouts across device groups (group 0's part; operands replicated; results split(1)): its result #0 is split along dimension 1 and the block's start would have to be added to an offset computed at run time, which is not supported}}
  %i = nn.iota dim = 1 offset %o : tensor<4x8xi64>
  return %i : tensor<4x8xi64>
}

// -----

// Shares that do not cover the dimension.
func.func @sizes(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{sizes [5, 2] cover 7 of dimension 0 of size 8}}
  %0 = hspmd.annotate %x : tensor<8x8xf32> as #hspmd.union<split(0) sizes [5, 2]: {[0, 1]: [S1:2]}, {[2]: []}>
  return %0 : tensor<8x8xf32>
}

// -----

// A mean over unequal shares written as a partial: an average of averages.
func.func @mean(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{a mean-partial across groups with unequal shares [3, 1] averages averages; use partial(sum) and scale by the global count}}
  %0 = hspmd.annotate %x : tensor<8x8xf32> as #hspmd.union<partial(mean) shares [3, 1]: {[0, 1]: [D:2]}, {[2]: []}>
  return %0 : tensor<8x8xf32>
}

// -----

// Overlapping groups.
func.func @overlap(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{union members 0 and 1 overlap: groups [0, 1] and [1]}}
  %0 = hspmd.annotate %x : tensor<8x8xf32> as #hspmd.union<replicated: {[0, 1]: [D:2]}, {[1]: []}>
  return %0 : tensor<8x8xf32>
}

// -----

// A maximum over a dimension split across groups, needed whole: exchanges
// reduce only sums so far.
func.func @max_across(%x: tensor<8x4xf64> {hspmd.layout = #hspmd.union<split(0) shares [3, 1]: {[0, 1]: [D:2]}, {[2]: []}>}) -> tensor<4xf64> {
  %m = nn.reduce max %x dims = [0] : tensor<8x4xf64>
  // expected-error @+1 {{needs complete values of a partial max across device groups (a max over a dimension split across groups); exchanges reduce only sums so far}}
  %e = nn.exp %m : tensor<4xf64>
  return %e : tensor<4xf64>
}

// -----

// A dynamic dimension split across groups: shares cut static dimensions.
// expected-error @+1 {{splits dimension 0 of 'tensor<?x4xf64>' across device groups, but its extent is dynamic; shares cut static dimensions}}
func.func @dynamic(%x: tensor<?x4xf64> {hspmd.layout = #hspmd.union<split(0) shares [3, 1]: {[0, 1]: [D:2]}, {[2]: []}>}) -> tensor<?x4xf64> {
  %n = nn.exp %x : tensor<?x4xf64>
  return %n : tensor<?x4xf64>
}
