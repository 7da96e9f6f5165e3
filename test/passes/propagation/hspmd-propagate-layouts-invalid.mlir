// RUN: loom-opt %s --hspmd-propagate-layouts -split-input-file -verify-diagnostics

// Strategy sets are specialised before propagation.
func.func @strategies(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{is a strategy set; layout propagation handles one union per value}}
  %0 = hspmd.annotate %x : tensor<8x8xf32> as #hspmd.strategies<["tp" = <{[0, 1]: [S1:2]}>, "dp" = <{[0, 1]: [S0:2]}>], optimizer = "dp">
  return %0 : tensor<8x8xf32>
}

// -----

// [S0:2, S1:3] and [S0:3, S1:2] on 6 devices: strides 3 and 2 share no mesh.
func.func @no_common_mesh(%x: tensor<6x6xf32>) -> tensor<6x6xf32> {
  // expected-note @+1 {{other layout here}}
  %0 = hspmd.annotate %x : tensor<6x6xf32> as #hspmd.union<{[0, 1, 2, 3, 4, 5]: [S0:2, S1:3]}>
  // expected-error @+1 {{layout #hspmd.union<{[0, 1, 2, 3, 4, 5]: [S0:3, S1:2]}> shares no mesh with #hspmd.union<{[0, 1, 2, 3, 4, 5]: [S0:2, S1:3]}>: the strides of their axes do not divide one another}}
  %1 = hspmd.annotate %0 : tensor<6x6xf32> as #hspmd.union<{[0, 1, 2, 3, 4, 5]: [S0:3, S1:2]}>
  return %1 : tensor<6x6xf32>
}

// -----

// A user layout that the tensor's shape cannot take is rejected before
// propagation runs (by the hspmd dialect's attribute verifier).
// expected-error @+1 {{layout of argument 0: dimension 0: a dimension of size 3 cannot be split 4 ways (S0:4) without an empty block}}
func.func @impossible_for_shape(%x: tensor<3x8xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>}) -> tensor<3x8xf32> {
  return %x : tensor<3x8xf32>
}

// -----

// Two user layouts that split softmax's replicated axis (factor j), one on
// its operand and one on its result: no factor assignment honours either.
// expected-note @+1 {{operand layout set by 'func.func' here}}
func.func @replicated_conflict(%x: tensor<8x16xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S1:2]}>}) -> tensor<8x16xf32> {
  // expected-error @+1 {{user layouts split replicated factor j (size 16) of 'nn.softmax' on both sides: operand 0 is #hspmd.union<{[0, 1]: [S1:2]}> and result 0 is #hspmd.union<{[0, 1]: [S1:2]}>}}
  %0 = nn.softmax %x dim = 1 : tensor<8x16xf32>
  // expected-note @+1 {{result layout set by 'hspmd.annotate' here}}
  %1 = hspmd.annotate %0 : tensor<8x16xf32> as #hspmd.union<{[0, 1]: [S1:2]}>
  return %1 : tensor<8x16xf32>
}

// -----

// The same through an annotation on the operand and a function result's
// layout, for the normalized axis of a layer norm.
// expected-note @+1 {{result layout set by 'func.func' here}}
func.func @replicated_conflict_result(%x: tensor<8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>)
    -> (tensor<8x32xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>}) {
  // expected-note @+1 {{operand layout set by 'hspmd.annotate' here}}
  %xa = hspmd.annotate %x : tensor<8x32xf32> as #hspmd.union<{[0, 1, 2, 3]: [S1:4]}>
  // expected-error @+1 {{user layouts split replicated factor j (size 32) of 'nn.layer_norm' on both sides: operand 0 is #hspmd.union<{[0, 1, 2, 3]: [S1:4]}> and result 0 is #hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>}}
  %0 = nn.layer_norm %xa scale %g bias %b : tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

// Explicit blocks are cut along one mesh axis; another layout's axes would
// cut this one's devices finer.
func.func @explicit_refined(%x: tensor<32x4xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>}) -> tensor<32x4xf32> {
  // expected-error @+1 {{layout #hspmd.union<{[0, 1, 2, 3]: [S0:[16, 8, 4, 4]]}> cuts explicit blocks along more than one axis of the function's mesh [2, 2] (other layouts split its devices finer); explicit blocks are cut along one mesh axis}}
  %y = hspmd.annotate %x : tensor<32x4xf32> as #hspmd.union<{[0, 1, 2, 3]: [S0:[16, 8, 4, 4]]}>
  return %y : tensor<32x4xf32>
}
