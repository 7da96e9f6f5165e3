//===- Program.cpp - Support of generated CUDA programs -------------------===//

#include "runtime/cuda/Program.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <vector>

// ncclAvg needs NCCL 2.10, ncclSend/ncclRecv 2.7.
static_assert(NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0),
              "Loom's CUDA runtime needs NCCL 2.10 or later");

using namespace loom;
using namespace loom::cuda;
using loom::rt::ElementType;
using loom::rt::Runtime;

namespace {

cudaStream_t stream = nullptr;
cublasHandle_t blas = nullptr;

void check(cudaError_t code, const char *what) {
  if (code != cudaSuccess)
    Runtime::get().fail(std::string("CUDA error in ") + what + ": " +
                        cudaGetErrorString(code));
}

void check(ncclResult_t code, const char *what) {
  if (code != ncclSuccess)
    Runtime::get().fail(std::string("NCCL error in ") + what + ": " +
                        ncclGetErrorString(code));
}

ncclDataType_t ncclType(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return ncclFloat32;
  case ElementType::F64:
    return ncclFloat64;
  case ElementType::I64:
    return ncclInt64;
  }
  return ncclFloat32;
}

/// The name of an NCCL data type for the records of library calls.
const char *typeName(ncclDataType_t type) {
  switch (type) {
  case ncclFloat32:
    return "f32";
  case ncclFloat64:
    return "f64";
  case ncclInt64:
    return "i64";
  default:
    return "unknown";
  }
}

using host::device::recordLibraryCall;
using host::device::Reduction;

ncclRedOp_t ncclOp(Reduction reduction) {
  switch (reduction) {
  case Reduction::Sum:
    return ncclSum;
  case Reduction::Mean:
    return ncclAvg;
  case Reduction::Max:
    return ncclMax;
  case Reduction::Min:
    return ncclMin;
  }
  return ncclSum;
}

/// Device scratch that grows as needed.
void *scratchMemory = nullptr;
int64_t scratchSize = 0;
char *scratch(int64_t bytes) {
  if (bytes > scratchSize) {
    if (scratchMemory) {
      // Queued work may still read the old buffer.
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      check(cudaFree(scratchMemory), "cudaFree");
    }
    check(cudaMalloc(&scratchMemory, static_cast<size_t>(bytes)), "cudaMalloc");
    scratchSize = bytes;
  }
  return static_cast<char *>(scratchMemory);
}

} // namespace

//===----------------------------------------------------------------------===//
// Device, arena, communicators
//===----------------------------------------------------------------------===//

void loom::cuda::startDevice(int index) {
  Runtime &runtime = Runtime::get();
  int devices = 0;
  cudaError_t code = cudaGetDeviceCount(&devices);
  if (code != cudaSuccess || devices == 0)
    runtime.fail("no CUDA device on this node (" +
                 std::string(code != cudaSuccess ? cudaGetErrorString(code)
                                                 : "0 devices") +
                 "); run the host target instead");
  check(cudaSetDevice(index % devices), "cudaSetDevice");
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS ||
      cublasSetStream(blas, stream) != CUBLAS_STATUS_SUCCESS)
    runtime.fail("cannot create a cuBLAS handle on the rank's stream");
  setContext(stream, blas);
}

namespace {

/// Member 0 makes the unique id and broadcasts it over MPI (not counted:
/// bootstrapping is not the program's traffic); then every member joins.
void *makeNccl(rt::Communicator &mpi) {
  ncclUniqueId id;
  if (mpi.getRank() == 0)
    check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  if (mpi.getSize() > 1)
    mpi.broadcastUncounted(&id, sizeof(id), 0);
  ncclComm_t comm = nullptr;
  check(ncclCommInitRank(&comm, mpi.getSize(), id, mpi.getRank()),
        "ncclCommInitRank");
  return comm;
}

} // namespace

Communicator *loom::cuda::subgroup(Ints devices, Shape mesh, Shape axes) {
  return host::device::subgroup(devices, mesh, axes, makeNccl);
}

//===----------------------------------------------------------------------===//
// The target
//===----------------------------------------------------------------------===//

