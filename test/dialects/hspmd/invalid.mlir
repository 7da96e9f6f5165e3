// RUN: loom-opt %s -split-input-file -verify-diagnostics

// The degree product of a single group's states must equal the group size.
func.func @degree_product(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{union member 0 has 4 devices but its states span 2}}
  %0 = hspmd.annotate %x : tensor<8x8xf32> as #hspmd.union<{[0, 1, 2, 3]: [S0:2]}>
  return
}

// -----

// A later member of a union whose group size does not match its states.
func.func @member_size(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{union member 1 has 2 devices but its states span 4}}
  %0 = hspmd.annotate %x : tensor<8x8xf32> as #hspmd.union<split(0): {[0, 1]: [S1:2]}, {[2, 3]: [S1:4]}>
  return
}

// -----

// A split that does not divide its dimension is balanced, but no block may
// be empty.
func.func @empty_block(%x: tensor<3x8xf32>) {
  // expected-error @+1 {{dimension 0: a dimension of size 3 cannot be split 4 ways (S0:4) without an empty block}}
  %0 = hspmd.annotate %x : tensor<3x8xf32> as #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>
  return
}

// -----

// Explicit block sizes cover the dimension exactly.
func.func @block_sizes_sum(%x: tensor<4x32xf32>) {
  // expected-error @+1 {{dimension 1: the block sizes of S1:[16, 8, 4] sum to 28 but the dimension they cut has size 32}}
  %0 = hspmd.annotate %x : tensor<4x32xf32> as #hspmd.union<{[0, 1, 2]: [S1:[16, 8, 4]]}>
  return
}

// -----

// Explicit block sizes are positive.
func.func @block_size_zero(%x: tensor<4x32xf32>) {
  // expected-error @+1 {{axis S1:[32, 0] has a block of size 0; expected at least 1}}
  %0 = hspmd.annotate %x : tensor<4x32xf32> as #hspmd.union<{[0, 1]: [S1:[32, 0]]}>
  return
}

// -----

// Block sizes belong to split axes.
func.func @block_sizes_duplicate(%x: tensor<4x32xf32>) {
  // expected-error @+1 {{expected integer value}}
  %0 = hspmd.annotate %x : tensor<4x32xf32> as #hspmd.union<{[0, 1]: [D:[1, 1]]}>
  return
}

// -----

// A member's explicit blocks cover the share of the dimension its group
// holds.
func.func @share_split(%x: tensor<64x8xf32>) {
  // expected-error @+1 {{union member 1's share of dimension 0 (size 16): the block sizes of S0:[8, 4, 2] sum to 14 but the dimension they cut has size 16}}
  %0 = hspmd.annotate %x : tensor<64x8xf32> as #hspmd.union<split(0) shares [3, 1]: {[0]: []}, {[1, 2, 3]: [S0:[8, 4, 2]]}>
  return
}

// -----

// Explicit sizes must cover the dimension.
func.func @sizes_cover(%x: tensor<64x8xf32>) {
  // expected-error @+1 {{sizes [40, 16] cover 56 of dimension 0 of size 64}}
  %0 = hspmd.annotate %x : tensor<64x8xf32> as #hspmd.union<split(0) sizes [40, 16]: {[0]: []}, {[1]: []}>
  return
}

// -----

// A ratio must divide the dimension exactly.
func.func @ratio_cover(%x: tensor<10x8xf32>) {
  // expected-error @+1 {{shares [3, 1] do not divide dimension 0 of size 10 exactly; give explicit sizes}}
  %0 = hspmd.annotate %x : tensor<10x8xf32> as #hspmd.union<split(0) shares [3, 1]: {[0]: []}, {[1]: []}>
  return
}

// -----

// Without shares, the groups split the dimension equally.
func.func @equal_cover(%x: tensor<10x8xf32>) {
  // expected-error @+1 {{dimension 0 of size 10 cannot be split equally among 3 groups; give shares or sizes}}
  %0 = hspmd.annotate %x : tensor<10x8xf32> as #hspmd.union<split(0): {[0]: []}, {[1]: []}, {[2]: []}>
  return
}

// -----

// The groups of a union must be disjoint.
func.func @overlap(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{union members 0 and 1 overlap: groups [0, 1] and [1, 2]}}
  %0 = hspmd.annotate %x : tensor<8x8xf32> as #hspmd.union<replicated: {[0, 1]: [D:2]}, {[1, 2]: [D:2]}>
  return
}

// -----

