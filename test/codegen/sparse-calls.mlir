// hspmd.sparse_reduce_scatter and hspmd.sparse_all_gather as calls: the buffer, then its row indices
// (an int64_t buffer), then the communicator; every target's runtime has
// the typed function (the host's over MPI; the device targets' staged
// through host copies over the members' MPI communicator).
// RUN: loom-opt %s --loom-lower-to-calls=entry=step | FileCheck %s
// RUN: loom-translate --loom-to-host-cpp --loom-entry step %s | FileCheck %s --check-prefix=CPP
// RUN: loom-translate --loom-to-cuda-cpp --loom-entry step %s | FileCheck %s --check-prefix=CUDA
// RUN: loom-translate --loom-to-ascend-cpp --loom-entry step %s | FileCheck %s --check-prefix=ASCEND

// CHECK: call_opaque "loom.comm.sparse_reduce_scatter"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {args = [0 : index, #emitc.opaque<"{4, 4}">, 1 : index, #emitc.opaque<"{8, 4}">, 2 : index, #emitc.opaque<"{3, 2}">, 3 : index]} : (!emitc.ptr<f32>, !emitc.ptr<f32>, !emitc.ptr<i64>, !emitc.opaque<"loom.comm">) -> ()
// The sparse exchange's communicator: one sub-group of the devices it
// names, the host runtime's MPI communicator on every target (its members
// run several programs).
// CUDA: loom::rt::Communicator* comm_1 = loom::host::subgroup({0, 1, 2}, {3}, {0});
// ASCEND: loom::rt::Communicator* comm_1 = loom::host::subgroup({0, 1, 2}, {3}, {0});
// CPP: loom::rt::Communicator* comm_1 = loom::host::subgroup({0, 1, 2}, {3}, {0});
// CPP: loom::host::sparse_reduce_scatter(sparse_reduce_scatter_0, {4, 4}, x, {8, 4}, r, {3, 2}, comm_0);
// CUDA: loom::cuda::sparse_reduce_scatter(sparse_reduce_scatter_0, {4, 4}, x, {8, 4}, r, {3, 2}, comm_0);
// ASCEND: loom::ascend::sparse_reduce_scatter(sparse_reduce_scatter_0, {4, 4}, x, {8, 4}, r, {3, 2}, comm_0);
// CPP: loom::host::sparse_all_gather(sparse_all_gather_0, {8, 4}, sparse_reduce_scatter_0, {4, 4}, r, {3, 2}, comm_0);
// CUDA: loom::cuda::sparse_all_gather(sparse_all_gather_0, {8, 4}, sparse_reduce_scatter_0, {4, 4}, r, {3, 2}, comm_0);
// ASCEND: loom::ascend::sparse_all_gather(sparse_all_gather_0, {8, 4}, sparse_reduce_scatter_0, {4, 4}, r, {3, 2}, comm_0);
// hspmd.sparse_exchange: a communicator of every device it names (one
// sub-group of them all), then each member's block as a list and whether
// it gathers.
// CHECK: call_opaque "loom.comm.sparse_exchange"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {args = [0 : index, #emitc.opaque<"{4, 4}">, 1 : index, #emitc.opaque<"{8, 4}">, 2 : index, #emitc.opaque<"{3, 2}">, 3 : index, #emitc.opaque<"{0, 4, 4, 4, 2, 4}">, #emitc.opaque<"false">]}
// CPP: loom::host::sparse_exchange(sparse_exchange_0, {4, 4}, x, {8, 4}, r, {3, 2}, comm_1, {0, 4, 4, 4, 2, 4}, false);
// CUDA: loom::cuda::sparse_exchange(sparse_exchange_0, {4, 4}, x, {8, 4}, r, {3, 2}, comm_1, {0, 4, 4, 4, 2, 4}, false);
// ASCEND: loom::ascend::sparse_exchange(sparse_exchange_0, {4, 4}, x, {8, 4}, r, {3, 2}, comm_1, {0, 4, 4, 4, 2, 4}, false);
// CPP: loom::host::sparse_exchange(sparse_exchange_1, {8, 4}, sparse_exchange_0, {4, 4}, r, {3, 2}, comm_1, {0, 4, 4, 4, 2, 4}, true);
// CUDA: loom::cuda::sparse_exchange(sparse_exchange_1, {8, 4}, sparse_exchange_0, {4, 4}, r, {3, 2}, comm_1, {0, 4, 4, 4, 2, 4}, true);
// ASCEND: loom::ascend::sparse_exchange(sparse_exchange_1, {8, 4}, sparse_exchange_0, {4, 4}, r, {3, 2}, comm_1, {0, 4, 4, 4, 2, 4}, true);

module {
  func.func @step(%w: tensor<4xf32> {nn.param}, %x: tensor<16x4xf32> {nn.data},
                  %r: tensor<6x2xi64> {nn.data})
      -> (tensor<f32> {nn.loss}, tensor<4xf32> {nn.updates = 0 : i64}) {
    %l = arith.constant dense<0.0> : tensor<f32>
    return %l, %w : tensor<f32>, tensor<4xf32>
  }
  func.func @step_group0(%w: tensor<4xf32> {nn.param}, %x: tensor<8x4xf32> {nn.data},
                         %r: tensor<3x2xi64> {nn.data})
      -> (tensor<f32> {nn.loss}, tensor<4xf32> {nn.updates = 0 : i64})
      attributes {hspmd.group = #hspmd.group<[0, 1]>, hspmd.specializes = @step} {
    %b = hspmd.sparse_reduce_scatter %x rows %r over [0] of [2] : tensor<8x4xf32>, tensor<3x2xi64> -> tensor<4x4xf32>
    %f = hspmd.sparse_all_gather %b rows %r over [0] of [2] : tensor<4x4xf32>, tensor<3x2xi64> -> tensor<8x4xf32>
    %e = hspmd.sparse_exchange %x rows %r among [0, 1, 2] blocks [0, 4, 4, 4, 2, 4] : tensor<8x4xf32>, tensor<3x2xi64> -> tensor<4x4xf32>
    %g = hspmd.sparse_exchange gather %e rows %r among [0, 1, 2] blocks [0, 4, 4, 4, 2, 4] : tensor<4x4xf32>, tensor<3x2xi64> -> tensor<8x4xf32>
    %s = nn.add %f, %g : tensor<8x4xf32>, tensor<8x4xf32>
    %l0 = nn.reduce sum %s dims = [0, 1] : tensor<8x4xf32>
    %l1 = nn.reduce sum %e dims = [0, 1] : tensor<4x4xf32>
    %l = nn.add %l0, %l1 : tensor<f32>, tensor<f32>
    return %l, %w : tensor<f32>, tensor<4xf32>
  }
}
