// RUN: loom-opt %s --hspmd-lower-reshards -split-input-file | FileCheck %s

// P -> D: one all-reduce (data-parallel gradients, Megatron row output).
// CHECK-LABEL: func.func @all_reduce
// CHECK: %[[Y:.*]] = hspmd.all_reduce sum %arg0 over [0] of [4] : tensor<8x4xf32> -> tensor<8x4xf32> from <{[0, 1, 2, 3]: [P(sum):4]}> to <{[0, 1, 2, 3]: [D:4]}> {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [P(sum):4]}>], hspmd.result_layouts = [#hspmd.union<{[0, 1, 2, 3]: [D:4]}>]}
// CHECK-NOT: hspmd.reshard
// CHECK: return %[[Y]]
func.func @all_reduce(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %y = hspmd.reshard %x : tensor<8x4xf32> from #hspmd.union<{[0, 1, 2, 3]: [P(sum):4]}> to #hspmd.union<{[0, 1, 2, 3]: [D:4]}>
  return %y : tensor<8x4xf32>
}

// -----

// P -> S: one reduce-scatter (sequence parallelism, ZeRO gradients); the
// reduction kind is kept.
// CHECK-LABEL: func.func @reduce_scatter
// CHECK: hspmd.reduce_scatter max %arg0 dim 1 over [0] of [2] : tensor<8x4xf32> -> tensor<8x4xf32> from <{[0, 1]: [P(max):2]}> to <{[0, 1]: [S1:2]}>
func.func @reduce_scatter(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %y = hspmd.reshard %x : tensor<8x4xf32> from #hspmd.union<{[0, 1]: [P(max):2]}> to #hspmd.union<{[0, 1]: [S1:2]}>
  return %y : tensor<8x4xf32>
}

// -----

// S -> D: one all-gather.
// CHECK-LABEL: func.func @all_gather
// CHECK: hspmd.all_gather %arg0 dim 0 over [0] of [8] : tensor<16x4xf32> -> tensor<16x4xf32> from <{[0, 1, 2, 3, 4, 5, 6, 7]: [S0:8]}> to <{[0, 1, 2, 3, 4, 5, 6, 7]: [D:8]}>
func.func @all_gather(%x: tensor<16x4xf32>) -> tensor<16x4xf32> {
  %y = hspmd.reshard %x : tensor<16x4xf32> from #hspmd.union<{[0, 1, 2, 3, 4, 5, 6, 7]: [S0:8]}> to #hspmd.union<{[0, 1, 2, 3, 4, 5, 6, 7]: [D:8]}>
  return %y : tensor<16x4xf32>
}

// -----

// D -> S: a local slice, no communication.
// CHECK-LABEL: func.func @local_slice
// CHECK: hspmd.local_slice %arg0 dim 1 over [1] of [2, 2] : tensor<8x4xf32> -> tensor<8x4xf32> from <{[0, 1, 2, 3]: [S0:2, D:2]}> to <{[0, 1, 2, 3]: [S0:2, S1:2]}>
func.func @local_slice(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %y = hspmd.reshard %x : tensor<8x4xf32> from #hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}> to #hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>
  return %y : tensor<8x4xf32>
}

// -----

// S a -> S b: one all-to-all (cheaper than gathering and slicing).
// CHECK-LABEL: func.func @all_to_all
// CHECK: hspmd.all_to_all %arg0 split 1 concat 0 over [0] of [4] : tensor<8x8xf32> -> tensor<8x8xf32> from <{[0, 1, 2, 3]: [S0:4]}> to <{[0, 1, 2, 3]: [S1:4]}>
func.func @all_to_all(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %y = hspmd.reshard %x : tensor<8x8xf32> from #hspmd.union<{[0, 1, 2, 3]: [S0:4]}> to #hspmd.union<{[0, 1, 2, 3]: [S1:4]}>
  return %y : tensor<8x8xf32>
}

// -----

// Only the axis order changes: one permutation.
// CHECK-LABEL: func.func @permute
// CHECK: hspmd.permute %arg0 perm [1, 0] over [0, 1] of [2, 2] : tensor<8x8xf32> -> tensor<8x8xf32> from <{[0, 1, 2, 3]: [S0:2, S1:2]}> to <{[0, 1, 2, 3]: [S1:2, S0:2]}>
// CHECK-NEXT: return
func.func @permute(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %y = hspmd.reshard %x : tensor<8x8xf32> from #hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}> to #hspmd.union<{[0, 1, 2, 3]: [S1:2, S0:2]}>
  return %y : tensor<8x8xf32>
}

