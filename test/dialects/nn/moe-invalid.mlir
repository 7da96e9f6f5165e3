// RUN: loom-opt %s -split-input-file -verify-diagnostics

// topk: k beyond the last dimension.
func.func @topk_too_many(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{k = 4 must be in [1, 3] (the size of the last dimension)}}
  %0 = nn.topk %x k = 4 : tensor<4x3xf32>
  return
}

// -----

// topk: k must be positive.
func.func @topk_zero(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{k = 0 must be in [1, 3]}}
  %0 = nn.topk %x k = 0 : tensor<4x3xf32>
  return
}

// -----

// topk: a scalar has no last dimension.
func.func @topk_scalar(%x: tensor<f32>) {
  // expected-error @+1 {{needs an input of rank at least 1}}
  %0 = nn.topk %x k = 1 : tensor<f32>
  return
}

// -----

// topk: scores are floats.
func.func @topk_int(%x: tensor<4x3xi64>) {
  // expected-error @+1 {{'nn.topk' op operand #0 must be float tensor (f32, f64 or bf16), but got 'tensor<4x3xi64>'}}
  %0 = nn.topk %x k = 1 : tensor<4x3xi64>
  return
}

// -----

// moe_route: experts are tokens x choices.
func.func @route_rank(%e: tensor<16xi64>) {
  // expected-error @+1 {{needs experts of rank 2 (tokens x choices)}}
  %0, %1 = nn.moe_route %e num_experts = 4 : tensor<16xi64>
  return
}

// -----

func.func @route_experts(%e: tensor<16x2xi64>) {
  // expected-error @+1 {{num_experts = 0 must be positive}}
  %0, %1 = nn.moe_route %e num_experts = 0 : tensor<16x2xi64>
  return
}

// -----

func.func @route_capacity(%e: tensor<16x2xi64>) {
  // expected-error @+1 {{capacity = 0 must be positive (leave it out for no capacity)}}
  %0, %1 = nn.moe_route %e num_experts = 4 capacity = 0 : tensor<16x2xi64>
  return
}

// -----

// dispatch: the input is tokens x width.
func.func @dispatch_rank(%x: tensor<16xf32>, %s: tensor<16x2xi64>) {
  // expected-error @+1 {{input must have rank 2 (tokens x width)}}
  %0 = nn.moe_dispatch %x, %s rows = 32 : tensor<16xf32>, tensor<16x2xi64>
  return
}

// -----

// dispatch: a slot per token.
func.func @dispatch_tokens(%x: tensor<16x8xf32>, %s: tensor<12x2xi64>) {
  // expected-error @+1 {{slots have 12 tokens but the tokens' operand has 16}}
  %0 = nn.moe_dispatch %x, %s rows = 32 : tensor<16x8xf32>, tensor<12x2xi64>
  return
}

// -----

// dispatch: the weights have the slots' shape.
func.func @dispatch_weights(%x: tensor<16x8xf32>, %s: tensor<16x2xi64>, %w: tensor<16x3xf32>) {
  // expected-error @+1 {{weights has shape [16, 3] but the slots' shape is [16, 2]}}
  %0 = nn.moe_dispatch %x, %s weights %w rows = 32 : tensor<16x8xf32>, tensor<16x2xi64>, tensor<16x3xf32>
  return
}

// -----

// dispatch: the weights have the input's element type.
func.func @dispatch_weight_type(%x: tensor<16x8xf32>, %s: tensor<16x2xi64>, %w: tensor<16x2xf64>) {
  // expected-error @+1 {{weights element type 'f64' does not match the input's 'f32'}}
  %0 = nn.moe_dispatch %x, %s weights %w rows = 32 : tensor<16x8xf32>, tensor<16x2xi64>, tensor<16x2xf64>
  return
}

// -----

// dispatch: a negative buffer.
func.func @dispatch_rows(%x: tensor<16x8xf32>, %s: tensor<16x2xi64>) {
  // expected-error @+1 {{rows = -1 must be non-negative}}
  %0 = nn.moe_dispatch %x, %s rows = -1 : tensor<16x8xf32>, tensor<16x2xi64>
  return
}

// -----

// dispatch: slots are integers.
func.func @dispatch_slot_type(%x: tensor<16x8xf32>, %s: tensor<16x2xi32>) {
  // expected-error @+1 {{operand #1 must be}}
  %0 = nn.moe_dispatch %x, %s rows = 32 : tensor<16x8xf32>, tensor<16x2xi32>
  return
}