// Every device a layout names must be in the module's cluster.
module attributes {hspmd.cluster = #hspmd.cluster<[
    #hspmd.device<0, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<1, "h200", speed = 1.0, mem = 141, node = 0>]>} {
  func.func @missing_device(%x: tensor<8x8xf32>) {
    // expected-error @+1 {{'hspmd.annotate' op uses device 7, which is not in the module's cluster}}
    %0 = hspmd.annotate %x : tensor<8x8xf32> as #hspmd.union<{[0, 7]: [S0:2]}>
    return
  }
}

// -----

// The cluster check also covers reshards and strategy sets.
module attributes {hspmd.cluster = #hspmd.cluster<[
    #hspmd.device<0, "cpu", speed = 1.0, mem = 8, node = 0>,
    #hspmd.device<1, "cpu", speed = 1.0, mem = 8, node = 0>]>} {
  func.func @missing_device_reshard(%x: tensor<8x8xf32>) {
    // expected-error @+1 {{'hspmd.reshard' op uses device 2, which is not in the module's cluster}}
    %0 = hspmd.reshard %x : tensor<8x8xf32>
           from #hspmd.strategies<["a" = <{[0, 1]: [S0:2]}>], optimizer = "a">
           to #hspmd.strategies<["a" = <{[0, 2]: [S0:2]}>], optimizer = "a">
    return
  }
}

// -----

// A dimension is split at most once.
// expected-error @+1 {{axis S0:2 repeats S0:2 in the order; each dimension is split at most once and D and P appear at most once}}
func.func @repeated_split() attributes {s = #hspmd.states<[S0:2, S1:2, S0:2]>} {
  return
}

// -----

// There is at most one duplicate axis.
// expected-error @+1 {{axis D:3 repeats D:2 in the order}}
func.func @repeated_duplicate() attributes {s = #hspmd.states<[D:2, D:3]>} {
  return
}

// -----

// A partial axis names its reduction kind.
// expected-error @+1 {{partial axis needs a reduction kind, e.g. P(sum):2}}
func.func @partial_kind() attributes {s = #hspmd.states<[P:2]>} {
  return
}

// -----

// Reduction kinds are sum, mean, max and min.
// expected-error @+1 {{unknown reduction kind 'avg'; expected sum, mean, max or min}}
func.func @partial_unknown_kind() attributes {s = #hspmd.states<[P(avg):2]>} {
  return
}

// -----

// Axes are S<dim>, D and P.
// expected-error @+1 {{unknown axis 'X'; expected S<dim>:<degree>, S<dim>:[<sizes>], D:<degree> or P(<kind>):<degree>}}
func.func @unknown_axis() attributes {s = #hspmd.states<[X:2]>} {
  return
}

// -----

// Degrees are at least 1.
// expected-error @+1 {{axis S0:0 has degree 0; expected at least 1}}
func.func @zero_degree() attributes {s = #hspmd.states<[S0:0]>} {
  return
}

// -----

// An annotation's splits must be within the tensor's rank.
func.func @rank(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{axis S2:2 of union member 0 splits dimension 2 but the tensor has rank 2}}
  %0 = hspmd.annotate %x : tensor<8x8xf32> as #hspmd.union<{[0, 1]: [S2:2]}>
  return
}

// -----

// A union's split dimension must be within the tensor's rank.
func.func @union_rank(%x: tensor<8xf32>) {
  // expected-error @+1 {{union splits dimension 1 but the tensor has rank 1}}
  %0 = hspmd.annotate %x : tensor<8xf32> as #hspmd.union<split(1): {[0]: []}, {[1]: []}>
  return
}

// -----

// A mean-partial across groups with unequal shares would average averages.
func.func @mean_unequal(%x: tensor<8xf32>) {
  // expected-error @+1 {{a mean-partial across groups with unequal shares [3, 1] averages averages; use partial(sum) and scale by the global count}}
  %0 = hspmd.annotate %x : tensor<8xf32> as #hspmd.union<partial(mean) shares [3, 1]: {[0, 1, 2]: [D:3]}, {[3]: []}>
  return
}

// -----

// A group's local partial kind must be the union's.
func.func @partial_mix(%x: tensor<8xf32>) {
  // expected-error @+1 {{union member 0 is partial with max but the union is partial with sum}}
  %0 = hspmd.annotate %x : tensor<8xf32> as #hspmd.union<partial(sum): {[0, 1]: [P(max):2]}, {[2]: []}>
  return
}

// -----

// A group is not empty.
func.func @empty_group(%x: tensor<8xf32>) {
  // expected-error @+1 {{device group is empty}}
  %0 = hspmd.annotate %x : tensor<8xf32> as #hspmd.union<{[]: []}>
  return
}

// -----

// A device appears once in a group.
func.func @duplicate_device(%x: tensor<8xf32>) {
  // expected-error @+1 {{device 1 appears twice in group [0, 1, 1]}}
  %0 = hspmd.annotate %x : tensor<8xf32> as #hspmd.union<{[0, 1, 1]: [D:3]}>
  return
}

