// hspmd-moe-placement: an expert-parallel MoE layer (expert blocks from
// hspmd-expert-blocks) of a function with a forecast argument is planned
// at run time: nn.moe_plan gives each of the 2 devices 3 replica slots,
// the route puts the entries in the blocks of the devices that serve them,
// and both grouped matmuls multiply by the replicas' weights, looked up
// from the experts' (whose layout, the home, does not change). A weight
// read by two matmuls is looked up once.
// RUN: loom-opt %s --hspmd-expert-blocks --hspmd-moe-placement | FileCheck %s
// A second run changes nothing.
// RUN: loom-opt %s --hspmd-expert-blocks --hspmd-moe-placement --hspmd-moe-placement | FileCheck %s
//
// The layer computes the same as before, bit for bit, on one device: the
// forecast here ([30, 1, 0, 1]: expert 0 gets a second replica) is not the
// routing's, which is drawn at random.
// RUN: loom-opt %s --hspmd-expert-blocks -o %t.blocked.mlir
// RUN: loom-opt %t.blocked.mlir --hspmd-moe-placement -o %t.placed.mlir
// RUN: %python %S/Inputs/moe_placement_inputs.py %t
// RUN: loom-run --interpret %t.blocked.mlir --entry layer --input %t.x.npy --input %t.e.npy --input %t.g.npy --input %t.f.npy --input %t.w1.npy --input %t.w2.npy --output-dir %t.before
// RUN: loom-run --interpret %t.placed.mlir --entry layer --input %t.x.npy --input %t.e.npy --input %t.g.npy --input %t.f.npy --input %t.w1.npy --input %t.w2.npy --output-dir %t.after
// RUN: cmp %t.before/result_0.npy %t.after/result_0.npy
//
// Partitioned on 2 simulated ranks against the global function: each rank
// fetches the replicas' rows it does not hold (a sparse all-gather of the
// weights by the plan's lookup) and the routed rows move sparsely both
// ways; no dense exchange of the buffer or the weights is left.
// RUN: loom-opt %t.placed.mlir --loom-partition-pipeline -o %t.spmd.mlir
// RUN: FileCheck %s --check-prefix=LOCAL < %t.spmd.mlir
// RUN: loom-run --interpret %t.spmd.mlir --entry layer_group0 --global-entry layer --simulate 2 --tolerance 0 --comm-stats --input %t.x.npy --input %t.e.npy --input %t.g.npy --input %t.f.npy --input %t.w1.npy --input %t.w2.npy | FileCheck %s --check-prefix=SIM --implicit-check-not=' reduce_scatter:' --implicit-check-not=all_to_all
//
// With tensor parallelism inside the experts (2 x 2 devices, the weights'
// last dimension split over the inner axis): the lookup reads whole
// [16, 12] rows, so each device fetches its own column share of the
// replicas it serves ([2, 16, 6] of home rows to [4, 16, 6]); the way back
// ends in the inner axis' all-reduce, nothing else is dense. (Equal to the
// global function within rounding: each expert's second matmul sums its
// 12 products in two halves, one a device; 1e-14 is about 50 ulps.)
// RUN: FileCheck %s --check-prefix=LOCALTP < %t.spmd.mlir
// RUN: loom-run --interpret %t.spmd.mlir --entry layer_tp_group0 --global-entry layer_tp --simulate 4 --tolerance 1e-14 --comm-stats --input %t.x.npy --input %t.e.npy --input %t.g.npy --input %t.f.npy --input %t.w1.npy --input %t.w2.npy | FileCheck %s --check-prefix=SIMTP --implicit-check-not=' reduce_scatter:' --implicit-check-not=all_to_all

// CHECK-LABEL: func.func @layer
// CHECK: %[[HOSTS:.*]], %[[LOOKUP:.*]] = nn.moe_plan %{{.*}} layer = 0 devices = 2 slots = 3 expert_bytes = 3072 : tensor<1x1x4xi64>
// CHECK: %[[SLOTS:.*]], %[[COUNTS:.*]] = nn.moe_route %{{.*}} hosts %[[HOSTS]] num_experts = 4 blocks = 2 : tensor<8x2xi64>, tensor<6xi64>
// CHECK: %[[BUF:.*]] = nn.moe_dispatch %{{.*}}, %[[SLOTS]] rows = 32
// CHECK: %[[H1:.*]] = hspmd.annotate %arg4 : tensor<4x16x12xf64> as #hspmd.union<{[0, 1]: [S0:2]}>
// CHECK: %[[R1:.*]] = nn.embedding %[[H1]], %[[LOOKUP]] {nn.moe_replicas = 0 : i64} : tensor<4x16x12xf64>, tensor<6xi64>
// CHECK: %[[A1:.*]] = hspmd.annotate %[[R1]] : tensor<6x16x12xf64> as #hspmd.union<{[0, 1]: [S0:2]}>
// CHECK: nn.grouped_matmul %[[BUF]], %[[A1]], %[[COUNTS]] blocks = 2 : tensor<32x16xf64>, tensor<6x16x12xf64>, tensor<6xi64>
// CHECK: %[[H2:.*]] = hspmd.annotate %arg5 : tensor<4x16x12xf64> as #hspmd.union<{[0, 1]: [S0:2]}>
// CHECK: nn.embedding %[[H2]], %[[LOOKUP]] {nn.moe_replicas = 1 : i64} : tensor<4x16x12xf64>, tensor<6xi64>
// CHECK: %[[A2:.*]] = hspmd.annotate
// CHECK: nn.grouped_matmul %{{.*}}, %[[A2]], %[[COUNTS]] transpose_rhs blocks = 2
// CHECK: nn.grouped_matmul %{{.*}}, %[[A2]], %[[COUNTS]] transpose_rhs blocks = 2
// CHECK-NOT: nn.embedding
// CHECK: return