// -----

// combine: slots are tokens x choices.
func.func @combine_slots(%b: tensor<32x8xf32>, %s: tensor<32xi64>) {
  // expected-error @+1 {{slots must have rank 2 (tokens x choices)}}
  %0 = nn.moe_combine %b, %s : tensor<32x8xf32>, tensor<32xi64>
  return
}

// -----

// slot_dot: the buffer and the tokens have one width.
func.func @slot_dot_width(%b: tensor<32x8xf32>, %t: tensor<16x4xf32>, %s: tensor<16x2xi64>) {
  // expected-error @+1 {{tokens have width 4 but the buffer has width 8}}
  %0 = nn.moe_slot_dot %b, %t, %s : tensor<32x8xf32>, tensor<16x4xf32>, tensor<16x2xi64>
  return
}

// -----

// grouped_matmul: the weight is experts x K x F.
func.func @gmm_rank(%x: tensor<32x8xf32>, %w: tensor<8x12xf32>, %c: tensor<4xi64>) {
  // expected-error @+1 {{weight must have rank 3 (experts x K x F)}}
  %0 = nn.grouped_matmul %x, %w, %c : tensor<32x8xf32>, tensor<8x12xf32>, tensor<4xi64>
  return
}

// -----

// grouped_matmul: contracting dimensions (transposed: the weight's last).
func.func @gmm_contract(%x: tensor<32x8xf32>, %w: tensor<4x8x12xf32>, %c: tensor<4xi64>) {
  // expected-error @+1 {{weight dimension 2 of size 12 does not match the input's width 8}}
  %0 = nn.grouped_matmul %x, %w, %c transpose_rhs : tensor<32x8xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  return
}

// -----

// grouped_matmul: a count per expert.
func.func @gmm_counts(%x: tensor<32x8xf32>, %w: tensor<4x8x12xf32>, %c: tensor<3xi64>) {
  // expected-error @+1 {{counts have 3 entries but there are 4 experts}}
  %0 = nn.grouped_matmul %x, %w, %c : tensor<32x8xf32>, tensor<4x8x12xf32>, tensor<3xi64>
  return
}

// -----

// grouped_matmul_grad: one buffer of rows.
func.func @gmm_grad_rows(%a: tensor<32x8xf32>, %b: tensor<30x12xf32>, %c: tensor<4xi64>) {
  // expected-error @+1 {{lhs has 32 rows but rhs has 30}}
  %0 = nn.grouped_matmul_grad %a, %b, %c : tensor<32x8xf32>, tensor<30x12xf32>, tensor<4xi64>
  return
}

// -----

// grouped_matmul_grad: counts are a vector.
func.func @gmm_grad_counts(%a: tensor<32x8xf32>, %b: tensor<32x12xf32>, %c: tensor<4x1xi64>) {
  // expected-error @+1 {{counts must have rank 1 (one per expert)}}
  %0 = nn.grouped_matmul_grad %a, %b, %c : tensor<32x8xf32>, tensor<32x12xf32>, tensor<4x1xi64>
  return
}

// -----

// moe_route: the blocks divide the experts.
func.func @route_blocks(%e: tensor<16x2xi64>) {
  // expected-error @+1 {{blocks = 3 does not divide the 4 experts}}
  %0, %1 = nn.moe_route %e num_experts = 4 blocks = 3 : tensor<16x2xi64>
  return
}

// -----

func.func @route_blocks_zero(%e: tensor<16x2xi64>) {
  // expected-error @+1 {{blocks = 0 must be positive}}
  %0, %1 = nn.moe_route %e num_experts = 4 blocks = 0 : tensor<16x2xi64>
  return
}

// -----

// grouped_matmul: the blocks divide the buffer rows.
func.func @gmm_blocks_rows(%x: tensor<30x8xf32>, %w: tensor<4x8x12xf32>, %c: tensor<4xi64>) {
  // expected-error @+1 {{blocks = 4 does not divide the 30 buffer rows}}
  %0 = nn.grouped_matmul %x, %w, %c blocks = 4 : tensor<30x8xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  return
}

// -----

