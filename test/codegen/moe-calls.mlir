// RUN: loom-opt %s --loom-lower-to-calls=entry=step | FileCheck %s
// RUN: loom-translate --loom-to-host-cpp --loom-entry step %s | FileCheck %s --check-prefix=CPP
// RUN: loom-translate --loom-to-cuda-cpp --loom-entry step %s | FileCheck %s --check-prefix=CUDA
// RUN: loom-opt %s --loom-lower-to-calls=entry=layer | FileCheck %s --check-prefix=LAYER
// RUN: loom-translate --loom-to-host-cpp --loom-entry layer %s | FileCheck %s --check-prefix=LCPP
// RUN: loom-translate --loom-to-cuda-cpp --loom-entry layer %s | FileCheck %s --check-prefix=LCUDA
// RUN: loom-translate --loom-to-host-cpp --loom-entry blocked %s | FileCheck %s --check-prefix=BCPP
// RUN: loom-translate --loom-to-cuda-cpp --loom-entry blocked %s | FileCheck %s --check-prefix=BCUDA
// RUN: loom-translate --loom-to-ascend-cpp --loom-entry step %s | FileCheck %s --check-prefix=ASCEND
// RUN: loom-translate --loom-to-ascend-cpp --loom-entry layer %s | FileCheck %s --check-prefix=LASCEND
// RUN: loom-translate --loom-to-ascend-cpp --loom-entry blocked %s | FileCheck %s --check-prefix=BASCEND

// The router's ops as kernel calls: nn.topk takes the scores and k, and
// nn.moe_route the i64 experts of rank 2, an absent or given capacity and
// the number of experts; both write int64_t buffers.

func.func @step(%s: tensor<16x4xf32> {nn.data})
    -> (tensor<16x2xi64>, tensor<16x2xi64>, tensor<4xi64>, tensor<16x2xi64>, tensor<4xi64>) {
  %e = nn.topk %s k = 2 : tensor<16x4xf32>
  %slots, %counts = nn.moe_route %e num_experts = 4 : tensor<16x2xi64>
  %kept, %kcounts = nn.moe_route %e num_experts = 4 capacity = 3 : tensor<16x2xi64>
  return %e, %slots, %counts, %kept, %kcounts
      : tensor<16x2xi64>, tensor<16x2xi64>, tensor<4xi64>, tensor<16x2xi64>, tensor<4xi64>
}

// CHECK: call_opaque "loom.kernel.topk"(%0, %1) {args = [0 : index, #emitc.opaque<"{16, 2}">, 1 : index, #emitc.opaque<"{16, 4}">, 2]} : (!emitc.ptr<i64>, !emitc.ptr<f32>) -> ()
// CHECK: call_opaque "loom.kernel.moe_route"(%2, %3, %4) {args = [0 : index, #emitc.opaque<"{16, 2}">, 1 : index, #emitc.opaque<"{4}">, 2 : index, #emitc.opaque<"{16, 2}">, #emitc.opaque<"nullptr">, #emitc.opaque<"{}">, #emitc.opaque<"nullptr">, #emitc.opaque<"{}">, #emitc.opaque<"nullptr">, #emitc.opaque<"{}">, 1, #emitc.opaque<"loom::kAbsent">, 4]} : (!emitc.ptr<i64>, !emitc.ptr<i64>, !emitc.ptr<i64>) -> ()
// CHECK: call_opaque "loom.kernel.moe_route"(%5, %6, %7) {args = [0 : index, #emitc.opaque<"{16, 2}">, 1 : index, #emitc.opaque<"{4}">, 2 : index, #emitc.opaque<"{16, 2}">, #emitc.opaque<"nullptr">, #emitc.opaque<"{}">, #emitc.opaque<"nullptr">, #emitc.opaque<"{}">, #emitc.opaque<"nullptr">, #emitc.opaque<"{}">, 1, 3, 4]} : (!emitc.ptr<i64>, !emitc.ptr<i64>, !emitc.ptr<i64>) -> ()

// CPP: loom::host::topk(result_0, {16, 2}, s, {16, 4}, 2);
// CPP: loom::host::moe_route(result_1, {16, 2}, result_2, {4}, result_0, {16, 2}, nullptr, {}, nullptr, {}, nullptr, {}, 1, loom::kAbsent, 4);
// CPP: loom::host::moe_route(result_3, {16, 2}, result_4, {4}, result_0, {16, 2}, nullptr, {}, nullptr, {}, nullptr, {}, 1, 3, 4);