// -----

// Device ids are non-negative.
// expected-error @+1 {{device id -1 is negative}}
func.func @negative_device() attributes {g = #hspmd.group<[0, -1]>} {
  return
}

// -----

// A union of several groups states how they relate.
func.func @no_relation(%x: tensor<8xf32>) {
  // expected-error @+1 {{a union of 2 groups needs a relation: replicated, split(<dim>) or partial(<kind>)}}
  %0 = hspmd.annotate %x : tensor<8xf32> as #hspmd.union<{[0]: []}, {[1]: []}>
  return
}

// -----

// Replicated groups take no shares.
// expected-error @+1 {{a replicated union takes no shares}}
func.func @replicated_shares() attributes {u = #hspmd.union<replicated shares [1, 1]: {[0]: []}, {[1]: []}>} {
  return
}

// -----

// There is one share per group.
func.func @share_count(%x: tensor<8xf32>) {
  // expected-error @+1 {{union has 2 groups but 3 shares}}
  %0 = hspmd.annotate %x : tensor<8xf32> as #hspmd.union<split(0) shares [1, 2, 1]: {[0]: []}, {[1]: []}>
  return
}

// -----

// Shares are positive.
func.func @zero_share(%x: tensor<8xf32>) {
  // expected-error @+1 {{share 0 is not positive}}
  %0 = hspmd.annotate %x : tensor<8xf32> as #hspmd.union<split(0) sizes [8, 0]: {[0]: []}, {[1]: []}>
  return
}

// -----

// Strategy names are distinct.
// expected-error @+1 {{strategy 'tp' is named twice}}
func.func @strategy_twice() attributes {s = #hspmd.strategies<["tp" = <{[0]: []}>, "tp" = <{[1]: []}>], optimizer = "tp">} {
  return
}

// -----

// The optimizer strategy is one of the set.
// expected-error @+1 {{optimizer strategy 'zero' is not in the set}}
func.func @strategy_optimizer() attributes {s = #hspmd.strategies<["tp" = <{[0]: []}>], optimizer = "zero">} {
  return
}

// -----

// Every strategy of an annotation fits the tensor.
func.func @strategy_shape(%x: tensor<3xf32>) {
  // expected-error @+1 {{strategy 'dp': dimension 0: a dimension of size 3 cannot be split 4 ways (S0:4) without an empty block}}
  %0 = hspmd.annotate %x : tensor<3xf32> as #hspmd.strategies<["tp" = <{[0, 1]: [S0:2]}>, "dp" = <{[0, 1, 2, 3]: [S0:4]}>], optimizer = "dp">
  return
}

// -----

// Device ids are distinct in a cluster.
// expected-error @+1 {{device id 0 appears twice in the cluster}}
module attributes {hspmd.cluster = #hspmd.cluster<[
    #hspmd.device<0, "h200", speed = 1.0, mem = 141, node = 0>,
    #hspmd.device<0, "910b", speed = 0.5, mem = 64, node = 1>]>} {
}

// -----

// Devices have a positive speed.
// expected-error @+1 {{device 3 has speed -1; expected a positive number}}
func.func @speed() attributes {d = #hspmd.device<3, "h200", speed = -1.0, mem = 141, node = 0>} {
  return
}

// -----

// Devices have positive memory.
// expected-error @+1 {{device 3 has memory 0 GiB; expected a positive number}}
func.func @memory() attributes {d = #hspmd.device<3, "h200", speed = 1.0, mem = 0, node = 0>} {
  return
}

// -----

// The cluster belongs on a module.
// expected-error @+1 {{'hspmd.cluster' belongs on a builtin.module}}
func.func @cluster_on_func() attributes {hspmd.cluster = #hspmd.cluster<[#hspmd.device<0, "cpu", speed = 1.0, mem = 8, node = 0>]>} {
  return
}

// -----

// The cluster attribute holds a cluster.
// expected-error @+1 {{'hspmd.cluster' must be a #hspmd.cluster, got 3 : i64}}
module attributes {hspmd.cluster = 3} {
}

// -----

// hspmd knows no other discardable attribute.
// expected-error @+1 {{unknown hspmd attribute 'hspmd.clusters'}}
module attributes {hspmd.clusters = 3} {
}

// -----

// A reshard goes between layouts of the same kind.
func.func @reshard_kinds(%x: tensor<8xf32>) {
  // expected-error @+1 {{reshards between a union and a strategy set; both layouts must be of the same kind}}
  %0 = hspmd.reshard %x : tensor<8xf32> from #hspmd.union<{[0]: []}> to #hspmd.strategies<["a" = <{[0]: []}>], optimizer = "a">
  return
}

