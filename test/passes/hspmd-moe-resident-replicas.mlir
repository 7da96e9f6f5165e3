// hspmd-moe-resident-replicas (in loom-training-pipeline after
// nn-training-step): a placed MoE layer under 2 micro-batches keeps its
// replicas resident. The second plan takes the first one's lookup; the
// second micro-step looks up only the slots whose expert changed (the
// others read their device's first home expert, (p / 3) * 2, and take the
// first micro-step's replicas); a replica's gradient goes home once, by
// the expert it held, when its slot changes or after the last micro-step.
// RUN: loom-opt %s --loom-training-pipeline="optimizer=sgd lr=0.1 micro-batches=2" -o %t.step.mlir
// RUN: FileCheck %s < %t.step.mlir
// RUN: FileCheck %s --check-prefix=COUNT < %t.step.mlir
//
// The same step trains as the one without the pass (built pass by pass)
// on the interpreter, within rounding (the replicas' gradients add up in
// another order), 3 steps of data whose plans keep some slots.
// RUN: loom-opt %s --hspmd-expert-blocks --hspmd-moe-placement --nn-training-step="optimizer=sgd lr=0.1 micro-batches=2" --cse -o %t.ref.mlir
// RUN: FileCheck %s --check-prefix=REF < %t.ref.mlir
// RUN: %python %S/Inputs/moe_resident_data.py %t.data
// RUN: loom-run --interpret %t.step.mlir --entry moe_layer_train_step --train --steps 3 --data %t.data --output-dir %t.out
// RUN: loom-run --interpret %t.ref.mlir --entry moe_layer_train_step --train --steps 3 --data %t.data --output-dir %t.refout
// RUN: %python %S/Inputs/compare_params.py %t.out %t.refout 1e-12 | FileCheck %s --check-prefix=PARAMS
//
// Partitioned over 2 simulated ranks, equal to the global step: each
// micro-step fetches the rows its own changed slots name (a sparse
// all-gather each), and the gradients go home by two sparse
// reduce-scatters (the second micro-step's flush and the final one), none
// dense.
// RUN: loom-opt %t.step.mlir --loom-partition-pipeline -o %t.spmd.mlir
// RUN: loom-run --interpret %t.spmd.mlir --entry moe_layer_train_step_group0 --global-entry moe_layer_train_step --simulate 2 --random-inputs --int-range 0,4 --tolerance 1e-12 --comm-stats | FileCheck %s --check-prefix=SIM --implicit-check-not=' reduce_scatter:'

