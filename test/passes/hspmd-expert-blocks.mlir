// RUN: loom-opt %s -split-input-file --hspmd-expert-blocks | FileCheck %s

// Experts split over 2 devices (argument layouts): 2 blocks of T * k = 16
// rows. The route, both grouped matmuls and the dispatch take them; the
// GELU between the matmuls and the second matmul's result follow the
// buffer's new rows; the combine's result (tokens) does not change.
// CHECK-LABEL: func.func @split
// CHECK: nn.moe_route %{{.*}} num_experts = 4 blocks = 2 : tensor<8x2xi64>
// CHECK: nn.moe_dispatch %{{.*}} rows = 32 : tensor<8x16xf32>, tensor<8x2xi64>
// CHECK: nn.grouped_matmul %{{.*}} blocks = 2 : tensor<32x16xf32>, tensor<4x16x12xf32>, tensor<4xi64>
// CHECK: nn.gelu %{{.*}} : tensor<32x12xf32>
// CHECK: nn.grouped_matmul %{{.*}} transpose_rhs blocks = 2 : tensor<32x12xf32>, tensor<4x16x12xf32>, tensor<4xi64>
// CHECK: nn.moe_combine %{{.*}} : tensor<32x16xf32>, tensor<8x2xi64>, tensor<8x2xf32>
func.func @split(%x: tensor<8x16xf32> {nn.data}, %e: tensor<8x2xi64> {nn.data},
                 %g: tensor<8x2xf32> {nn.data},
                 %w1: tensor<4x16x12xf32> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
                 %w2: tensor<4x16x12xf32> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> tensor<8x16xf32> {
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf32>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf32>, tensor<4x16x12xf32>, tensor<4xi64>
  %a = nn.gelu %h : tensor<16x12xf32>
  %o = nn.grouped_matmul %a, %w2, %counts transpose_rhs : tensor<16x12xf32>, tensor<4x16x12xf32>, tensor<4xi64>
  %y = nn.moe_combine %o, %slots weights %g : tensor<16x16xf32>, tensor<8x2xi64>, tensor<8x2xf32>
  return %y : tensor<8x16xf32>
}

// -----

// An annotated weight, split 2 ways inside each of two groups that hold
// 4 and 4 of 8 experts unevenly (3 + 1 on the first group: explicit
// sizes): the finest cut every shard falls on is 1 expert, so 8 blocks;
// with a capacity of 2, each block is at most 2 rows. Element-wise ops
// that read the buffer twice (x * x * x) or a bias without its rows, and a
// cast, follow the rows whatever order they come in.
// CHECK-LABEL: func.func @uneven
// CHECK: nn.moe_route %{{.*}} num_experts = 8 capacity = 2 blocks = 8 : tensor<8x2xi64>
// CHECK: nn.moe_dispatch %{{.*}} rows = 16 : tensor<8x16xf32>, tensor<8x2xi64>
// CHECK: nn.grouped_matmul %{{.*}} blocks = 8 : tensor<16x16xf32>, tensor<8x16x16xf32>, tensor<8xi64>
// CHECK: nn.mul %{{.*}} : tensor<16x16xf32>, tensor<16x16xf32>
// CHECK: nn.mul %{{.*}} : tensor<16x16xf32>, tensor<16x16xf32>
// CHECK: nn.add %{{.*}} : tensor<16x16xf32>, tensor<16xf32>
// CHECK: nn.cast %{{.*}} : tensor<16x16xf32> to tensor<16x16xf64>
// CHECK: nn.moe_combine %{{.*}} : tensor<16x16xf64>, tensor<8x2xi64>
func.func @uneven(%x: tensor<8x16xf32>, %e: tensor<8x2xi64>, %w: tensor<8x16x16xf32>,
                  %bias: tensor<16xf32>) -> tensor<8x16xf64> {
  %wa = hspmd.annotate %w : tensor<8x16x16xf32> as #hspmd.union<split(0) shares [4, 4]: {[0, 1]: [S0:[3, 1]]}, {[2, 3]: [S0:2]}>
  %slots, %counts = nn.moe_route %e num_experts = 8 capacity = 2 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf32>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %wa, %counts : tensor<16x16xf32>, tensor<8x16x16xf32>, tensor<8xi64>
  %sq = nn.mul %h, %h : tensor<16x16xf32>, tensor<16x16xf32>
  %cu = nn.mul %sq, %h : tensor<16x16xf32>, tensor<16x16xf32>
  %b = nn.add %cu, %bias : tensor<16x16xf32>, tensor<16xf32>
  %c = nn.cast %b : tensor<16x16xf32> to tensor<16x16xf64>
  %y = nn.moe_combine %c, %slots : tensor<16x16xf64>, tensor<8x2xi64>
  return %y : tensor<8x16xf64>
}

// -----

// Weights not split along the experts (tensor parallel inside them), or
// without layouts: nothing changes.
// CHECK-LABEL: func.func @unsplit
// CHECK: nn.moe_route %{{.*}} num_experts = 4 : tensor<8x2xi64>
// CHECK: nn.moe_dispatch %{{.*}} rows = 16
// CHECK: nn.grouped_matmul %{{.*}} : tensor<16x16xf32>, tensor<4x16x12xf32>, tensor<4xi64>
func.func @unsplit(%x: tensor<8x16xf32>, %e: tensor<8x2xi64>,
                   %w1: tensor<4x16x12xf32> {hspmd.layout = #hspmd.union<{[0, 1]: [S2:2]}>})
    -> tensor<16x12xf32> {
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf32>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf32>, tensor<4x16x12xf32>, tensor<4xi64>
  return %h : tensor<16x12xf32>
}

// -----

// A strategy set: the blocks are the finest cut every strategy's shares
// fall on (EP over 2 and EP over 4 with the others whole: 4 blocks), so
// one program serves every strategy specialised after this pass; the
// data-parallel strategy runs with them too.
// CHECK-LABEL: func.func @strategies
// CHECK: nn.moe_route %{{.*}} num_experts = 4 blocks = 4 : tensor<8x2xi64>
// CHECK: nn.moe_dispatch %{{.*}} rows = 64 : tensor<8x16xf32>, tensor<8x2xi64>
// CHECK: nn.grouped_matmul %{{.*}} blocks = 4 : tensor<64x16xf32>, tensor<4x16x12xf32>, tensor<4xi64>
func.func @strategies(%x: tensor<8x16xf32>, %e: tensor<8x2xi64>,
                      %w1: tensor<4x16x12xf32> {hspmd.layout = #hspmd.strategies<["ep" = <{[0, 1]: [S0:2]}>, "dp" = <{[0, 1]: [D:2]}>, "ep4" = <{[0, 1, 2, 3]: [S0:4]}>], optimizer = "ep">})
    -> tensor<8x12xf32> {
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf32>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf32>, tensor<4x16x12xf32>, tensor<4xi64>
  %y = nn.moe_combine %h, %slots : tensor<16x12xf32>, tensor<8x2xi64>
  return %y : tensor<8x12xf32>
}

// -----

// Six experts split 2 ways under one strategy and 3 ways under another:
// the cut both fall on is one expert (6 blocks), not either strategy's.
// CHECK-LABEL: func.func @strategies_gcd
// CHECK: nn.moe_route %{{.*}} num_experts = 6 blocks = 6 : tensor<8x2xi64>
// CHECK: nn.grouped_matmul %{{.*}} blocks = 6 : tensor<96x16xf32>, tensor<6x16x12xf32>, tensor<6xi64>
func.func @strategies_gcd(%x: tensor<8x16xf32>, %e: tensor<8x2xi64>,
                          %w: tensor<6x16x12xf32>)
    -> tensor<8x12xf32> {
  %w1 = hspmd.annotate %w : tensor<6x16x12xf32> as #hspmd.strategies<["ep2" = <{[0, 1]: [S0:2]}>, "ep3" = <{[0, 1, 2]: [S0:3]}>], optimizer = "ep2">
  %slots, %counts = nn.moe_route %e num_experts = 6 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf32>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf32>, tensor<6x16x12xf32>, tensor<6xi64>
  %y = nn.moe_combine %h, %slots : tensor<16x12xf32>, tensor<8x2xi64>
  return %y : tensor<8x12xf32>
}
