// RUN: loom-opt %s -split-input-file --hspmd-specialize -verify-diagnostics

#D2 = #hspmd.union<{[0, 1]: [D:2]}>
#S0 = #hspmd.union<{[0, 1]: [S0:2]}>
#S1 = #hspmd.union<{[0, 1]: [S1:2]}>

// Propagation has not run on the body.
func.func @no_op_layouts(%x: tensor<8xf64> {hspmd.layout = #D2}) -> (tensor<8xf64> {hspmd.layout = #D2}) {
  // expected-error @+1 {{has no hspmd.result_layouts for its tensors; run --hspmd-propagate-layouts (and --hspmd-insert-reshards) first}}
  %y = nn.neg %x : tensor<8xf64>
  return %y : tensor<8xf64>
}

// -----

#D2 = #hspmd.union<{[0, 1]: [D:2]}>
#S0 = #hspmd.union<{[0, 1]: [S0:2]}>
// A result without a layout.
// expected-error @+1 {{result #0 has no hspmd layout; run --hspmd-propagate-layouts first}}
func.func @no_result_layout(%x: tensor<8xf64> {hspmd.layout = #D2}) -> tensor<8xf64> {
  return %x : tensor<8xf64>
}

// -----

#D2 = #hspmd.union<{[0, 1]: [D:2]}>
#S0 = #hspmd.union<{[0, 1]: [S0:2]}>
func.func @not_lowered(%x: tensor<8xf64> {hspmd.layout = #S0}) -> (tensor<8xf64> {hspmd.layout = #D2}) {
  // expected-error @+1 {{is not lowered; run --hspmd-lower-reshards before specialisation}}
  %y = hspmd.reshard %x : tensor<8xf64> from #S0 to #D2 {hspmd.operand_layouts = [#S0], hspmd.result_layouts = [#D2]}
  return {hspmd.operand_layouts = [#D2]} %y : tensor<8xf64>
}

// -----

#S1 = #hspmd.union<{[0, 1]: [S1:2]}>
#D2 = #hspmd.union<{[0, 1]: [D:2]}>
func.func @iota_offset_split(%o: tensor<i64> {hspmd.layout = #D2}) -> (tensor<4x8xi64> {hspmd.layout = #S1}) {
  // expected-error @+1 {{'nn.iota' op cannot be localised for its layouts (operands #hspmd.union<{[0, 1]: [D:2]}>; results #hspmd.union<{[0, 1]: [S1:2]}>): its result #0 is split along dimension 1 and the block's start would have to be added to an offset computed at run time, which is not supported}}
  %i = nn.iota dim = 1 offset %o {hspmd.operand_layouts = [#D2], hspmd.result_layouts = [#S1]} : tensor<4x8xi64>
  return {hspmd.operand_layouts = [#S1]} %i : tensor<4x8xi64>
}

// -----

#D2 = #hspmd.union<{[0, 1]: [D:2]}>
#S0 = #hspmd.union<{[0, 1]: [S0:2]}>
#P2 = #hspmd.union<{[0, 1]: [P(sum):2]}>
// A lookup that already reads from an offset cannot be split again.
func.func @vocab_split_offset(%t: tensor<8x4xf64> {hspmd.layout = #S0}, %ids: tensor<3xi64> {hspmd.layout = #D2},
    %o: tensor<i64> {hspmd.layout = #D2}) -> (tensor<3x4xf64> {hspmd.layout = #P2}) {
  // expected-error @+1 {{'nn.embedding' op cannot be localised for its layouts (operands #hspmd.union<{[0, 1]: [S0:2]}>, #hspmd.union<{[0, 1]: [D:2]}>, #hspmd.union<{[0, 1]: [D:2]}>; results #hspmd.union<{[0, 1]: [P(sum):2]}>): its operand #0 is split along dimension 0 and the block's start would have to be added to an offset computed at run time}}
  %e = nn.embedding %t, %ids offset %o {hspmd.operand_layouts = [#S0, #D2, #D2], hspmd.result_layouts = [#P2]} : tensor<8x4xf64>, tensor<3xi64>
  return {hspmd.operand_layouts = [#P2]} %e : tensor<3x4xf64>
}

// -----

#S0 = #hspmd.union<{[0, 1]: [S0:2]}>
#T0 = #hspmd.union<{[2, 3]: [S0:2]}>
// expected-error @+1 {{result #0 is on the device group #hspmd.union<{[2, 3]: [S0:2]}> but the function's other layouts are on #hspmd.group<[0, 1]>}}
func.func @two_groups(%x: tensor<8xf64> {hspmd.layout = #S0}) -> (tensor<8xf64> {hspmd.layout = #T0}) {
  return %x : tensor<8xf64>
}

// -----

#S0 = #hspmd.union<{[0, 1]: [S0:2]}>
// expected-error @+1 {{cannot specialise: a symbol @taken_group0 exists already}}
func.func @taken(%x: tensor<8xf64> {hspmd.layout = #S0}) -> (tensor<8xf64> {hspmd.layout = #S0}) {
  return {hspmd.operand_layouts = [#S0]} %x : tensor<8xf64>
}
func.func @taken_group0() {
  return
}

// -----

#S0 = #hspmd.union<{[0, 1]: [S0:2]}>
// A split dropout needs the global shape to number its elements.
func.func @dropout_dynamic(%x: tensor<?x4xf64> {hspmd.layout = #S0}) -> (tensor<?x4xf64> {hspmd.layout = #S0}) {
  // expected-error @+1 {{'nn.dropout' op cannot be localised for its layouts (operands #hspmd.union<{[0, 1]: [S0:2]}>; results #hspmd.union<{[0, 1]: [S0:2]}>): its input is split and has a dynamic shape: the mask's global indices need the global shape}}
  %y = nn.dropout %x {rate = 5.000000e-01 : f64, seed = 1 : i64, hspmd.operand_layouts = [#S0], hspmd.result_layouts = [#S0]} : tensor<?x4xf64>
  return {hspmd.operand_layouts = [#S0]} %y : tensor<?x4xf64>
}

// -----

#S0 = #hspmd.union<{[0, 1]: [S0:2]}>
#D2 = #hspmd.union<{[0, 1]: [D:2]}>
// A block start needs a static block size.
func.func @iota_dynamic(%x: tensor<?x4xi64> {hspmd.layout = #S0}) -> (tensor<?x4xi64> {hspmd.layout = #S0}) {
  // expected-error @+1 {{its result #0 is split along dimension 0, whose size is dynamic: the block's start needs a static block size}}
  %i = nn.iota dim = 0 {hspmd.result_layouts = [#S0]} : tensor<?x4xi64>
  return {hspmd.operand_layouts = [#S0]} %i : tensor<?x4xi64>
}

// -----

// Blocks of unequal size need static shapes (each class's function has its
// own).
// expected-error @+1 {{lays out a tensor of dynamic shape unevenly (#hspmd.union<{[0, 1, 2]: [S1:[4, 2, 2]]}>); blocks of unequal size need static shapes}}
func.func @uneven_dynamic(%x: tensor<?x8xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2]: [S1:[4, 2, 2]]}>}) -> (tensor<?x8xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2]: [S1:[4, 2, 2]]}>}) {
  return %x : tensor<?x8xf64>
}
