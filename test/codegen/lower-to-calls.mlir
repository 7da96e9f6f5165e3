// RUN: loom-opt %s --loom-lower-to-calls=entry=step | FileCheck %s
// RUN: loom-translate --loom-to-host-cpp --loom-entry step %s | FileCheck %s --check-prefix=CPP
// RUN: loom-translate --loom-to-cuda-cpp --loom-entry step %s | FileCheck %s --check-prefix=CUDA
// RUN: loom-translate --loom-to-ascend-cpp --loom-entry step %s | FileCheck %s --check-prefix=ASCEND

// A training step of two device groups: {0, 1} all-reduces a partial sum
// inside, {2} computes alone, and their gradients meet in an exchange. Each
// group's program becomes a class: its buffers as named pointers into one
// arena, a communicator per sub-group, the exchange's compiled plan, one
// method per phase, and `step`.

// CHECK-LABEL: emitc.class @step_group0
// CHECK: emitc.field @arena : !emitc.opaque<"loom.arena"> {loom.arena, loom.bytes = 448 : i64, loom.persistent_bytes = 320 : i64, loom.transient_peak = 128 : i64}
// CHECK: emitc.field @w : !emitc.ptr<f32> {loom.bytes = 32 : i64, loom.offset = 0 : i64}
// CHECK: emitc.field @x : !emitc.ptr<f32> {loom.bytes = 32 : i64, loom.offset = 128 : i64}
// CHECK: emitc.field @loss : !emitc.ptr<f32> {loom.bytes = 4 : i64, loom.offset = 256 : i64}
// CHECK: emitc.field @matmul_0 : !emitc.ptr<f32> {loom.bytes = 16 : i64, loom.offset = 320 : i64}
// CHECK: emitc.field @arg_offsets : !emitc.array<4xi64> = dense<[0, 64, 128, 192]>
// CHECK: emitc.field @loss_result : i64 = 0
// CHECK: emitc.field @comm_0 : !emitc.opaque<"loom.comm"> {loom.axes = array<i64: 0>, loom.comm, loom.devices = array<i64: 0, 1>, loom.mesh = array<i64: 2>}
// CHECK: emitc.field @plan_0 : !emitc.opaque<"loom.exchange"> {loom.devices = array<i64: 0, 1, 2>
// CHECK: emitc.func @forward()
// CHECK: call_opaque "loom.kernel.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) {args = [0 : index, #emitc.opaque<"{2, 2}">, 1 : index, #emitc.opaque<"{2, 4}">, 2 : index, #emitc.opaque<"{4, 2}">, #emitc.opaque<"loom::kAbsent">, #emitc.opaque<"loom::kAbsent">]}
// CHECK: call_opaque "loom.comm.all_reduce"({{.*}}) {args = [0 : index, #emitc.opaque<"{2, 2}">, 1 : index, #emitc.opaque<"{2, 2}">, 2 : index, #emitc.opaque<"\22sum\22">]}
// CHECK: emitc.func @backward()
// CHECK: call_opaque "loom.comm.exchange"
// CHECK: emitc.func @update()
// CHECK: call_opaque "loom.kernel.sgd_update"
// CHECK: emitc.func @step()
// CHECK-NEXT: call @forward()
// CHECK-NEXT: call @backward()
// CHECK-NEXT: call @update()
// CHECK-LABEL: emitc.class @step_group1
// CHECK-NOT: loom.comm.all_reduce
// CHECK: loom.comm.exchange
// CHECK-NOT: func.func

// CPP: #include "runtime/host/Program.h"
// CPP: // @step_group0 (host target) on devices {0, 1}; arena of 448 bytes per device.
// CPP: class step_group0 {
// CPP: loom::host::Arena arena = loom::host::Arena(448);
// CPP: float* w = loom::host::at<float>(arena, 0);
// CPP: loom::rt::Communicator* comm_0 = loom::host::subgroup({0, 1}, {2}, {0});
// CPP: loom::host::ExchangePlan plan_0 = loom::host::ExchangePlan({0, 1, 2}, {
// CPP: void forward() {
// CPP-NEXT: loom::host::matmul(matmul_0, {2, 2}, x, {2, 4}, w, {4, 2}, loom::kAbsent, loom::kAbsent);
// CPP-NEXT: loom::host::all_reduce(all_reduce_0, {2, 2}, matmul_0, {2, 2}, comm_0, "sum");
// CPP: void step() {
// The C ABI of a compiled program over both programs (a program library
// built with -DLOOM_PROGRAM_LIBRARY), else main, the driver over it.
// CPP: LOOM_PROGRAM_LIBRARY_ABI((loom::host::createProgram<step_group0, step_group1>(mpi_comm, program, {{[{][{]}}0, 1}, {2}}, {{[{][{]}}0, 1}, {0, 1, 2}})))
// CPP-NEXT: #ifndef LOOM_PROGRAM_LIBRARY
// CPP-NEXT: int32_t main(int32_t [[ARGC:[a-z0-9]+]], char** [[ARGV:[a-z0-9]+]]) {
// CPP-NEXT: int32_t {{.*}} = loom::host::runProgramExecutable([[ARGC]], [[ARGV]]);
// CPP: #endif