// LOCAL-LABEL: func.func @layer_group0
// LOCAL: %[[HOSTS:.*]], %[[LOOKUP:.*]] = nn.moe_plan
// The replicas' fetches start before the tokens' rows move
// (hspmd-overlap-fetches) and are waited for where they are used.
// LOCAL: %[[MINE:.*]] = hspmd.local_slice %[[LOOKUP]] dim 0 over [0] of [2] : tensor<6xi64> -> tensor<3xi64>
// LOCAL: %[[FETCH:.*]] = hspmd.sparse_all_gather_start %{{.*}} rows %[[MINE]] over [0] of [2] : tensor<2x16x12xf64>, tensor<3xi64> -> tensor<4x16x12xf64> {hspmd.weight_fetch}
// LOCAL: hspmd.sparse_reduce_scatter
// LOCAL: %[[ROWS:.*]] = hspmd.wait %[[FETCH]] keep
// LOCAL: nn.embedding %[[ROWS]], %[[MINE]] : tensor<4x16x12xf64>, tensor<3xi64>
// LOCAL-NOT: hspmd.reduce_scatter
// LOCAL-NOT: hspmd.all_to_all
// LOCAL: return

// SIM: result #0: tensor<8x16xf64> norm-wise relative error 0.000e+00
// SIM: rank 0 sparse_all_gather: calls 3
// SIM: rank 0 sparse_reduce_scatter: calls 1

func.func @layer(%x: tensor<8x16xf64> {nn.data, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
                 %e: tensor<8x2xi64> {nn.data},
                 %g: tensor<8x2xf64> {nn.data},
                 %forecast: tensor<1x1x4xi64> {nn.data, nn.moe_forecast = 3 : i64},
                 %w1: tensor<4x16x12xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
                 %w2: tensor<4x16x12xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> (tensor<8x16xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>}) {
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf64>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf64>, tensor<4x16x12xf64>, tensor<4xi64>
  %a = nn.gelu %h : tensor<16x12xf64>
  %o = nn.grouped_matmul %a, %w2, %counts transpose_rhs : tensor<16x12xf64>, tensor<4x16x12xf64>, tensor<4xi64>
  %o2 = nn.grouped_matmul %a, %w2, %counts transpose_rhs : tensor<16x12xf64>, tensor<4x16x12xf64>, tensor<4xi64>
  %s = nn.add %o, %o2 : tensor<16x16xf64>, tensor<16x16xf64>
  %y = nn.moe_combine %s, %slots weights %g : tensor<16x16xf64>, tensor<8x2xi64>, tensor<8x2xf64>
  return %y : tensor<8x16xf64>
}

// CHECK-LABEL: func.func @layer_tp
// CHECK: %[[H:.*]] = hspmd.annotate %arg4 : tensor<4x16x12xf64> as #hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>
// CHECK: nn.embedding %[[H]], %{{.*}} {nn.moe_replicas = 0 : i64} : tensor<4x16x12xf64>, tensor<6xi64>

// LOCALTP-LABEL: func.func @layer_tp_group0
// LOCALTP: %[[HOSTS:.*]], %[[LOOKUP:.*]] = nn.moe_plan
// LOCALTP: %[[MINE:.*]] = hspmd.local_slice %[[LOOKUP]] dim 0 over [0] of [2, 2] : tensor<6xi64> -> tensor<3xi64>
// LOCALTP: %[[FETCH:.*]] = hspmd.sparse_all_gather_start %{{.*}} rows %[[MINE]] over [0] of [2, 2] : tensor<2x16x6xf64>, tensor<3xi64> -> tensor<4x16x6xf64>
// LOCALTP: %[[ROWS:.*]] = hspmd.wait %[[FETCH]] keep
// LOCALTP: nn.embedding %[[ROWS]], %[[MINE]] : tensor<4x16x6xf64>, tensor<3xi64>
// LOCALTP-NOT: hspmd.reduce_scatter
// LOCALTP-NOT: hspmd.all_to_all
// LOCALTP: return

// SIMTP: result #0: tensor<8x16xf64> norm-wise relative error {{[0-9.]+e[-+][0-9]+$}}
// SIMTP: rank 0 all_reduce: calls 1
// SIMTP: rank 0 sparse_all_gather: calls 3
// SIMTP: rank 0 sparse_reduce_scatter: calls 1

func.func @layer_tp(%x: tensor<8x16xf64> {nn.data, hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>},
                    %e: tensor<8x2xi64> {nn.data},
                    %g: tensor<8x2xf64> {nn.data},
                    %forecast: tensor<1x1x4xi64> {nn.data, nn.moe_forecast = 3 : i64},
                    %w1: tensor<4x16x12xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>},
                    %w2: tensor<4x16x12xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, S2:2]}>})
    -> (tensor<8x16xf64> {hspmd.layout = #hspmd.union<{[0, 1, 2, 3]: [S0:2, D:2]}>}) {
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x16xf64>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x16xf64>, tensor<4x16x12xf64>, tensor<4xi64>
  %a = nn.gelu %h : tensor<16x12xf64>
  %o = nn.grouped_matmul %a, %w2, %counts transpose_rhs : tensor<16x12xf64>, tensor<4x16x12xf64>, tensor<4xi64>
  %y = nn.moe_combine %o, %slots weights %g : tensor<16x16xf64>, tensor<8x2xi64>, tensor<8x2xf64>
  return %y : tensor<8x16xf64>
}