const host::device::Target &loom::cuda::target() {
  static const host::device::Target cuda = {
      "cuda",
      startDevice,
      finishDevice,
      [] { synchronize(); },
      [](void *to, const void *from, size_t bytes) {
        copyToDevice(to, from, bytes);
      },
      [](void *to, const void *from, size_t bytes) {
        copyToHost(to, from, bytes);
      },
      [](size_t bytes) {
        void *memory = nullptr;
        check(cudaMalloc(&memory, bytes), "cudaMalloc");
        check(cudaMemset(memory, 0, bytes), "cudaMemset");
        return memory;
      },
      [](void *memory) { cudaFree(memory); },
      [](void *to, size_t toPitch, const void *from, size_t fromPitch,
         size_t width, size_t height) {
        check(cudaMemcpy2DAsync(to, toPitch, from, fromPitch, width, height,
                                cudaMemcpyDeviceToDevice, stream),
              "cudaMemcpy2DAsync");
      },
      [](void *to, const void *from, size_t bytes) {
        check(
            cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpyAsync");
      },
      [](void *to, size_t bytes) {
        check(cudaMemsetAsync(to, 0, bytes, stream), "cudaMemsetAsync");
      },
      scratch,
      // Each call records exactly what it passes to NCCL.
      [](void *comm, void *out, const void *in, int64_t count, ElementType type,
         Reduction reduction, int) {
        size_t n = static_cast<size_t>(count);
        ncclDataType_t dtype = ncclType(type);
        recordLibraryCall("all_reduce", comm, n, typeName(dtype));
        check(ncclAllReduce(in, out, n, dtype, ncclOp(reduction),
                            static_cast<ncclComm_t>(comm), stream),
              "ncclAllReduce");
      },
      [](void *comm, void *out, const void *in, int64_t count,
         ElementType type) {
        size_t n = static_cast<size_t>(count);
        ncclDataType_t dtype = ncclType(type);
        recordLibraryCall("all_gather", comm, n, typeName(dtype));
        check(ncclAllGather(in, out, n, dtype, static_cast<ncclComm_t>(comm),
                            stream),
              "ncclAllGather");
      },
      [](void *comm, void *out, const void *in, int64_t count, ElementType type,
         Reduction reduction, int) {
        size_t n = static_cast<size_t>(count);
        ncclDataType_t dtype = ncclType(type);
        recordLibraryCall("reduce_scatter", comm, n, typeName(dtype));
        check(ncclReduceScatter(in, out, n, dtype, ncclOp(reduction),
                                static_cast<ncclComm_t>(comm), stream),
              "ncclReduceScatter");
      },
      [](void *comm, void *out, const void *in, int64_t count, ElementType type,
         int members) {
        // Grouped sends and receives, one block per member.
        size_t n = static_cast<size_t>(count);
        ncclDataType_t dtype = ncclType(type);
        size_t bytes = static_cast<size_t>(count * rt::getElementSize(type));
        auto nccl = static_cast<ncclComm_t>(comm);
        check(ncclGroupStart(), "ncclGroupStart");
        for (int j = 0; j < members; ++j) {
          recordLibraryCall("send", comm, n, typeName(dtype), j);
          check(ncclSend(static_cast<const char *>(in) + j * bytes, n, dtype, j,
                         nccl, stream),
                "ncclSend");
          recordLibraryCall("recv", comm, n, typeName(dtype), j);
          check(ncclRecv(static_cast<char *>(out) + j * bytes, n, dtype, j,
                         nccl, stream),
                "ncclRecv");
        }
        check(ncclGroupEnd(), "ncclGroupEnd");
      },
      [](void *comm, void *out, const void *in, int64_t count, ElementType type,
         int to, int from, bool) {
        // Grouped: the send and the receive at once, whatever the order of
        // the cycle.
        auto nccl = static_cast<ncclComm_t>(comm);
        size_t n = static_cast<size_t>(count);
        ncclDataType_t dtype = ncclType(type);
        check(ncclGroupStart(), "ncclGroupStart");
        recordLibraryCall("send", comm, n, typeName(dtype), to);
        check(ncclSend(in, n, dtype, to, nccl, stream), "ncclSend");
        recordLibraryCall("recv", comm, n, typeName(dtype), from);
        check(ncclRecv(out, n, dtype, from, nccl, stream), "ncclRecv");
        check(ncclGroupEnd(), "ncclGroupEnd");
      }};
  return cuda;
}

void loom::cuda::finishDevice() {
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  // Communicators in creation order (the same on every rank), before MPI
  // ends; then the handle and the stream.
  host::device::destroyCommunicators(
      [](void *comm) { ncclCommDestroy(static_cast<ncclComm_t>(comm)); });
  if (scratchMemory)
    cudaFree(scratchMemory);
  scratchMemory = nullptr;
  scratchSize = 0;
  if (blas)
    cublasDestroy(blas);
  if (stream)
    cudaStreamDestroy(stream);
  blas = nullptr;
  stream = nullptr;
}