// CUDA: loom::cuda::topk(result_0, {16, 2}, s, {16, 4}, 2);
// ASCEND: loom::ascend::topk(result_0, {16, 2}, s, {16, 4}, 2);
// CUDA: loom::cuda::moe_route(result_1, {16, 2}, result_2, {4}, result_0, {16, 2}, nullptr, {}, nullptr, {}, nullptr, {}, 1, loom::kAbsent, 4);
// ASCEND: loom::ascend::moe_route(result_1, {16, 2}, result_2, {4}, result_0, {16, 2}, nullptr, {}, nullptr, {}, nullptr, {}, 1, loom::kAbsent, 4);

// The buffer ops: an absent weights operand is a null pointer with an
// empty shape, the counts an int64_t buffer, an absent transpose_rhs
// loom::kAbsent (false for a bool parameter).

func.func @layer(%x: tensor<16x8xf32> {nn.data}, %slots: tensor<16x2xi64> {nn.data},
                 %w: tensor<16x2xf32> {nn.data}, %counts: tensor<4xi64> {nn.data},
                 %w1: tensor<4x8x12xf32> {nn.data})
    -> (tensor<16x8xf32>, tensor<16x2xf32>, tensor<4x8x12xf32>) {
  %buffer = nn.moe_dispatch %x, %slots rows = 32 : tensor<16x8xf32>, tensor<16x2xi64>
  %h = nn.grouped_matmul %buffer, %w1, %counts : tensor<32x8xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  %o = nn.grouped_matmul %h, %w1, %counts transpose_rhs : tensor<32x12xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  %y = nn.moe_combine %o, %slots weights %w : tensor<32x8xf32>, tensor<16x2xi64>, tensor<16x2xf32>
  %d = nn.moe_slot_dot %o, %x, %slots : tensor<32x8xf32>, tensor<16x8xf32>, tensor<16x2xi64>
  %g = nn.grouped_matmul_grad %buffer, %h, %counts : tensor<32x8xf32>, tensor<32x12xf32>, tensor<4xi64>
  return %y, %d, %g : tensor<16x8xf32>, tensor<16x2xf32>, tensor<4x8x12xf32>
}

// LAYER: call_opaque "loom.kernel.moe_dispatch"(%{{.*}}) {args = [0 : index, #emitc.opaque<"{32, 8}">, 1 : index, #emitc.opaque<"{16, 8}">, 2 : index, #emitc.opaque<"{16, 2}">, #emitc.opaque<"nullptr">, #emitc.opaque<"{}">, 32]} : (!emitc.ptr<f32>, !emitc.ptr<f32>, !emitc.ptr<i64>) -> ()
// LAYER: call_opaque "loom.kernel.grouped_matmul"(%{{.*}}) {args = [{{.*}}, 3 : index, #emitc.opaque<"{4}">, 1, #emitc.opaque<"loom::kAbsent">]} : (!emitc.ptr<f32>, !emitc.ptr<f32>, !emitc.ptr<f32>, !emitc.ptr<i64>) -> ()
// LAYER: call_opaque "loom.kernel.grouped_matmul"(%{{.*}}) {args = [{{.*}}, 3 : index, #emitc.opaque<"{4}">, 1, #emitc.opaque<"true">]}
// LAYER: call_opaque "loom.kernel.moe_combine"(%{{.*}}) {args = [0 : index, #emitc.opaque<"{16, 8}">, 1 : index, #emitc.opaque<"{32, 8}">, 2 : index, #emitc.opaque<"{16, 2}">, 3 : index, #emitc.opaque<"{16, 2}">]} : (!emitc.ptr<f32>, !emitc.ptr<f32>, !emitc.ptr<i64>, !emitc.ptr<f32>) -> ()

// LCPP: loom::host::moe_dispatch(moe_dispatch_0, {32, 8}, x, {16, 8}, slots, {16, 2}, nullptr, {}, 32);
// LCPP: loom::host::grouped_matmul(grouped_matmul_0, {32, 12}, moe_dispatch_0, {32, 8}, w1, {4, 8, 12}, counts, {4}, 1, loom::kAbsent);
// LCPP: loom::host::grouped_matmul(grouped_matmul_1, {32, 8}, grouped_matmul_0, {32, 12}, w1, {4, 8, 12}, counts, {4}, 1, true);
// LCPP: loom::host::moe_combine(result_0, {16, 8}, grouped_matmul_1, {32, 8}, slots, {16, 2}, w, {16, 2});
// LCPP: loom::host::moe_slot_dot(result_1, {16, 2}, grouped_matmul_1, {32, 8}, x, {16, 8}, slots, {16, 2});
// LCPP: loom::host::grouped_matmul_grad(result_2, {4, 8, 12}, moe_dispatch_0, {32, 8}, grouped_matmul_0, {32, 12}, counts, {4}, 1);

