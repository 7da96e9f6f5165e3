// The global view's promise: read on the op's mesh, `to` is exactly what
// the collective makes of `from`; every error says what the change is.
// RUN: loom-opt %s -split-input-file -verify-diagnostics

func.func @all_reduce_not_partial(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{`from` -> `to` is (S0) -> (D) on mesh [2], but all_reduce sum over [0] does not apply to (S0): mesh axis 0 is S0, not P(sum)}}
  %0 = hspmd.all_reduce sum %x over [0] of [2] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1]: [S0:2]}> to #hspmd.union<{[0, 1]: [D:2]}>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @all_reduce_wrong_kind(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{`from` -> `to` is (P(max)) -> (D) on mesh [2], but all_reduce sum over [0] does not apply to (P(max)): mesh axis 0 is P(max), not P(sum)}}
  %0 = hspmd.all_reduce sum %x over [0] of [2] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1]: [P(max):2]}> to #hspmd.union<{[0, 1]: [D:2]}>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @all_gather_other_axis_changes(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{`from` -> `to` is (S0, S1) -> (D, D) on mesh [2, 2], but all_gather dim 0 over [0] makes (D, S1)}}
  %0 = hspmd.all_gather %x dim 0 over [0] of [2, 2] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}> to #hspmd.union<{[0, 1, 2, 3]: [D:4]}>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @all_gather_outer_axis(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{`from` -> `to` is (S0, S0) -> (D, S0) on mesh [2, 2], but all_gather dim 0 over [0] does not apply to (S0, S0): mesh axis 1 also has S0 and comes after mesh axis 0, so the blocks would not nest}}
  %0 = hspmd.all_gather %x dim 0 over [0] of [2, 2] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1, 2, 3]: [S0:4]}> to #hspmd.union<{[0, 1, 2, 3]: [D:2, S0:2]}>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @reduce_scatter_wrong_dim(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{`from` -> `to` is (P(sum)) -> (S1) on mesh [2], but reduce_scatter sum dim 0 over [0] makes (S0)}}
  %0 = hspmd.reduce_scatter sum %x dim 0 over [0] of [2] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[0, 1]: [S1:2]}>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @all_to_all_wrong_source(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{`from` -> `to` is (S1) -> (S0) on mesh [2], but all_to_all split 1 concat 0 over [0] does not apply to (S1): mesh axis 0 is S1, not S0}}
  %0 = hspmd.all_to_all %x split 1 concat 0 over [0] of [2] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1]: [S1:2]}> to #hspmd.union<{[0, 1]: [S0:2]}>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @make_partial_of_partial(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{`from` -> `to` is (P(sum)) -> (P(sum)) on mesh [2], but make_partial over [0] does not apply to (P(sum)): mesh axis 0 is P(sum), not D}}
  %0 = hspmd.make_partial %x over [0] of [2] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[0, 1]: [P(sum):2]}>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @local_slice_of_split(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{`from` -> `to` is (S0) -> (S1) on mesh [2], but local_slice dim 1 over [0] does not apply to (S0): mesh axis 0 is S0, not D}}
  %0 = hspmd.local_slice %x dim 1 over [0] of [2] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1]: [S0:2]}> to #hspmd.union<{[0, 1]: [S1:2]}>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @local_slice_outer(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{`from` -> `to` is (D, S0) -> (S0, S0) on mesh [2, 2], but local_slice dim 0 over [0] does not apply to (D, S0): mesh axis 1 also has S0 and comes after mesh axis 0, so the blocks would not nest}}
  %0 = hspmd.local_slice %x dim 0 over [0] of [2, 2] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1, 2, 3]: [D:2, S0:2]}> to #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @permute_wrong_result(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{`from` -> `to` is (S0, D) -> (S0, S1) on mesh [2, 2], but permute perm [1, 0] over [0, 1] makes (D, S0)}}
  %0 = hspmd.permute %x perm [1, 0] over [0, 1] of [2, 2] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}> to #hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @permute_renumbers(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{`from` -> `to` is (S0, S0) -> (S0, S0) on mesh [2, 2], but permute perm [1, 0] over [0, 1] does not apply to (S0, S0): perm swaps the order of mesh axes 0 and 1 that both have S0, which renumbers the blocks}}
  %0 = hspmd.permute %x perm [1, 0] over [0, 1] of [2, 2] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1, 2, 3]: [S0:4]}> to #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @mesh_not_common(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{`from` layout #hspmd.states<[S0:2, S1:2]> cannot be read on the mesh [4] (its degrees do not cover whole mesh axes); the mesh must be the common mesh of `from` and `to` or a refinement of it}}
  %0 = hspmd.all_gather %x dim 1 over [0] of [4] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}> to #hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>
  return %0 : tensor<8x8xf32>
}

// -----

// A collective moves equal blocks: uneven ones go through hspmd.exchange.
func.func @all_gather_uneven(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{`from` layout #hspmd.union<{[0, 1, 2]: [S0:3]}> cuts dimension 0 into blocks of unequal size along mesh axis 0, which the collective runs over; a collective moves equal blocks (an hspmd.exchange moves uneven ones)}}
  %0 = hspmd.all_gather %x dim 0 over [0] of [3] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1, 2]: [S0:3]}> to #hspmd.union<{[0, 1, 2]: [D:3]}>
  return %0 : tensor<8x8xf32>
}

// -----

// On an axis that cuts no uneven dimension, the devices of a sub-group hold
// equal blocks: fine.
func.func @all_reduce_beside_uneven(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = hspmd.all_reduce sum %x over [1] of [3, 2] : tensor<8x4xf32> -> tensor<8x4xf32> from #hspmd.union<{[0, 1, 2, 3, 4, 5]: [S0:3, P(sum):2]}> to #hspmd.union<{[0, 1, 2, 3, 4, 5]: [S0:3, D:2]}>
  return %0 : tensor<8x4xf32>
}