// -----

// Reshards between strategy sets keep the strategy names.
func.func @reshard_names(%x: tensor<8xf32>) {
  // expected-error @+1 {{source and target strategy sets name different strategies}}
  %0 = hspmd.reshard %x : tensor<8xf32> from #hspmd.strategies<["a" = <{[0]: []}>], optimizer = "a"> to #hspmd.strategies<["b" = <{[0]: []}>], optimizer = "b">
  return
}

// -----

// A reshard's target fits the tensor too.
func.func @reshard_target(%x: tensor<3xf32>) {
  // expected-error @+1 {{target layout: dimension 0: a dimension of size 3 cannot be split 4 ways (S0:4) without an empty block}}
  %0 = hspmd.reshard %x : tensor<3xf32> from #hspmd.union<{[0, 1, 2, 3]: [D:4]}> to #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>
  return
}

// -----

// An annotation's layout is a union or a strategy set.
func.func @annotate_group(%x: tensor<8xf32>) {
  // expected-error @+1 {{attribute 'layout' failed to satisfy constraint}}
  %0 = hspmd.annotate %x : tensor<8xf32> as #hspmd.group<[0, 1]>
  return
}

// -----

// Annotations apply to ranked tensors.
func.func @annotate_unranked(%x: tensor<*xf32>) {
  // expected-error @+1 {{invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %0 = hspmd.annotate %x : tensor<*xf32> as #hspmd.union<{[0]: []}>
  return
}

// -----

// Replicated groups hold complete values, not partial sums.
func.func @replicated_partial(%x: tensor<8xf32>) {
  // expected-error @+1 {{union member 0 of a replicated union is partial (sum); replicated groups hold complete values, use partial(<kind>) to combine contributions across groups}}
  %0 = hspmd.annotate %x : tensor<8xf32> as #hspmd.union<replicated: {[0, 1]: [P(sum):2]}, {[2]: []}>
  return
}

// -----

// The members of a split union agree on the pending reduction.
func.func @split_partial_mix(%x: tensor<8xf32>) {
  // expected-error @+1 {{union members 0 and 1 of a split union disagree on the pending reduction (sum vs none)}}
  %0 = hspmd.annotate %x : tensor<8xf32> as #hspmd.union<split(0): {[0, 1]: [P(sum):2]}, {[2]: []}>
  return
}

// -----

// Explicit sizes give one size per group.
func.func @empty_sizes(%x: tensor<8xf32>) {
  // expected-error @+1 {{union has 2 groups but 0 shares}}
  %0 = hspmd.annotate %x : tensor<8xf32> as #hspmd.union<split(0) sizes []: {[0]: []}, {[1]: []}>
  return
}

// -----

// Degrees whose product overflows are rejected, not wrapped.
func.func @degree_overflow(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{the degrees of the axes overflow a 64-bit device count}}
  %0 = hspmd.annotate %x : tensor<8x8xf32> as #hspmd.union<{[0]: [S0:7, S1:7905747460161236407]}>
  return
}

// -----

// Shares whose total overflows are rejected.
func.func @share_overflow(%x: tensor<8xf32>) {
  // expected-error @+1 {{shares [9223372036854775807, 1] overflow a 64-bit total}}
  %0 = hspmd.annotate %x : tensor<8xf32> as #hspmd.union<split(0) shares [9223372036854775807, 1]: {[0]: []}, {[1]: []}>
  return
}

// -----

func.func @collective_axis_range(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{mesh axis 2 is out of range for a mesh of 2 axes}}
  %0 = hspmd.all_reduce sum %x over [2] of [2, 2] : tensor<8x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @collective_axes_order(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{mesh axes must be strictly increasing}}
  %0 = hspmd.all_reduce sum %x over [1, 0] of [2, 2] : tensor<8x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @collective_mesh_size(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{mesh sizes must be at least 1, got 0}}
  %0 = hspmd.all_reduce sum %x over [0] of [0] : tensor<8x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @collective_no_axes(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{needs at least one mesh axis to run over}}
  %0 = hspmd.all_reduce sum %x over [] of [2] : tensor<8x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @collective_reduction_kind(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{expected a reduction kind (sum, mean, max or min), got 'prod'}}
  %0 = hspmd.all_reduce prod %x over [0] of [2] : tensor<8x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @all_gather_shape(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{result dimension 0 must be 8 over sub-groups of 4 devices, got 6}}
  %0 = hspmd.all_gather %x dim 0 over [0, 1] of [2, 2] : tensor<2x8xf32> -> tensor<6x8xf32>
  return
}

// -----