// grouped_matmul_grad: the blocks divide the experts.
func.func @gmm_grad_blocks(%a: tensor<32x8xf32>, %b: tensor<32x12xf32>, %c: tensor<6xi64>) {
  // expected-error @+1 {{blocks = 4 does not divide the 6 experts}}
  %0 = nn.grouped_matmul_grad %a, %b, %c blocks = 4 : tensor<32x8xf32>, tensor<32x12xf32>, tensor<6xi64>
  return
}

// -----

// The buffer of a route with expert blocks has its B * S rows: 2 blocks of
// 16 x 2 = 32 rows need 64; fewer would drop block 1's entries.
func.func @dispatch_route_rows(%x: tensor<16x8xf32>, %e: tensor<16x2xi64>) {
  %s, %c = nn.moe_route %e num_experts = 4 blocks = 2 : tensor<16x2xi64>
  // expected-error @+1 {{has a buffer of 32 rows but its nn.moe_route's 2 blocks of 32 rows need 64}}
  %0 = nn.moe_dispatch %x, %s rows = 32 : tensor<16x8xf32>, tensor<16x2xi64>
  return
}

// -----

// A share's buffer has the whole batch's rows: 2 shares of 8 tokens x 2
// in 2 blocks of 32 rows need 64.
func.func @dispatch_share_rows(%x: tensor<8x8xf32>, %e: tensor<8x2xi64>,
                               %t: tensor<2x4xi64>, %m: tensor<i64>) {
  %s, %c = nn.moe_route %e shares(%t : tensor<2x4xi64>) at %m num_experts = 4 blocks = 2 : tensor<8x2xi64>
  // expected-error @+1 {{has a buffer of 32 rows but its nn.moe_route's 2 blocks of 32 rows need 64}}
  %0 = nn.moe_dispatch %x, %s rows = 32 : tensor<8x8xf32>, tensor<8x2xi64>
  return
}

// -----

// The shares' table is members x experts.
func.func @route_shares_shape(%e: tensor<8x2xi64>, %t: tensor<2x3xi64>,
                              %m: tensor<i64>) {
  // expected-error @+1 {{needs shares of shape [members, 4] (each share's entries per expert), got 'tensor<2x3xi64>'}}
  %0, %1 = nn.moe_route %e shares(%t : tensor<2x3xi64>) at %m num_experts = 4 : tensor<8x2xi64>
  return
}

// -----

func.func @route_shares_none(%e: tensor<8x2xi64>, %t: tensor<0x4xi64>,
                             %m: tensor<i64>) {
  // expected-error @+1 {{needs shares of shape [members, 4]}}
  %0, %1 = nn.moe_route %e shares(%t : tensor<0x4xi64>) at %m num_experts = 4 : tensor<8x2xi64>
  return
}

// -----

// The member is a 0-d i64, and comes with the shares.
func.func @route_member(%e: tensor<8x2xi64>, %t: tensor<2x4xi64>,
                        %m: tensor<1xi64>) {
  // expected-error @+1 {{operand #2 must be 0-d i64 tensor}}
  %0:2 = "nn.moe_route"(%e, %t, %m) <{num_experts = 4 : i64, blocks = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 1>}> : (tensor<8x2xi64>, tensor<2x4xi64>, tensor<1xi64>) -> (tensor<8x2xi64>, tensor<4xi64>)
  return
}

// -----

func.func @route_member_alone(%e: tensor<8x2xi64>, %t: tensor<2x4xi64>) {
  // expected-error @+1 {{needs shares and a member together}}
  %0:2 = "nn.moe_route"(%e, %t) <{num_experts = 4 : i64, blocks = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0>}> : (tensor<8x2xi64>, tensor<2x4xi64>) -> (tensor<8x2xi64>, tensor<4xi64>)
  return
}

// -----

// The grouped matmul reads the route's blocks.
func.func @gmm_route_blocks(%x: tensor<64x8xf32>, %w: tensor<4x8x12xf32>, %e: tensor<16x2xi64>) {
  %s, %c = nn.moe_route %e num_experts = 4 blocks = 2 : tensor<16x2xi64>
  // expected-error @+1 {{has blocks = 1 but its counts come from an nn.moe_route with blocks = 2}}
  %0 = nn.grouped_matmul %x, %w, %c : tensor<64x8xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  return
}

// -----