// -----

// docs/architecture.md's example: [P(sum):2, S1:2] -> [S0:4] on [2, 2] is a
// reduce-scatter of dimension 0 over mesh axis 0, then an all-to-all
// moving axis 1's split from dimension 1 to dimension 0.
// CHECK-LABEL: func.func @design_example
// CHECK: %[[A:.*]] = hspmd.reduce_scatter sum %arg0 dim 0 over [0] of [2, 2] : tensor<8x8xf32> -> tensor<8x8xf32> from <{[0, 1, 2, 3]: [P(sum):2, S1:2]}> to <{[0, 1, 2, 3]: [S0:2, S1:2]}>
// CHECK: %[[B:.*]] = hspmd.all_to_all %[[A]] split 0 concat 1 over [1] of [2, 2] : tensor<8x8xf32> -> tensor<8x8xf32> from <{[0, 1, 2, 3]: [S0:2, S1:2]}> to <{[0, 1, 2, 3]: [S0:4]}>
// CHECK: return %[[B]]
func.func @design_example(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %y = hspmd.reshard %x : tensor<8x8xf32> from #hspmd.union<{[0, 1, 2, 3]: [P(sum):2, S1:2]}> to #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>
  return %y : tensor<8x8xf32>
}

// -----

// A change on the finer mesh [2, 2, 2]: a free slice, then one all-to-all
// over two mesh axes together, then an all-gather.
// CHECK-LABEL: func.func @grouped_axes
// CHECK: %[[A:.*]] = hspmd.local_slice %arg0 dim 0 over [2] of [2, 2, 2] {{.*}} from <{[0, 1, 2, 3, 4, 5, 6, 7]: [S0:4, D:2]}> to <{[0, 1, 2, 3, 4, 5, 6, 7]: [S0:8]}>
// CHECK: %[[B:.*]] = hspmd.all_to_all %[[A]] split 1 concat 0 over [1, 2] of [2, 2, 2] {{.*}} from <{[0, 1, 2, 3, 4, 5, 6, 7]: [S0:8]}> to <{[0, 1, 2, 3, 4, 5, 6, 7]: [S0:2, S1:4]}>
// CHECK: hspmd.all_gather %[[B]] dim 0 over [0] of [2, 2, 2] {{.*}} from <{[0, 1, 2, 3, 4, 5, 6, 7]: [S0:2, S1:4]}> to <{[0, 1, 2, 3, 4, 5, 6, 7]: [D:2, S1:4]}>
func.func @grouped_axes(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %y = hspmd.reshard %x : tensor<8x8xf32> from #hspmd.union<{[0, 1, 2, 3, 4, 5, 6, 7]: [S0:4, D:2]}> to #hspmd.union<{[0, 1, 2, 3, 4, 5, 6, 7]: [D:2, S1:4]}>
  return %y : tensor<8x8xf32>
}

// -----

// A reshard that changes nothing (a degree-1 axis) is erased.
// CHECK-LABEL: func.func @no_op
// CHECK-NOT: hspmd.
// CHECK: return %arg0
func.func @no_op(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %y = hspmd.reshard %x : tensor<8x8xf32> from #hspmd.union<{[0, 1]: [S0:2]}> to #hspmd.union<{[0, 1]: [D:1, S0:2]}>
  return %y : tensor<8x8xf32>
}

// -----

// Fusion: S0 -> D -> S1 with a single-use middle becomes S0 -> S1, one
// all-to-all instead of a gather and a slice.
// CHECK-LABEL: func.func @fused
// CHECK-NEXT: hspmd.all_to_all %arg0 split 1 concat 0 over [0] of [2]
// CHECK-NEXT: return
func.func @fused(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %y = hspmd.reshard %x : tensor<8x8xf32> from #hspmd.union<{[0, 1]: [S0:2]}> to #hspmd.union<{[0, 1]: [D:2]}>
  %z = hspmd.reshard %y : tensor<8x8xf32> from #hspmd.union<{[0, 1]: [D:2]}> to #hspmd.union<{[0, 1]: [S1:2]}>
  return %z : tensor<8x8xf32>
}

// -----

// A chain that comes back to where it started fuses into a no-op and
// disappears.
// CHECK-LABEL: func.func @fused_away
// CHECK-NOT: hspmd.
// CHECK: return %arg0
func.func @fused_away(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %y = hspmd.reshard %x : tensor<8x8xf32> from #hspmd.union<{[0, 1]: [S0:2]}> to #hspmd.union<{[0, 1]: [D:2]}>
  %z = hspmd.reshard %y : tensor<8x8xf32> from #hspmd.union<{[0, 1]: [D:2]}> to #hspmd.union<{[0, 1]: [S0:2]}>
  return %z : tensor<8x8xf32>
}