func.func @all_gather_dim(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{`dim` 2 is not a dimension of a rank-2 tensor}}
  %0 = hspmd.all_gather %x dim 2 over [0] of [2] : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @reduce_scatter_divide(%x: tensor<6x8xf32>) {
  // expected-error @+1 {{dimension 0 of size 6 does not divide among sub-groups of 4 devices}}
  %0 = hspmd.reduce_scatter sum %x dim 0 over [0] of [4] : tensor<6x8xf32> -> tensor<1x8xf32>
  return
}

// -----

func.func @all_to_all_same_dim(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{`split` and `concat` must be different dimensions}}
  %0 = hspmd.all_to_all %x split 0 concat 0 over [0] of [2] : tensor<8x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @permute_identity(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{`perm` is the identity: nothing moves}}
  %0 = hspmd.permute %x perm [0, 1] over [0, 1] of [2, 2] : tensor<8x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @permute_sizes(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{`perm` exchanges digits of mesh axes 0 and 1 of different sizes (2 and 4)}}
  %0 = hspmd.permute %x perm [1, 0] over [0, 1] of [2, 4] : tensor<8x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @permute_not_permutation(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{`perm` must be a permutation of 0 .. 1}}
  %0 = hspmd.permute %x perm [1, 1] over [0, 1] of [2, 2] : tensor<8x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @collective_global_one_layout(%x: tensor<8x8xf32>) {
  // expected-error @+2 {{expected 'to'}}
  %0 = hspmd.all_reduce sum %x over [0] of [2] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1]: [P(sum):2]}>
  return
}

// -----

func.func @collective_global_type(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{in the global view (with layouts) the result has the operand's type}}
  %0 = hspmd.all_gather %x dim 0 over [0] of [2] : tensor<8x8xf32> -> tensor<16x8xf32> from #hspmd.union<{[0, 1]: [S0:2]}> to #hspmd.union<{[0, 1]: [D:2]}>
  return
}

// -----

func.func @collective_global_mesh(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{`from` layout: its group has 2 devices but the mesh has 4}}
  %0 = hspmd.all_reduce sum %x over [0] of [4] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[0, 1]: [D:2]}>
  return
}

// -----

func.func @collective_global_groups(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{`from` and `to` must be on the same device group}}
  %0 = hspmd.all_reduce sum %x over [0] of [2] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[2, 3]: [D:2]}>
  return
}

// -----

func.func @collective_global_union(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{`to` layout: a collective runs inside one device group}}
  %0 = hspmd.all_reduce sum %x over [0] of [2] : tensor<8x8xf32> -> tensor<8x8xf32> from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<replicated: {[0]: []}, {[1]: []}>
  return
}

// -----

// A function argument's layout must fit the argument's type.
// expected-error @+1 {{layout of argument 0: dimension 1: the block sizes of S1:[3, 1, 1, 2] sum to 7 but the dimension they cut has size 6}}
func.func @arg_layout_shape(%x: tensor<8x6xf32> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S1:[3, 1, 1, 2]]}>}) {
  return
}

// -----

// A function result's layout must be a layout.
// expected-error @+1 {{'hspmd.layout' of result 0 must be a #hspmd.union or #hspmd.strategies, got 3 : i64}}
func.func @result_layout_kind(%x: tensor<8xf32>) -> (tensor<8xf32> {hspmd.layout = 3}) {
  return %x : tensor<8xf32>
}

// -----