// With a capacity, a block is at most C rows per expert: 2 blocks of 2 x 3.
func.func @combine_route_rows(%b: tensor<64x8xf32>, %e: tensor<16x2xi64>) {
  %s, %c = nn.moe_route %e num_experts = 4 capacity = 3 blocks = 2 : tensor<16x2xi64>
  // expected-error @+1 {{has a buffer of 64 rows but its nn.moe_route's 2 blocks of 6 rows need 12}}
  %0 = nn.moe_combine %b, %s : tensor<64x8xf32>, tensor<16x2xi64>
  return
}

// -----

// grouped_matmul: the blocks divide the experts, counted by the counts
// where the weight's are dynamic.
func.func @gmm_blocks_counts(%x: tensor<32x8xf32>, %w: tensor<?x8x12xf32>, %c: tensor<6xi64>) {
  // expected-error @+1 {{blocks = 4 does not divide the 6 experts}}
  %0 = nn.grouped_matmul %x, %w, %c blocks = 4 : tensor<32x8xf32>, tensor<?x8x12xf32>, tensor<6xi64>
  return
}

// -----

// moe_route: the blocks divide the replica slots of a placement.
func.func @route_hosts_blocks(%e: tensor<16x2xi64>, %h: tensor<5xi64>) {
  // expected-error @+1 {{blocks = 2 does not divide the 5 replica slots}}
  %0, %1 = nn.moe_route %e hosts %h num_experts = 4 blocks = 2 : tensor<16x2xi64>, tensor<5xi64>
  return
}

// -----

func.func @route_hosts_rank(%e: tensor<16x2xi64>, %h: tensor<2x3xi64>) {
  // expected-error @+1 {{needs hosts of rank 1 (devices x replica slots), got 'tensor<2x3xi64>'}}
  %0, %1 = nn.moe_route %e hosts %h num_experts = 4 blocks = 2 : tensor<16x2xi64>, tensor<2x3xi64>
  return
}

// -----

// moe_plan: a forecast is rows x layers x experts.
func.func @plan_rank(%f: tensor<4x4xi64>) {
  // expected-error @+1 {{needs a forecast of rank 3 (rows x layers x experts), got 'tensor<4x4xi64>'}}
  %0, %1 = nn.moe_plan %f layer = 0 devices = 2 slots = 3 : tensor<4x4xi64>
  return
}

// -----

func.func @plan_layer(%f: tensor<4x2x4xi64>) {
  // expected-error @+1 {{layer = 2 is not one of the forecast's 2 layers}}
  %0, %1 = nn.moe_plan %f layer = 2 devices = 2 slots = 3 : tensor<4x2x4xi64>
  return
}

// -----

func.func @plan_home(%f: tensor<4x2x6xi64>) {
  // expected-error @+1 {{devices = 4 does not divide the 6 experts (each device is the home of as many)}}
  %0, %1 = nn.moe_plan %f layer = 0 devices = 4 slots = 3 : tensor<4x2x6xi64>
  return
}

// -----

func.func @plan_slots(%f: tensor<4x2x8xi64>) {
  // expected-error @+1 {{2 devices of 3 slots cannot hold the 8 experts}}
  %0, %1 = nn.moe_plan %f layer = 0 devices = 2 slots = 3 : tensor<4x2x8xi64>
  return
}

// -----

func.func @plan_nodes(%f: tensor<4x2x8xi64>) {
  // expected-error @+1 {{nodes = 3 does not divide the 4 devices}}
  %0, %1 = nn.moe_plan %f layer = 0 devices = 4 slots = 3 nodes = 3 : tensor<4x2x8xi64>
  return
}

// -----

func.func @plan_bytes(%f: tensor<4x2x8xi64>) {
  // expected-error @+1 {{expert_bytes = -1 must be non-negative}}
  %0, %1 = nn.moe_plan %f layer = 0 devices = 4 slots = 3 expert_bytes = -1 : tensor<4x2x8xi64>
  return
}

// -----

// moe_plan: the previous lookup holds one expert a slot.
func.func @plan_previous(%f: tensor<4x2x4xi64>, %p: tensor<4xi64>) {
  // expected-error @+1 {{needs a previous lookup of shape [6] (devices x slots), got 'tensor<4xi64>'}}
  %0, %1 = nn.moe_plan %f previous %p layer = 0 devices = 2 slots = 3 : tensor<4x2x4xi64>, tensor<4xi64>
  return
}