// LCUDA: loom::cuda::moe_dispatch(moe_dispatch_0, {32, 8}, x, {16, 8}, slots, {16, 2}, nullptr, {}, 32);
// LASCEND: loom::ascend::moe_dispatch(moe_dispatch_0, {32, 8}, x, {16, 8}, slots, {16, 2}, nullptr, {}, 32);
// LCUDA: loom::cuda::grouped_matmul(grouped_matmul_1, {32, 8}, grouped_matmul_0, {32, 12}, w1, {4, 8, 12}, counts, {4}, 1, true);
// LASCEND: loom::ascend::grouped_matmul(grouped_matmul_1, {32, 8}, grouped_matmul_0, {32, 12}, w1, {4, 8, 12}, counts, {4}, 1, true);
// LCUDA: loom::cuda::grouped_matmul_grad(result_2, {4, 8, 12}, moe_dispatch_0, {32, 8}, grouped_matmul_0, {32, 12}, counts, {4}, 1);
// LASCEND: loom::ascend::grouped_matmul_grad(result_2, {4, 8, 12}, moe_dispatch_0, {32, 8}, grouped_matmul_0, {32, 12}, counts, {4}, 1);

// Expert blocks (expert parallelism): the route, the grouped matmul and its
// weight gradient pass their blocks to the kernel.

func.func @blocked(%e: tensor<16x2xi64> {nn.data}, %x: tensor<16x8xf32> {nn.data},
                   %w1: tensor<4x8x12xf32> {nn.data})
    -> (tensor<64x12xf32>, tensor<4x8x12xf32>) {
  %slots, %counts = nn.moe_route %e num_experts = 4 blocks = 2 : tensor<16x2xi64>
  %buffer = nn.moe_dispatch %x, %slots rows = 64 : tensor<16x8xf32>, tensor<16x2xi64>
  %h = nn.grouped_matmul %buffer, %w1, %counts blocks = 2 : tensor<64x8xf32>, tensor<4x8x12xf32>, tensor<4xi64>
  %g = nn.grouped_matmul_grad %buffer, %h, %counts blocks = 2 : tensor<64x8xf32>, tensor<64x12xf32>, tensor<4xi64>
  return %h, %g : tensor<64x12xf32>, tensor<4x8x12xf32>
}

// BCPP: loom::host::moe_route({{.*}}, {16, 2}, {{.*}}, {4}, e, {16, 2}, nullptr, {}, nullptr, {}, nullptr, {}, 2, loom::kAbsent, 4);
// BCPP: loom::host::grouped_matmul(result_0, {64, 12}, {{.*}}, {64, 8}, w1, {4, 8, 12}, {{.*}}, {4}, 2, loom::kAbsent);
// BCPP: loom::host::grouped_matmul_grad(result_1, {4, 8, 12}, {{.*}}, {64, 8}, result_0, {64, 12}, {{.*}}, {4}, 2);
// BCUDA: loom::cuda::moe_route({{.*}}, {16, 2}, {{.*}}, {4}, e, {16, 2}, nullptr, {}, nullptr, {}, nullptr, {}, 2, loom::kAbsent, 4);
// BASCEND: loom::ascend::moe_route({{.*}}, {16, 2}, {{.*}}, {4}, e, {16, 2}, nullptr, {}, nullptr, {}, nullptr, {}, 2, loom::kAbsent, 4);
// BCUDA: loom::cuda::grouped_matmul(result_0, {64, 12}, {{.*}}, {64, 8}, w1, {4, 8, 12}, {{.*}}, {4}, 2, loom::kAbsent);
// BASCEND: loom::ascend::grouped_matmul(result_0, {64, 12}, {{.*}}, {64, 8}, w1, {4, 8, 12}, {{.*}}, {4}, 2, loom::kAbsent);

// Placement per micro-step: nn.moe_plan is a kernel of every target (the
// planner runs in every rank; the device targets run it on the host from a
// copy of the forecast) with its attributes in name order; the route takes
// the plan's hosts.
// RUN: loom-translate --loom-to-host-cpp --loom-entry placed %s | FileCheck %s --check-prefix=PCPP
// RUN: loom-translate --loom-to-cuda-cpp --loom-entry placed %s | FileCheck %s --check-prefix=PCUDA
// RUN: loom-translate --loom-to-ascend-cpp --loom-entry placed %s | FileCheck %s --check-prefix=PASCEND

