// RUN: loom-opt %s -split-input-file --nn-autodiff | FileCheck %s

// Layout annotations reach the gradients by duality: the gradient of an
// annotated value is annotated with the dual layout (a split stays, a
// duplicate becomes a partial sum, a partial sum a duplicate; across groups
// replicated <-> partial(sum)); a reshard's gradient reshards back between
// the duals. Nothing else about layouts is copied.

// A heterogeneous 2-layer step: 4 fast devices take 3/4 of the batch, 2 slow
// ones 1/4. The weight is replicated across the groups (and duplicated
// inside the first), so its gradient is a partial sum across and inside.
// CHECK-LABEL: func.func @hetero_grad(
// CHECK-SAME: %[[W:.*]]: tensor<32x16xf32> {nn.name = "w", nn.param}, %[[X:.*]]: tensor<64x32xf32> {nn.data, nn.name = "x"})
// CHECK:      %[[WA:.*]] = hspmd.annotate %[[W]] : tensor<32x16xf32> as #hspmd.union<replicated: {[0, 1, 2, 3]: [D:2, S1:2]}, {[4, 5]: [S1:2]}>
// CHECK:      %[[XA:.*]] = hspmd.annotate %[[X]]
// CHECK:      %[[DY:.*]] = nn.broadcast %{{.*}} : tensor<1x1xf32> to tensor<64x16xf32>
// The reshard goes back from the dual of its target to the dual of its source.
// CHECK-NEXT: %[[DR:.*]] = hspmd.reshard %[[DY]] : tensor<64x16xf32> from #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, P(sum):2]}, {[4, 5]: [P(sum):2]}> to #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}>
// A split-only layout is its own dual.
// CHECK-NEXT: %[[DYA:.*]] = hspmd.annotate %[[DR]] : tensor<64x16xf32> as #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}>
// CHECK-NEXT: %[[DW:.*]] = nn.matmul %[[XA]], %[[DYA]] transpose_lhs : tensor<64x32xf32>, tensor<64x16xf32>
// CHECK-NEXT: %[[DWA:.*]] = hspmd.annotate %[[DW]] : tensor<32x16xf32> as #hspmd.union<partial(sum): {[0, 1, 2, 3]: [P(sum):2, S1:2]}, {[4, 5]: [S1:2]}>
// CHECK-NEXT: return %{{.*}}, %[[DWA]] : tensor<f32>, tensor<32x16xf32>
func.func @hetero(%w: tensor<32x16xf32> {nn.param}, %x: tensor<64x32xf32> {nn.data}) -> tensor<f32> {
  %wa = hspmd.annotate %w : tensor<32x16xf32> as #hspmd.union<replicated: {[0, 1, 2, 3]: [D:2, S1:2]}, {[4, 5]: [S1:2]}>
  %xa = hspmd.annotate %x : tensor<64x32xf32> as #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, D:2]}, {[4, 5]: [D:2]}>
  %y = nn.matmul %xa, %wa : tensor<64x32xf32>, tensor<32x16xf32>
  %ya = hspmd.annotate %y : tensor<64x16xf32> as #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}>
  %r = hspmd.reshard %ya : tensor<64x16xf32> from #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}> to #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, D:2]}, {[4, 5]: [D:2]}>
  %l = nn.reduce sum %r dims = [0, 1] : tensor<64x16xf32>
  return %l : tensor<f32>
}

// -----

// Inside a split union, a member whose gradient is complete holds it as a
// degree-1 partial sum, so that the members agree on the pending reduction.
// CHECK-LABEL: func.func @split_members_grad(
// CHECK: hspmd.annotate %{{.*}} : tensor<64x8xf32> as #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [P(sum):2, S1:2]}, {[4, 5]: [S1:2, P(sum):1]}>
func.func @split_members(%w: tensor<64x8xf32> {nn.param}) -> tensor<f32> {
  %0 = hspmd.annotate %w : tensor<64x8xf32> as #hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [D:2, S1:2]}, {[4, 5]: [S1:2]}>
  %l = nn.reduce sum %0 dims = [0, 1] : tensor<64x8xf32>
  return %l : tensor<f32>
}

// -----

// A partial sum across groups (each group's contribution to the value) gets
// a replicated gradient: every contribution needs all of it.
// CHECK-LABEL: func.func @partial_grad(
// CHECK: hspmd.annotate %{{.*}} : tensor<8x8xf32> as #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2, 3]: [S0:2]}>
func.func @partial(%w: tensor<8x8xf32> {nn.param}) -> tensor<f32> {
  %0 = nn.relu %w : tensor<8x8xf32>
  %1 = hspmd.annotate %0 : tensor<8x8xf32> as #hspmd.union<partial(sum) shares [1, 1]: {[0, 1]: [P(sum):2]}, {[2, 3]: [S0:2]}>
  %l = nn.reduce sum %1 dims = [0, 1] : tensor<8x8xf32>
  return %l : tensor<f32>
}

// -----

// A strategy set: every strategy's layout is dualised, names and the
// optimizer strategy kept.
// CHECK-LABEL: func.func @strategies_grad(
// CHECK: hspmd.annotate %{{.*}} : tensor<16x16xf32> as #hspmd.strategies<["tp" = #hspmd.union<{[0, 1, 2, 3]: [D:2, S1:2]}>, "dp" = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], optimizer = "dp">
// CHECK: hspmd.annotate %{{.*}} : tensor<16x16xf32> as #hspmd.strategies<["tp" = #hspmd.union<{[0, 1, 2, 3]: [P(sum):2, S1:2]}>, "dp" = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], optimizer = "dp">
func.func @strategies(%w: tensor<16x16xf32> {nn.param}) -> tensor<f32> {
  %0 = hspmd.annotate %w : tensor<16x16xf32> as #hspmd.strategies<["tp" = <{[0, 1, 2, 3]: [D:2, S1:2]}>, "dp" = <{[0, 1, 2, 3]: [S0:4]}>], optimizer = "dp">
  %l = nn.reduce sum %0 dims = [0, 1] : tensor<16x16xf32>
  return %l : tensor<f32>
}

// -----

// Only annotations map: the gradients of unannotated values stay
// unannotated, and annotations off the path (the data) get no gradient:
// the two forward annotations, then one on the gradient of %za.
// CHECK-LABEL: func.func @only_annotations_grad(
// CHECK-COUNT-2: hspmd.annotate
// CHECK:     nn.broadcast
// CHECK-NEXT: hspmd.annotate %{{.*}} : tensor<4x8xf32> as #hspmd.union<{[0, 1]: [S0:2]}>
// CHECK-NOT: hspmd.
// CHECK: return
func.func @only_annotations(%w: tensor<8x8xf32> {nn.param}, %x: tensor<4x8xf32> {nn.data}) -> tensor<f32> {
  %xa = hspmd.annotate %x : tensor<4x8xf32> as #hspmd.union<{[0, 1]: [S0:2]}>
  %y = nn.matmul %xa, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %z = nn.tanh %y : tensor<4x8xf32>
  %za = hspmd.annotate %z : tensor<4x8xf32> as #hspmd.union<{[0, 1]: [S0:2]}>
  %l = nn.reduce sum %za dims = [0, 1] : tensor<4x8xf32>
  return %l : tensor<f32>
}
