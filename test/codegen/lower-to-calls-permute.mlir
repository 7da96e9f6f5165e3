// RUN: loom-opt %s --loom-lower-to-calls=entry=step | FileCheck %s
// RUN: loom-translate --loom-to-host-cpp --loom-entry step %s | FileCheck %s --check-prefix=CPP
// RUN: loom-translate --loom-to-cuda-cpp --loom-entry step %s | FileCheck %s --check-prefix=CUDA
// RUN: loom-translate --loom-to-ascend-cpp --loom-entry step %s | FileCheck %s --check-prefix=ASCEND

// hspmd.permute on a group of 8 read as the mesh [2, 2, 2]: once over all
// three axes (a 3-cycle of their digits), once over the last two (a swap
// inside each half). Each becomes a call on the communicator of its
// sub-group, with the permutation and the sizes of the axes it permutes
// (from which each rank finds where its buffer goes and where its new one
// comes from: runtime/host/Program.h, permutePeers).

// CHECK-LABEL: emitc.class @step_group0
// CHECK: emitc.field @comm_0 : !emitc.opaque<"loom.comm"> {loom.axes = array<i64: 0, 1, 2>, loom.comm, loom.devices = array<i64: 0, 1, 2, 3, 4, 5, 6, 7>, loom.mesh = array<i64: 2, 2, 2>}
// CHECK: emitc.field @comm_1 : !emitc.opaque<"loom.comm"> {loom.axes = array<i64: 1, 2>, loom.comm, loom.devices = array<i64: 0, 1, 2, 3, 4, 5, 6, 7>, loom.mesh = array<i64: 2, 2, 2>}
// CHECK: emitc.func @forward()
// CHECK: call_opaque "loom.comm.permute"(%{{.*}}, %{{.*}}, %{{.*}}) {args = [0 : index, #emitc.opaque<"{4, 2}">, 1 : index, #emitc.opaque<"{4, 2}">, 2 : index, #emitc.opaque<"{2, 0, 1}">, #emitc.opaque<"{2, 2, 2}">]}
// CHECK: call_opaque "loom.comm.permute"(%{{.*}}, %{{.*}}, %{{.*}}) {args = [0 : index, #emitc.opaque<"{4, 2}">, 1 : index, #emitc.opaque<"{4, 2}">, 2 : index, #emitc.opaque<"{1, 0}">, #emitc.opaque<"{2, 2}">]}
// CHECK: call_opaque "loom.kernel.reduce"

// CPP: loom::rt::Communicator* comm_0 = loom::host::subgroup({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2}, {0, 1, 2});
// CPP: loom::rt::Communicator* comm_1 = loom::host::subgroup({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2}, {1, 2});
// CPP: void forward() {
// CPP-NEXT: loom::host::permute(permute_0, {4, 2}, x, {4, 2}, comm_0, {2, 0, 1}, {2, 2, 2});
// CPP-NEXT: loom::host::permute(permute_1, {4, 2}, permute_0, {4, 2}, comm_1, {1, 0}, {2, 2});

// CUDA: loom::cuda::Communicator* comm_0 = loom::cuda::subgroup({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2}, {0, 1, 2});
// CUDA: loom::cuda::permute(permute_0, {4, 2}, x, {4, 2}, comm_0, {2, 0, 1}, {2, 2, 2});
// CUDA-NEXT: loom::cuda::permute(permute_1, {4, 2}, permute_0, {4, 2}, comm_1, {1, 0}, {2, 2});

// ASCEND: loom::ascend::Communicator* comm_0 = loom::ascend::subgroup({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2}, {0, 1, 2});
// ASCEND: loom::ascend::permute(permute_0, {4, 2}, x, {4, 2}, comm_0, {2, 0, 1}, {2, 2, 2});
// ASCEND-NEXT: loom::ascend::permute(permute_1, {4, 2}, permute_0, {4, 2}, comm_1, {1, 0}, {2, 2});

module {
  func.func @step(%x: tensor<16x4xf32> {nn.data}) -> (tensor<f32> {nn.loss}) {
    %l = nn.reduce sum %x dims = [0, 1] : tensor<16x4xf32>
    return %l : tensor<f32>
  }
  func.func @step_group0(%x: tensor<4x2xf32> {nn.data}) -> (tensor<f32> {nn.loss})
      attributes {hspmd.group = #hspmd.group<[0, 1, 2, 3, 4, 5, 6, 7]>, hspmd.specializes = @step} {
    %a = hspmd.permute %x perm [2, 0, 1] over [0, 1, 2] of [2, 2, 2] : tensor<4x2xf32> -> tensor<4x2xf32>
    %b = hspmd.permute %a perm [1, 0] over [1, 2] of [2, 2, 2] : tensor<4x2xf32> -> tensor<4x2xf32>
    %l = nn.reduce sum %b dims = [0, 1] : tensor<4x2xf32>
    return %l : tensor<f32>
  }
}
