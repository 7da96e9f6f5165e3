// RUN: loom-opt %s | loom-opt | FileCheck %s
// RUN: loom-opt %s --mlir-print-op-generic | loom-opt | FileCheck %s
// RUN: %check-round-trip %s %t

// The mixture-of-experts ops: the router's top k and the routing of each
// (token, choice) entry to its row of the expert-ordered buffer, the
// dispatch into that buffer, the experts' grouped matmuls over it and the
// weighted combine back to the tokens; result types inferred.

// CHECK-LABEL: func.func @router
func.func @router(%scores: tensor<16x4xf32>, %batched: tensor<2x8x6xf64>)
    -> (tensor<16x2xi64>, tensor<16x2xi64>, tensor<4xi64>, tensor<2x8x6xi64>) {
  // CHECK: nn.topk %{{.*}} k = 2 : tensor<16x4xf32>
  %experts = nn.topk %scores k = 2 : tensor<16x4xf32>
  // CHECK: nn.moe_route %{{.*}} num_experts = 4 : tensor<16x2xi64>
  %slots, %counts = nn.moe_route %experts num_experts = 4 : tensor<16x2xi64>
  // CHECK: nn.moe_route %{{.*}} num_experts = 4 capacity = 6 : tensor<16x2xi64>
  %capped, %kept = nn.moe_route %experts num_experts = 4 capacity = 6
      : tensor<16x2xi64>
  // CHECK: nn.topk %{{.*}} k = 6 : tensor<2x8x6xf64>
  %all = nn.topk %batched k = 6 : tensor<2x8x6xf64>
  return %experts, %capped, %kept, %all
      : tensor<16x2xi64>, tensor<16x2xi64>, tensor<4xi64>, tensor<2x8x6xi64>
}

// CHECK-LABEL: func.func @layer
func.func @layer(%x: tensor<16x8xf32>, %slots: tensor<16x2xi64>,
                 %w: tensor<16x2xf32>, %counts: tensor<4xi64>,
                 %w1: tensor<4x8x12xf32>, %w2: tensor<4x8x12xf32>)
    -> (tensor<16x8xf32>, tensor<16x2xf32>, tensor<4x8x12xf32>,
        tensor<20x8xf32>) {
  // CHECK: nn.moe_dispatch %{{.*}}, %{{.*}} rows = 32 : tensor<16x8xf32>, tensor<16x2xi64>
  %buffer = nn.moe_dispatch %x, %slots rows = 32
      : tensor<16x8xf32>, tensor<16x2xi64>
  // CHECK: nn.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}} : tensor<32x8xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  %h = nn.grouped_matmul %buffer, %w1, %counts
      : tensor<32x8xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  // CHECK: nn.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}} transpose_rhs : tensor<32x12xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  %out = nn.grouped_matmul %h, %w2, %counts transpose_rhs
      : tensor<32x12xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  // CHECK: nn.moe_combine %{{.*}}, %{{.*}} weights %{{.*}} : tensor<32x8xf32>, tensor<16x2xi64>, tensor<16x2xf32>
  %y = nn.moe_combine %out, %slots weights %w
      : tensor<32x8xf32>, tensor<16x2xi64>, tensor<16x2xf32>
  // CHECK: nn.moe_slot_dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<32x8xf32>, tensor<16x8xf32>, tensor<16x2xi64>
  %dw = nn.moe_slot_dot %out, %x, %slots
      : tensor<32x8xf32>, tensor<16x8xf32>, tensor<16x2xi64>
  // CHECK: nn.grouped_matmul_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<32x8xf32>, tensor<32x12xf32>, tensor<4xi64>
  %dw1 = nn.grouped_matmul_grad %buffer, %h, %counts
      : tensor<32x8xf32>, tensor<32x12xf32>, tensor<4xi64>
  // A weighted dispatch into a capacity-bounded buffer (rows < T * k).
  // CHECK: nn.moe_dispatch %{{.*}}, %{{.*}} weights %{{.*}} rows = 20 : tensor<16x8xf32>, tensor<16x2xi64>, tensor<16x2xf32>
  %capped = nn.moe_dispatch %x, %slots weights %w rows = 20
      : tensor<16x8xf32>, tensor<16x2xi64>, tensor<16x2xf32>
  return %y, %dw, %dw1, %capped
      : tensor<16x8xf32>, tensor<16x2xf32>, tensor<4x8x12xf32>, tensor<20x8xf32>
}

// Dynamic token counts: the buffer's rows come from the attribute.
// CHECK-LABEL: func.func @dynamic
func.func @dynamic(%x: tensor<?x8xf64>, %slots: tensor<?x2xi64>)
    -> tensor<?x8xf64> {
  // CHECK: nn.moe_dispatch %{{.*}}, %{{.*}} rows = 64 : tensor<?x8xf64>, tensor<?x2xi64>
  %buffer = nn.moe_dispatch %x, %slots rows = 64
      : tensor<?x8xf64>, tensor<?x2xi64>
  // CHECK: nn.moe_combine %{{.*}}, %{{.*}} : tensor<64x8xf64>, tensor<?x2xi64>
  %y = nn.moe_combine %buffer, %slots : tensor<64x8xf64>, tensor<?x2xi64>
  return %y : tensor<?x8xf64>
}