// Only ranked tensors have layouts.
// expected-error @+1 {{'hspmd.layout' on argument 0 of type 'f32'; layouts apply to ranked tensors}}
func.func @arg_layout_scalar(%x: f32 {hspmd.layout = #hspmd.union<{[0]: []}>}) {
  return
}

// -----

// Unknown hspmd argument attributes are rejected.
// expected-error @+1 {{unknown hspmd argument attribute 'hspmd.layouts'}}
func.func @arg_unknown(%x: tensor<8xf32> {hspmd.layouts = #hspmd.union<{[0]: []}>}) {
  return
}

// -----

// An op's layouts give one union per ranked tensor result.
func.func @result_layouts_count(%x: tensor<8xf32>) {
  // expected-error @+1 {{'hspmd.result_layouts' has 2 layouts for 1 ranked tensor results}}
  %0 = nn.neg %x {hspmd.result_layouts = [#hspmd.union<{[0]: []}>, #hspmd.union<{[0]: []}>]} : tensor<8xf32>
  return
}

// -----

// ... each fitting its tensor.
func.func @operand_layouts_shape(%x: tensor<3xf32>) {
  // expected-error @+1 {{layout of tensor operand 0: dimension 0: a dimension of size 3 cannot be split 4 ways (S0:4) without an empty block}}
  %0 = nn.neg %x {hspmd.operand_layouts = [#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>]} : tensor<3xf32>
  return
}

// -----

// ... and being unions.
func.func @operand_layouts_kind(%x: tensor<6xf32>) {
  // expected-error @+1 {{'hspmd.operand_layouts' entry 0 must be a #hspmd.union, got #hspmd.states<[]>}}
  %0 = nn.neg %x {hspmd.operand_layouts = [#hspmd.states<[]>]} : tensor<6xf32>
  return
}

// -----

func.func @axis_index_range() -> tensor<i64> {
  // expected-error @+1 {{mesh axis 2 is out of range for a mesh of 2 axes}}
  %0 = hspmd.axis_index over [2] of [2, 2] : tensor<i64>
  return %0 : tensor<i64>
}

// -----

func.func @axis_index_order() -> tensor<i64> {
  // expected-error @+1 {{mesh axes must be strictly increasing}}
  %0 = hspmd.axis_index over [1, 1] of [2, 2] : tensor<i64>
  return %0 : tensor<i64>
}

// -----

func.func @exchange_to_partial(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{target layout #hspmd.union<partial(sum): {[0, 1]: [D:2]}, {[2]: []}> holds partial sums; an exchange delivers complete values}}
  %0 = hspmd.exchange %x shape [8, 8] : tensor<8x8xf32> -> tensor<8x8xf32>
      from #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>
      to #hspmd.union<partial(sum): {[0, 1]: [D:2]}, {[2]: []}>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @exchange_max(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{is not a partial sum; only sums are exchanged}}
  %0 = hspmd.exchange %x shape [8, 8] : tensor<8x8xf32> -> tensor<8x8xf32>
      from #hspmd.union<partial(max): {[0, 1]: [D:2]}, {[2]: []}>
      to #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @exchange_partial_inside(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{holds partial sums inside a group as well as across groups; reduce inside the groups first}}
  %0 = hspmd.exchange %x shape [8, 8] : tensor<8x8xf32> -> tensor<8x8xf32>
      from #hspmd.union<partial(sum): {[0, 1]: [P(sum):2]}, {[2]: []}>
      to #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @exchange_rank(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{operand and result must have the rank of the shape (2)}}
  %0 = hspmd.exchange %x shape [8, 8] : tensor<8xf32> -> tensor<8xf32>
      from #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>
      to #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>
  return %0 : tensor<8xf32>
}

// -----

func.func @exchange_shape(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{source layout: }}
  %0 = hspmd.exchange %x shape [8, 8] : tensor<8x8xf32> -> tensor<8x8xf32>
      from #hspmd.union<split(0) sizes [5, 2]: {[0, 1]: [D:2]}, {[2]: []}>
      to #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @exchange_element_type(%x: tensor<8x8xf64>) -> tensor<8x8xf32> {
  // expected-error @+1 {{operand and result must have the same element type}}
  %0 = hspmd.exchange %x shape [8, 8] : tensor<8x8xf64> -> tensor<8x8xf32>
      from #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>
      to #hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>
  return %0 : tensor<8x8xf32>
}

// -----

func.func @sparse_rows_type(%x: tensor<8x4xf32>, %r: tensor<4xi32>) {
  // expected-error @+1 {{`rows` must hold i64 row indices, got 'i32'}}
  %0 = hspmd.sparse_reduce_scatter %x rows %r over [0] of [2] : tensor<8x4xf32>, tensor<4xi32> -> tensor<4x4xf32>
  return
}

// -----

func.func @sparse_scalar(%x: tensor<f32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{needs an operand of rank 1 or more (its rows)}}
  %0 = hspmd.sparse_reduce_scatter %x rows %r over [0] of [2] : tensor<f32>, tensor<4xi64> -> tensor<f32>
  return
}

// -----

func.func @sparse_divide(%x: tensor<6x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{dimension 0 of size 6 does not divide among sub-groups of 4 devices}}
  %0 = hspmd.sparse_reduce_scatter %x rows %r over [0, 1] of [2, 2] : tensor<6x4xf32>, tensor<4xi64> -> tensor<2x4xf32>
  return
}

// -----

func.func @sparse_result(%x: tensor<8x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{result dimension 0 must be 4 over sub-groups of 2 devices, got 8}}
  %0 = hspmd.sparse_reduce_scatter %x rows %r over [0] of [2] : tensor<8x4xf32>, tensor<4xi64> -> tensor<8x4xf32>
  return
}

// -----

func.func @sparse_axes(%x: tensor<8x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{mesh axis 1 is out of range for a mesh of 1 axes}}
  %0 = hspmd.sparse_reduce_scatter %x rows %r over [1] of [2] : tensor<8x4xf32>, tensor<4xi64> -> tensor<4x4xf32>
  return
}

// -----

func.func @gather_rows_type(%x: tensor<4x4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{`rows` must hold i64 row indices, got 'f32'}}
  %0 = hspmd.sparse_all_gather %x rows %r over [0] of [2] : tensor<4x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @gather_result(%x: tensor<4x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{result dimension 0 must be 16 over sub-groups of 4 devices, got 8}}
  %0 = hspmd.sparse_all_gather %x rows %r over [0, 1] of [2, 2] : tensor<4x4xf32>, tensor<4xi64> -> tensor<8x4xf32>
  return
}

// -----

func.func @gather_element(%x: tensor<4x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{operand and result must have the same element type and rank}}
  %0 = hspmd.sparse_all_gather %x rows %r over [0] of [2] : tensor<4x4xf32>, tensor<4xi64> -> tensor<8x4xf64>
  return
}

// -----

func.func @start_rows_type(%x: tensor<4x4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{`rows` must hold i64 row indices, got 'f32'}}
  %0 = hspmd.sparse_all_gather_start %x rows %r over [0] of [2] : tensor<4x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
  %1 = hspmd.wait %0 keep(%x, %r : tensor<4x4xf32>, tensor<4xf32>) : tensor<8x4xf32>
  return
}

// -----

func.func @start_without_wait(%x: tensor<4x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{must have one user, the hspmd.wait that completes it}}
  %0 = hspmd.sparse_all_gather_start %x rows %r over [0] of [2] : tensor<4x4xf32>, tensor<4xi64> -> tensor<8x4xf32>
  return
}

