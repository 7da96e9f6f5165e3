// RUN: loom-opt %s --loom-lower-to-calls=entry=step | FileCheck %s
// RUN: loom-translate --loom-to-host-cpp --loom-entry step %s | FileCheck %s --check-prefix=CPP
// RUN: loom-translate --loom-to-cuda-cpp --loom-entry step %s | FileCheck %s --check-prefix=CUDA

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
// CHECK: call_opaque "loom.kernel.moe_route"(%2, %3, %4) {args = [0 : index, #emitc.opaque<"{16, 2}">, 1 : index, #emitc.opaque<"{4}">, 2 : index, #emitc.opaque<"{16, 2}">, #emitc.opaque<"loom::kAbsent">, 4]} : (!emitc.ptr<i64>, !emitc.ptr<i64>, !emitc.ptr<i64>) -> ()
// CHECK: call_opaque "loom.kernel.moe_route"(%5, %6, %7) {args = [0 : index, #emitc.opaque<"{16, 2}">, 1 : index, #emitc.opaque<"{4}">, 2 : index, #emitc.opaque<"{16, 2}">, 3, 4]} : (!emitc.ptr<i64>, !emitc.ptr<i64>, !emitc.ptr<i64>) -> ()

// CPP: loom::host::topk(result_0, {16, 2}, s, {16, 4}, 2);
// CPP: loom::host::moe_route(result_1, {16, 2}, result_2, {4}, result_0, {16, 2}, loom::kAbsent, 4);
// CPP: loom::host::moe_route(result_3, {16, 2}, result_4, {4}, result_0, {16, 2}, 3, 4);

// CUDA: loom::cuda::topk(result_0, {16, 2}, s, {16, 4}, 2);
// CUDA: loom::cuda::moe_route(result_1, {16, 2}, result_2, {4}, result_0, {16, 2}, loom::kAbsent, 4);