// Expert blocks (expert parallelism): the route places block b's experts
// from row b * T * k, the grouped matmul and its weight gradient read the
// blocks; blocks = 1 is the default and is not printed.
// CHECK-LABEL: func.func @blocks
func.func @blocks(%experts: tensor<16x2xi64>, %x: tensor<16x8xf32>,
                  %w1: tensor<4x8x12xf32>)
    -> (tensor<64x12xf32>, tensor<4x8x12xf32>, tensor<16x2xi64>) {
  // CHECK: nn.moe_route %{{.*}} num_experts = 4 blocks = 2 : tensor<16x2xi64>
  %slots, %counts = nn.moe_route %experts num_experts = 4 blocks = 2
      : tensor<16x2xi64>
  // CHECK: nn.moe_route %{{.*}} num_experts = 4 capacity = 3 blocks = 4 : tensor<16x2xi64>
  %capped, %kept = nn.moe_route %experts num_experts = 4 capacity = 3
      blocks = 4 : tensor<16x2xi64>
  // CHECK: nn.moe_route %{{.*}} num_experts = 4 : tensor<16x2xi64>
  %one, %ones = nn.moe_route %experts num_experts = 4 blocks = 1
      : tensor<16x2xi64>
  %buffer = nn.moe_dispatch %x, %slots rows = 64
      : tensor<16x8xf32>, tensor<16x2xi64>
  // CHECK: nn.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}} blocks = 2 : tensor<64x8xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  %h = nn.grouped_matmul %buffer, %w1, %counts blocks = 2
      : tensor<64x8xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  // CHECK: nn.grouped_matmul_grad %{{.*}}, %{{.*}}, %{{.*}} blocks = 2 : tensor<64x8xf32>, tensor<64x12xf32>, tensor<4xi64>
  %dw1 = nn.grouped_matmul_grad %buffer, %h, %counts blocks = 2
      : tensor<64x8xf32>, tensor<64x12xf32>, tensor<4xi64>
  return %h, %dw1, %capped : tensor<64x12xf32>, tensor<4x8x12xf32>, tensor<16x2xi64>
}

// One share of a batch routed as one (member %m of 2 shares of 8 tokens):
// its dispatch's buffer has the whole batch's 2 blocks of 2 x 8 x 2 rows.
// CHECK-LABEL: func.func @shares
func.func @shares(%experts: tensor<8x2xi64>, %table: tensor<2x4xi64>,
                  %m: tensor<i64>, %hosts: tensor<6xi64>, %x: tensor<8x8xf32>)
    -> (tensor<64x8xf32>, tensor<6xi64>) {
  // CHECK: nn.moe_route %{{.*}} shares(%{{.*}} : tensor<2x4xi64>) at %{{.*}} num_experts = 4 blocks = 2 : tensor<8x2xi64>
  %slots, %counts = nn.moe_route %experts shares(%table : tensor<2x4xi64>) at %m num_experts = 4
      blocks = 2 : tensor<8x2xi64>
  %buffer = nn.moe_dispatch %x, %slots rows = 64
      : tensor<8x8xf32>, tensor<8x2xi64>
  // CHECK: nn.moe_route %{{.*}} hosts %{{.*}} shares(%{{.*}} : tensor<2x4xi64>) at %{{.*}} num_experts = 4 capacity = 3 blocks = 2 : tensor<8x2xi64>, tensor<6xi64>
  %placed, %replicas = nn.moe_route %experts hosts %hosts shares(%table : tensor<2x4xi64>) at %m
      num_experts = 4 capacity = 3 blocks = 2
      : tensor<8x2xi64>, tensor<6xi64>
  return %buffer, %replicas : tensor<64x8xf32>, tensor<6xi64>
}

// Placement per micro-step: a plan of 2 devices of 3 replica slots from a
// forecast (rows x layers x experts), and a route by it: one count a
// replica slot, block b the replicas of device b.
// CHECK-LABEL: func.func @placement
func.func @placement(%experts: tensor<16x2xi64>, %forecast: tensor<4x2x4xi64>,
                     %x: tensor<16x8xf32>, %w1: tensor<6x8x12xf32>)
    -> (tensor<64x12xf32>, tensor<6xi64>) {
  // CHECK: %[[H:.*]], %[[L:.*]] = nn.moe_plan %{{.*}} layer = 1 devices = 2 slots = 3 : tensor<4x2x4xi64>
  %hosts, %lookup = nn.moe_plan %forecast layer = 1 devices = 2 slots = 3
      : tensor<4x2x4xi64>
  // CHECK: nn.moe_plan %{{.*}} layer = 0 devices = 2 slots = 2 nodes = 2 expert_bytes = 4096 : tensor<4x2x4xi64>
  %h2, %l2 = nn.moe_plan %forecast layer = 0 devices = 2 slots = 2 nodes = 2
      expert_bytes = 4096 : tensor<4x2x4xi64>
  // CHECK: nn.moe_plan %{{.*}} previous %[[L]] layer = 1 devices = 2 slots = 3 : tensor<4x2x4xi64>, tensor<6xi64>
  %h3, %l3 = nn.moe_plan %forecast previous %lookup layer = 1 devices = 2
      slots = 3 : tensor<4x2x4xi64>, tensor<6xi64>
  // CHECK: nn.moe_route %{{.*}} hosts %[[H]] num_experts = 4 blocks = 2 : tensor<16x2xi64>, tensor<6xi64>
  %slots, %counts = nn.moe_route %experts hosts %hosts num_experts = 4
      blocks = 2 : tensor<16x2xi64>, tensor<6xi64>
  %buffer = nn.moe_dispatch %x, %slots rows = 64
      : tensor<16x8xf32>, tensor<16x2xi64>
  // CHECK: nn.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}} blocks = 2 : tensor<64x8xf32>, tensor<6x8x12xf32>, tensor<6xi64>
  %h = nn.grouped_matmul %buffer, %w1, %counts blocks = 2
      : tensor<64x8xf32>, tensor<6x8x12xf32>, tensor<6xi64>
  return %h, %lookup : tensor<64x12xf32>, tensor<6xi64>
}