// -----

// The middle of a chain with another user is not fused: both lower.
// CHECK-LABEL: func.func @not_fused
// CHECK: %[[G:.*]] = hspmd.all_gather %arg0 dim 0 over [0] of [2]
// CHECK: %[[S:.*]] = hspmd.local_slice %[[G]] dim 1 over [0] of [2]
// CHECK: return %[[S]], %[[G]]
func.func @not_fused(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %y = hspmd.reshard %x : tensor<8x8xf32> from #hspmd.union<{[0, 1]: [S0:2]}> to #hspmd.union<{[0, 1]: [D:2]}>
  %z = hspmd.reshard %y : tensor<8x8xf32> from #hspmd.union<{[0, 1]: [D:2]}> to #hspmd.union<{[0, 1]: [S1:2]}>
  return %z, %y : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// Left for the heterogeneous passes (issue 5): a change of group, a union
// of several groups, a strategy set, and layouts that share no mesh.
// CHECK-LABEL: func.func @untouched
// CHECK: hspmd.reshard %arg0 : tensor<12x12xf32> from #hspmd.union<{[0, 1]: [S0:2]}> to #hspmd.union<{[2, 3]: [S0:2]}>
// CHECK: hspmd.reshard %arg0 : tensor<12x12xf32> from #hspmd.union<{[0, 1]: [S0:2]}> to #hspmd.union<split(0) shares [3, 1]: {[0]: []}, {[1]: []}>
// CHECK: hspmd.reshard %arg0 : tensor<12x12xf32> from #hspmd.strategies
// CHECK: hspmd.reshard %arg0 : tensor<12x12xf32> from #hspmd.union<{[0, 1, 2, 3, 4, 5]: [S0:2, S1:3]}> to #hspmd.union<{[0, 1, 2, 3, 4, 5]: [S0:3, S1:2]}>
// CHECK-NOT: hspmd.all
func.func @untouched(%x: tensor<12x12xf32>) -> (tensor<12x12xf32>, tensor<12x12xf32>, tensor<12x12xf32>, tensor<12x12xf32>) {
  %a = hspmd.reshard %x : tensor<12x12xf32> from #hspmd.union<{[0, 1]: [S0:2]}> to #hspmd.union<{[2, 3]: [S0:2]}>
  %b = hspmd.reshard %x : tensor<12x12xf32> from #hspmd.union<{[0, 1]: [S0:2]}> to #hspmd.union<split(0) shares [3, 1]: {[0]: []}, {[1]: []}>
  %c = hspmd.reshard %x : tensor<12x12xf32> from #hspmd.strategies<["a" = <{[0, 1]: [S0:2]}>], optimizer = "a"> to #hspmd.strategies<["a" = <{[0, 1]: [D:2]}>], optimizer = "a">
  %d = hspmd.reshard %x : tensor<12x12xf32> from #hspmd.union<{[0, 1, 2, 3, 4, 5]: [S0:2, S1:3]}> to #hspmd.union<{[0, 1, 2, 3, 4, 5]: [S0:3, S1:2]}>
  return %a, %b, %c, %d : tensor<12x12xf32>, tensor<12x12xf32>, tensor<12x12xf32>, tensor<12x12xf32>
}

// -----

// S -> P(sum) and D -> P(sum): no communication, each device's buffer made
// a term of the sum (a consumer takes a partial, e.g. the gradient of a
// value annotated as duplicated).
// CHECK-LABEL: func.func @make_partial
// CHECK: hspmd.make_partial %arg0 dim 0 over [0] of [2] : tensor<8x4xf32> -> tensor<8x4xf32> from <{[0, 1]: [S0:2]}> to <{[0, 1]: [P(sum):2]}>
// CHECK: hspmd.make_partial %arg1 over [0] of [2] : tensor<8x4xf32> -> tensor<8x4xf32> from <{[0, 1]: [D:2]}> to <{[0, 1]: [P(sum):2]}>
func.func @make_partial(%x: tensor<8x4xf32>, %y: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %a = hspmd.reshard %x : tensor<8x4xf32> from #hspmd.union<{[0, 1]: [S0:2]}> to #hspmd.union<{[0, 1]: [P(sum):2]}>
  %b = hspmd.reshard %y : tensor<8x4xf32> from #hspmd.union<{[0, 1]: [D:2]}> to #hspmd.union<{[0, 1]: [P(sum):2]}>
  return %a, %b : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Blocks of unequal size inside a group: the change is an exchange (each
// device sends exactly the overlap of its block with another's), never a
// collective of equal blocks; a spelling of the same blocks changes nothing.
// CHECK-LABEL: func.func @uneven
// CHECK: %[[A:.*]] = hspmd.exchange %arg0 shape [8, 32] : tensor<8x32xf64> -> tensor<8x32xf64> from <{[0, 1, 2]: [S0:3]}> to <{[0, 1, 2]: [D:3]}>
// CHECK-SAME: hspmd.result_layouts = [#hspmd.union<{[0, 1, 2]: [D:3]}>]
// CHECK: %[[B:.*]] = hspmd.exchange %arg0 shape [8, 32] : tensor<8x32xf64> -> tensor<8x32xf64> from <{[0, 1, 2]: [S1:3]}> to <{[0, 1, 2]: [S1:[16, 8, 8]]}>
// CHECK-NOT: hspmd.exchange
// CHECK: return %[[A]], %[[B]], %arg0
func.func @uneven(%x: tensor<8x32xf64>) -> (tensor<8x32xf64>, tensor<8x32xf64>, tensor<8x32xf64>) {
  %a = hspmd.reshard %x : tensor<8x32xf64> from #hspmd.union<{[0, 1, 2]: [S0:3]}> to #hspmd.union<{[0, 1, 2]: [D:3]}>
  %b = hspmd.reshard %x : tensor<8x32xf64> from #hspmd.union<{[0, 1, 2]: [S1:3]}> to #hspmd.union<{[0, 1, 2]: [S1:[16, 8, 8]]}>
  %c = hspmd.reshard %x : tensor<8x32xf64> from #hspmd.union<{[0, 1]: [S1:[16, 16]]}> to #hspmd.union<{[0, 1]: [S1:2]}>
  return %a, %b, %c : tensor<8x32xf64>, tensor<8x32xf64>, tensor<8x32xf64>
}

// -----

// Partial sums next to an uneven split: the devices that reduce together
// share their batch block, so one all-reduce over the partial axis (read
// on the states' own axes); a reduction to uneven blocks of an even tensor
// is an all-reduce then a local slice (an exchange that moves nothing).
// CHECK-LABEL: func.func @uneven_partial
// CHECK: %[[R:.*]] = hspmd.all_reduce sum %arg0 over [1] of [3, 2] : tensor<8x4xf64> -> tensor<8x4xf64> from <{[0, 1, 2, 3, 4, 5]: [S0:3, P(sum):2]}> to <{[0, 1, 2, 3, 4, 5]: [S0:3, D:2]}>
// CHECK: %[[M:.*]] = hspmd.all_reduce max %arg1 over [0] of [3] : tensor<8x4xf64> -> tensor<8x4xf64> from <{[0, 1, 2]: [P(max):3]}> to <{[0, 1, 2]: [D:3]}>
// CHECK-NEXT: %[[S:.*]] = hspmd.exchange %[[M]] shape [8, 4] : tensor<8x4xf64> -> tensor<8x4xf64> from <{[0, 1, 2]: [D:3]}> to <{[0, 1, 2]: [S0:3]}>
// CHECK: return %[[R]], %[[S]]
func.func @uneven_partial(%x: tensor<8x4xf64>, %z: tensor<8x4xf64>) -> (tensor<8x4xf64>, tensor<8x4xf64>) {
  %y = hspmd.reshard %x : tensor<8x4xf64> from #hspmd.union<{[0, 1, 2, 3, 4, 5]: [S0:3, P(sum):2]}> to #hspmd.union<{[0, 1, 2, 3, 4, 5]: [S0:3, D:2]}>
  %w = hspmd.reshard %z : tensor<8x4xf64> from #hspmd.union<{[0, 1, 2]: [P(max):3]}> to #hspmd.union<{[0, 1, 2]: [S0:3]}>
  return %y, %w : tensor<8x4xf64>, tensor<8x4xf64>
}

// -----

// Equal explicit blocks are an even split, read on any mesh.
// CHECK-LABEL: func.func @equal_blocks
// CHECK: hspmd.all_to_all
// CHECK-NOT: hspmd.exchange
func.func @equal_blocks(%x: tensor<32x4xf32>) -> tensor<32x4xf32> {
  %y = hspmd.reshard %x : tensor<32x4xf32> from #hspmd.union<{[0, 1, 2, 3]: [S0:[8, 8, 8, 8]]}> to #hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>
  return %y : tensor<32x4xf32>
}