// The CUDA target spells the same call layer with its own runtime's names
// (device arena, NCCL communicators, Loom's CUDA kernels).
// CUDA: #include "runtime/cuda/Program.h"
// CUDA: loom::cuda::Arena arena = loom::cuda::Arena(448);
// CUDA: float* w = loom::cuda::at<float>(arena, 0);
// CUDA: loom::cuda::Communicator* comm_0 = loom::cuda::subgroup({0, 1}, {2}, {0});
// CUDA: void forward() {
// CUDA-NEXT: loom::cuda::matmul(matmul_0, {2, 2}, x, {2, 4}, w, {4, 2}, loom::kAbsent, loom::kAbsent);
// CUDA-NEXT: loom::cuda::all_reduce(all_reduce_0, {2, 2}, matmul_0, {2, 2}, comm_0, "sum");
// CUDA: LOOM_PROGRAM_LIBRARY_ABI((loom::cuda::createProgram<step_group0, step_group1>(mpi_comm, program,

// So does the Ascend target (device arena from aclrtMalloc, HCCL
// communicators, each kernel an aclnn operator: runtime/ascend).
// ASCEND: #include "runtime/ascend/Program.h"
// ASCEND: loom::ascend::Arena arena = loom::ascend::Arena(448);
// ASCEND: float* w = loom::ascend::at<float>(arena, 0);
// ASCEND: loom::ascend::Communicator* comm_0 = loom::ascend::subgroup({0, 1}, {2}, {0});
// ASCEND: loom::ascend::ExchangePlan plan_0 = loom::ascend::ExchangePlan({0, 1, 2}, {
// ASCEND: void forward() {
// ASCEND-NEXT: loom::ascend::matmul(matmul_0, {2, 2}, x, {2, 4}, w, {4, 2}, loom::kAbsent, loom::kAbsent);
// ASCEND-NEXT: loom::ascend::all_reduce(all_reduce_0, {2, 2}, matmul_0, {2, 2}, comm_0, "sum");
// ASCEND: loom::ascend::sgd_update(
// ASCEND: LOOM_PROGRAM_LIBRARY_ABI((loom::ascend::createProgram<step_group0, step_group1>(mpi_comm, program,

module {
  func.func @step(%w: tensor<4x4xf32> {nn.param}, %m: tensor<4x4xf32> {nn.state = 0 : i64},
                  %x: tensor<6x4xf32> {nn.data}, %y: tensor<6xi64> {nn.data})
      -> (tensor<f32> {nn.loss}, tensor<4x4xf32> {nn.updates = 0 : i64}, tensor<4x4xf32> {nn.updates = 1 : i64}) {
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l, %w, %m : tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>
  }
  // Group {0, 1}: two rows each, the weight split by columns (TP2).
  func.func @step_group0(%w: tensor<4x2xf32> {nn.param}, %m: tensor<4x2xf32> {nn.state = 0 : i64},
                         %x: tensor<2x4xf32> {nn.data}, %y: tensor<2xi64> {nn.data})
      -> (tensor<f32> {nn.loss}, tensor<4x2xf32> {nn.updates = 0 : i64}, tensor<4x2xf32> {nn.updates = 1 : i64})
      attributes {hspmd.group = #hspmd.group<[0, 1]>, hspmd.specializes = @step} {
    %h = nn.matmul %x, %w : tensor<2x4xf32>, tensor<4x2xf32>
    %s = hspmd.all_reduce sum %h over [0] of [2] : tensor<2x2xf32> -> tensor<2x2xf32>
    %l = nn.reduce sum %s dims = [0, 1] : tensor<2x2xf32>
    %g = nn.matmul %x, %s transpose_lhs : tensor<2x4xf32>, tensor<2x2xf32>
    %t = hspmd.exchange %g shape [4, 4] : tensor<4x2xf32> -> tensor<4x2xf32> from <partial(sum): {[0, 1]: [S1:2]}, {[2]: []}> to <replicated: {[0, 1]: [S1:2]}, {[2]: []}>
    %np, %nm = nn.sgd_update %w, %t, %m {lr = 1.0e-1 : f64} : tensor<4x2xf32>
    return %l, %np, %nm : tensor<f32>, tensor<4x2xf32>, tensor<4x2xf32>
  }
  // Group {2}: two rows, the whole weight.
  func.func @step_group1(%w: tensor<4x4xf32> {nn.param}, %m: tensor<4x4xf32> {nn.state = 0 : i64},
                         %x: tensor<2x4xf32> {nn.data}, %y: tensor<2xi64> {nn.data})
      -> (tensor<f32> {nn.loss}, tensor<4x4xf32> {nn.updates = 0 : i64}, tensor<4x4xf32> {nn.updates = 1 : i64})
      attributes {hspmd.group = #hspmd.group<[2]>, hspmd.specializes = @step} {
    %h = nn.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32>
    %l = nn.reduce sum %h dims = [0, 1] : tensor<2x4xf32>
    %g = nn.matmul %x, %h transpose_lhs : tensor<2x4xf32>, tensor<2x4xf32>
    %t = hspmd.exchange %g shape [4, 4] : tensor<4x4xf32> -> tensor<4x4xf32> from <partial(sum): {[0, 1]: [S1:2]}, {[2]: []}> to <replicated: {[0, 1]: [S1:2]}, {[2]: []}>
    %np, %nm = nn.sgd_update %w, %t, %m {lr = 1.0e-1 : f64} : tensor<4x4xf32>
    return %l, %np, %nm : tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>
  }
}