// -----

func.func @start_read_early(%x: tensor<4x4xf32>, %r: tensor<4xi64>) -> tensor<8x4xf32> {
  // expected-error @+1 {{must have one user, the hspmd.wait that completes it}}
  %0 = hspmd.sparse_all_gather_start %x rows %r over [0] of [2] : tensor<4x4xf32>, tensor<4xi64> -> tensor<8x4xf32>
  %1 = hspmd.wait %0 keep(%x, %r : tensor<4x4xf32>, tensor<4xi64>) : tensor<8x4xf32>
  %2 = nn.add %0, %1 : tensor<8x4xf32>, tensor<8x4xf32>
  return %2 : tensor<8x4xf32>
}

// -----

func.func @start_waited_twice(%x: tensor<4x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{must have one user, the hspmd.wait that completes it}}
  %0 = hspmd.sparse_all_gather_start %x rows %r over [0] of [2] : tensor<4x4xf32>, tensor<4xi64> -> tensor<8x4xf32>
  %1 = hspmd.wait %0 keep(%x, %r : tensor<4x4xf32>, tensor<4xi64>) : tensor<8x4xf32>
  %2 = hspmd.wait %0 keep(%x, %r : tensor<4x4xf32>, tensor<4xi64>) : tensor<8x4xf32>
  return
}

// -----

func.func @wait_keeps_other(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>, %r: tensor<4xi64>) {
  %0 = hspmd.sparse_all_gather_start %x rows %r over [0] of [2] : tensor<4x4xf32>, tensor<4xi64> -> tensor<8x4xf32>
  // expected-error @+1 {{must keep exactly its start's operands (2), in order}}
  %1 = hspmd.wait %0 keep(%y, %r : tensor<4x4xf32>, tensor<4xi64>) : tensor<8x4xf32>
  return
}

// -----

func.func @wait_keeps_too_few(%x: tensor<4x4xf32>, %r: tensor<4xi64>) {
  %0 = hspmd.sparse_all_gather_start %x rows %r over [0] of [2] : tensor<4x4xf32>, tensor<4xi64> -> tensor<8x4xf32>
  // expected-error @+1 {{must keep exactly its start's operands (2), in order}}
  %1 = hspmd.wait %0 keep(%x : tensor<4x4xf32>) : tensor<8x4xf32>
  return
}

// -----

func.func @weight_fetch_elsewhere(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'hspmd.weight_fetch' marks an hspmd.sparse_all_gather (or its start) as a unit attribute}}
  %0 = hspmd.all_gather %x dim 0 over [0] of [2] : tensor<8x4xf32> -> tensor<16x4xf32> {hspmd.weight_fetch}
  return
}

// -----

func.func @wait_no_start(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{waits for a value no start op made}}
  %1 = hspmd.wait %x keep(%x : tensor<8x4xf32>) : tensor<8x4xf32>
  return
}

// -----

func.func @exchange_rows_type(%x: tensor<8x4xf32>, %r: tensor<4xi32>) {
  // expected-error @+1 {{`rows` must hold i64 row indices, got 'i32'}}
  %0 = hspmd.sparse_exchange %x rows %r among [0, 1] blocks [0, 4, 4, 4] : tensor<8x4xf32>, tensor<4xi32> -> tensor<4x4xf32>
  return
}