func.func @placed(%e: tensor<16x2xi64> {nn.data}, %f: tensor<4x1x4xi64> {nn.data})
    -> (tensor<16x2xi64>, tensor<6xi64>, tensor<6xi64>, tensor<6xi64>) {
  %hosts, %lookup = nn.moe_plan %f layer = 0 devices = 2 slots = 3 expert_bytes = 1024 : tensor<4x1x4xi64>
  %slots, %counts = nn.moe_route %e hosts %hosts num_experts = 4 blocks = 2 : tensor<16x2xi64>, tensor<6xi64>
  %h2, %l2 = nn.moe_plan %f previous %lookup layer = 0 devices = 2 slots = 3 expert_bytes = 1024 : tensor<4x1x4xi64>, tensor<6xi64>
  return %slots, %counts, %lookup, %l2 : tensor<16x2xi64>, tensor<6xi64>, tensor<6xi64>, tensor<6xi64>
}

// The plan after another takes its lookup (resident replicas).
// PCPP: loom::host::moe_plan({{.*}}, {6}, {{.*}}, {6}, f, {4, 1, 4}, nullptr, {}, 2, 1024, 0, 1, 3);
// PCPP: loom::host::moe_route({{.*}}, {16, 2}, {{.*}}, {6}, e, {16, 2}, {{.*}}, {6}, nullptr, {}, nullptr, {}, 2, loom::kAbsent, 4);
// PCPP: loom::host::moe_plan({{.*}}, {6}, {{.*}}, {6}, f, {4, 1, 4}, {{.*}}, {6}, 2, 1024, 0, 1, 3);
// PCUDA: loom::cuda::moe_plan({{.*}}, {6}, {{.*}}, {6}, f, {4, 1, 4}, nullptr, {}, 2, 1024, 0, 1, 3);
// PCUDA: loom::cuda::moe_route({{.*}}, {16, 2}, {{.*}}, {6}, e, {16, 2}, {{.*}}, {6}, nullptr, {}, nullptr, {}, 2, loom::kAbsent, 4);
// PCUDA: loom::cuda::moe_plan({{.*}}, {6}, {{.*}}, {6}, f, {4, 1, 4}, {{.*}}, {6}, 2, 1024, 0, 1, 3);
// PASCEND: loom::ascend::moe_plan({{.*}}, {6}, {{.*}}, {6}, f, {4, 1, 4}, {{.*}}, 2, 1024, 0, 1, 3);
// PASCEND: loom::ascend::moe_route({{.*}}, {16, 2}, {{.*}}, {6}, e, {16, 2}, {{.*}}, {6}, nullptr, {}, nullptr, {}, 2, loom::kAbsent, 4);
// PASCEND: loom::ascend::moe_plan({{.*}}, {6}, {{.*}}, {6}, f, {4, 1, 4}, {{.*}}, {6}, 2, 1024, 0, 1, 3);

// One share of a batch (hspmd-moe-sparse-exchange): the shares' table and
// the member after the hosts, each a pointer and its shape.
// RUN: loom-translate --loom-to-host-cpp --loom-entry share %s | FileCheck %s --check-prefix=SCPP
// RUN: loom-translate --loom-to-cuda-cpp --loom-entry share %s | FileCheck %s --check-prefix=SCUDA
// RUN: loom-translate --loom-to-ascend-cpp --loom-entry share %s | FileCheck %s --check-prefix=SASCEND

func.func @share(%e: tensor<8x2xi64> {nn.data}, %t: tensor<2x4xi64> {nn.data},
                 %m: tensor<i64> {nn.data}, %hosts: tensor<6xi64> {nn.data})
    -> (tensor<8x2xi64>, tensor<4xi64>, tensor<6xi64>) {
  %slots, %counts = nn.moe_route %e shares(%t : tensor<2x4xi64>) at %m num_experts = 4 blocks = 2 : tensor<8x2xi64>
  %placed, %replicas = nn.moe_route %e hosts %hosts shares(%t : tensor<2x4xi64>) at %m num_experts = 4 capacity = 3 blocks = 2 : tensor<8x2xi64>, tensor<6xi64>
  return %slots, %counts, %replicas : tensor<8x2xi64>, tensor<4xi64>, tensor<6xi64>
}

// SCPP: loom::host::moe_route({{.*}}, {8, 2}, {{.*}}, {4}, e, {8, 2}, nullptr, {}, t, {2, 4}, m, {}, 2, loom::kAbsent, 4);
// SCPP: loom::host::moe_route({{.*}}, {8, 2}, {{.*}}, {6}, e, {8, 2}, hosts, {6}, t, {2, 4}, m, {}, 2, 3, 4);
// SCUDA: loom::cuda::moe_route({{.*}}, {8, 2}, {{.*}}, {4}, e, {8, 2}, nullptr, {}, t, {2, 4}, m, {}, 2, loom::kAbsent, 4);
// SASCEND: loom::ascend::moe_route({{.*}}, {8, 2}, {{.*}}, {4}, e, {8, 2}, nullptr, {}, t, {2, 4}, m, {}, 2, loom::kAbsent, 4);