// CHECK-LABEL: func.func @moe_layer_train_step
// CHECK: %{{.*}}, %[[L0:.*]] = nn.moe_plan %{{.*}} layer = 0 devices = 2 slots = 3 expert_bytes = 128 : tensor<4x1x4xi64>
// CHECK: nn.embedding %[[W:.*]], %[[L0]] {nn.moe_replicas = 0 : i64}
// CHECK-NEXT: %[[R0:.*]] = hspmd.annotate
// The first micro-step's replicas' gradient.
// CHECK: nn.grouped_matmul_grad
// CHECK-NEXT: %[[D0:.*]] = hspmd.annotate %{{.*}} : tensor<6x4x4xf64>
// CHECK: %{{.*}}, %[[L1:.*]] = nn.moe_plan %{{.*}} previous %[[L0]] layer = 0 devices = 2 slots = 3 expert_bytes = 128 : tensor<4x1x4xi64>, tensor<6xi64>
// CHECK-NEXT: %[[SAME:.*]] = nn.compare eq, %[[L1]], %[[L0]] : tensor<6xi64>, tensor<6xi64>
// CHECK-NEXT: %[[ROWS:.*]] = nn.reshape %[[SAME]] : tensor<6xi1> to tensor<6x1x1xi1>
// CHECK-NEXT: %[[DEV:.*]] = nn.iota dim = 0 : tensor<2x3xf32>
// CHECK-NEXT: %[[TWO:.*]] = nn.fill 2.000000e+00 : tensor<f32>
// CHECK-NEXT: %[[FIRST:.*]] = nn.mul %[[DEV]], %[[TWO]]
// CHECK-NEXT: %[[CAST:.*]] = nn.cast %[[FIRST]] : tensor<2x3xf32> to tensor<2x3xi64>
// CHECK-NEXT: %[[HOME:.*]] = nn.reshape %[[CAST]] : tensor<2x3xi64> to tensor<6xi64>
// CHECK: %[[IDS:.*]] = nn.select %[[SAME]], %[[HOME]], %[[L1]] : tensor<6xi1>, tensor<6xi64>, tensor<6xi64>
// CHECK-NEXT: %[[FRESH:.*]] = nn.embedding %[[W]], %[[IDS]] {nn.moe_replicas = 0 : i64}
// The select reads both replicas as laid out (each lookup goes to its
// devices first, not a select of partial sums).
// CHECK-NEXT: %[[PINNED:.*]] = hspmd.annotate %[[FRESH]] : tensor<6x4x4xf64> as #hspmd.union<{[0, 1]: [S0:2]}>
// CHECK-NEXT: %[[R1:.*]] = nn.select %[[ROWS]], %[[R0]], %[[PINNED]] : tensor<6x1x1xi1>, tensor<6x4x4xf64>, tensor<6x4x4xf64>
// CHECK-NEXT: hspmd.annotate %[[R1]]
// The second micro-step: the slots that change send the first one's
// gradient home by the expert they held, the others keep it.
// CHECK: %[[ZERO:.*]] = nn.fill 0.000000e+00 : tensor<f64>
// CHECK-NEXT: %[[LEAVING:.*]] = nn.select %[[ROWS]], %[[ZERO]], %[[D0]]
// CHECK-NEXT: %[[HELD:.*]] = nn.select %[[SAME]], %[[HOME]], %[[L0]]
// CHECK: %[[FLUSH:.*]] = nn.gather_grad %[[LEAVING]], %{{.*}} dim = 0 {nn.moe_replicas = 0 : i64}
// CHECK-NEXT: %[[KEPT:.*]] = nn.select %[[ROWS]], %[[D0]], %[[ZERO]]
// CHECK-NEXT: %[[ACC:.*]] = nn.add %{{.*}}, %[[KEPT]]
// CHECK: %[[ALL:.*]] = nn.gather_grad %[[ACC]], %{{.*}} dim = 0 {nn.moe_replicas = 0 : i64}
// CHECK-NEXT: %[[A1:.*]] = hspmd.annotate %[[ALL]]
// CHECK-NEXT: %[[A2:.*]] = hspmd.annotate %[[FLUSH]]
// CHECK-NEXT: nn.add %[[A2]], %[[A1]]
// CHECK: return

// Two scatter-adds of the replicas' gradients a step, as before (one a
// micro-step): the second micro-step's flush and the final one; the
// first micro-step sends nothing.
// COUNT-LABEL: func.func @moe_layer_train_step
// COUNT-COUNT-2: nn.gather_grad {{.*}}nn.moe_replicas
// COUNT-NOT: nn.gather_grad {{.*}}nn.moe_replicas

// REF-LABEL: func.func @moe_layer_train_step
// REF-NOT: previous
// REF-NOT: nn.compare
// REF: return

// PARAMS: param_0: norm-wise relative error {{.*}} (bound 1e-12)

// SIM: result #1: tensor<4x4x4xf64> norm-wise relative error
// SIM: rank 0 sparse_all_gather: calls 2
// SIM: rank 0 sparse_reduce_scatter: calls 4

func.func @moe_layer(
    %x: tensor<8x4xf64> {nn.data, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
    %experts: tensor<8x2xi64> {nn.data, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
    %gates: tensor<8x2xf64> {nn.data, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
    %forecast: tensor<8x1x4xi64> {nn.data, nn.moe_forecast = 3 : i64},
    %w1: tensor<4x4x4xf64> {nn.param, hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>})
    -> tensor<f64> {
  %slots, %counts = nn.moe_route %experts num_experts = 4 : tensor<8x2xi64>
  %buf = nn.moe_dispatch %x, %slots rows = 16 : tensor<8x4xf64>, tensor<8x2xi64>
  %h = nn.grouped_matmul %buf, %w1, %counts : tensor<16x4xf64>, tensor<4x4x4xf64>, tensor<4xi64>
  %y = nn.moe_combine %h, %slots weights %gates : tensor<16x4xf64>, tensor<8x2xi64>, tensor<8x2xf64>
  %sq = nn.mul %y, %y : tensor<8x4xf64>, tensor<8x4xf64>
  %loss = nn.reduce sum %sq dims = [0, 1] : tensor<8x4xf64>
  return %loss : tensor<f64>
}