// -----

func.func @exchange_scalar(%x: tensor<f32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{needs an operand of rank 1 or more (its rows)}}
  %0 = hspmd.sparse_exchange %x rows %r among [0] blocks [0, 1] : tensor<f32>, tensor<4xi64> -> tensor<f32>
  return
}

// -----

func.func @exchange_width(%x: tensor<8x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{result 'tensor<4x2xf32>' and operand 'tensor<8x4xf32>' must be rows of one tensor}}
  %0 = hspmd.sparse_exchange %x rows %r among [0, 1] blocks [0, 4, 4, 4] : tensor<8x4xf32>, tensor<4xi64> -> tensor<4x2xf32>
  return
}

// -----

func.func @exchange_order(%x: tensor<8x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{`among` must list devices in strictly increasing order}}
  %0 = hspmd.sparse_exchange %x rows %r among [1, 1] blocks [0, 4, 4, 4] : tensor<8x4xf32>, tensor<4xi64> -> tensor<4x4xf32>
  return
}

// -----

func.func @exchange_negative(%x: tensor<8x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{device ids must be non-negative, got -1}}
  %0 = hspmd.sparse_exchange %x rows %r among [-1, 1] blocks [0, 4, 4, 4] : tensor<8x4xf32>, tensor<4xi64> -> tensor<4x4xf32>
  return
}

// -----

func.func @exchange_empty(%x: tensor<8x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{needs at least one device in `among`}}
  %0 = hspmd.sparse_exchange %x rows %r among [] blocks [] : tensor<8x4xf32>, tensor<4xi64> -> tensor<4x4xf32>
  return
}

// -----

func.func @exchange_pairs(%x: tensor<8x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{`blocks` needs a first row and a size per member (4 values), got 3}}
  %0 = hspmd.sparse_exchange %x rows %r among [0, 1] blocks [0, 4, 4] : tensor<8x4xf32>, tensor<4xi64> -> tensor<4x4xf32>
  return
}

// -----

func.func @exchange_outside(%x: tensor<8x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{the block of device 1, rows [4, 10), is not inside the operand's 8 rows}}
  %0 = hspmd.sparse_exchange %x rows %r among [0, 1] blocks [0, 4, 4, 6] : tensor<8x4xf32>, tensor<4xi64> -> tensor<4x4xf32>
  return
}

// -----

func.func @exchange_result(%x: tensor<8x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{result of 3 rows is no member's block}}
  %0 = hspmd.sparse_exchange %x rows %r among [0, 1] blocks [0, 2, 2, 6] : tensor<8x4xf32>, tensor<4xi64> -> tensor<3x4xf32>
  return
}

// -----

func.func @exchange_gather_outside(%x: tensor<4x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{the block of device 1, rows [4, 8), is not inside the result's 6 rows}}
  %0 = hspmd.sparse_exchange gather %x rows %r among [0, 1] blocks [0, 4, 4, 4] : tensor<4x4xf32>, tensor<4xi64> -> tensor<6x4xf32>
  return
}

// -----

func.func @exchange_gather_block(%x: tensor<3x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{operand of 3 rows is no member's block}}
  %0 = hspmd.sparse_exchange gather %x rows %r among [0, 1] blocks [0, 4, 4, 4] : tensor<3x4xf32>, tensor<4xi64> -> tensor<8x4xf32>
  return
}

// -----

func.func @exchange_group_member(%x: tensor<8x4xf32>, %r: tensor<4xi64>)
    attributes {hspmd.group = #hspmd.group<[0, 3]>} {
  // expected-error @+1 {{runs on device 3 of its group, which is not among its devices}}
  %0 = hspmd.sparse_exchange %x rows %r among [0, 1] blocks [0, 4, 4, 4] : tensor<8x4xf32>, tensor<4xi64> -> tensor<4x4xf32>
  return
}

// -----

func.func @exchange_group_block(%x: tensor<8x4xf32>, %r: tensor<4xi64>)
    attributes {hspmd.group = #hspmd.group<[0, 1]>} {
  // expected-error @+1 {{device 1 of its group has a block of 6 rows, but the result has 2}}
  %0 = hspmd.sparse_exchange %x rows %r among [0, 1] blocks [0, 2, 2, 6] : tensor<8x4xf32>, tensor<4xi64> -> tensor<2x4xf32>
  return
}

// -----

func.func @exchange_dynamic(%x: tensor<?x4xf32>, %r: tensor<4xi64>) {
  // expected-error @+1 {{needs static shapes}}
  %0 = hspmd.sparse_exchange %x rows %r among [0, 1] blocks [0, 4, 4, 4] : tensor<?x4xf32>, tensor<4xi64> -> tensor<4x4xf32>
  return
}
