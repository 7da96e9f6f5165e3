//===- Program.cpp - Support of generated CUDA programs -------------------===//

#include "runtime/cuda/Program.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>

// ncclAvg needs NCCL 2.10, ncclSend/ncclRecv 2.7.
static_assert(NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0),
              "Loom's CUDA runtime needs NCCL 2.10 or later");
#include <cstring>
#include <map>

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

ncclRedOp_t ncclOp(const char *op, const char *kind, ElementType type) {
  if (!std::strcmp(kind, "mean") && type == ElementType::I64)
    Runtime::get().fail(std::string(op) + ": a mean of integers");
  if (!std::strcmp(kind, "sum"))
    return ncclSum;
  if (!std::strcmp(kind, "mean"))
    return ncclAvg;
  if (!std::strcmp(kind, "max"))
    return ncclMax;
  if (!std::strcmp(kind, "min"))
    return ncclMin;
  Runtime::get().fail(std::string(op) + ": unknown reduction '" + kind + "'");
}

using namespace loom::host::device;

/// Block `j` of `k` along `dim` of `in` (shape `shape`) to `out`,
/// contiguous (`pack`), or back (`!pack`), on the stream.
void moveBlock(char *out, const char *in, const Shape &shape, int64_t dim,
               int64_t k, int64_t j, int64_t elementBytes, bool pack) {
  Block b = blockOf(shape, dim, k, j, elementBytes);
  if (b.empty())
    return;
  if (pack)
    check(cudaMemcpy2DAsync(out, b.row, in + b.start, b.wide, b.row, b.outer,
                            cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpy2DAsync");
  else
    check(cudaMemcpy2DAsync(out + b.start, b.wide, in, b.row, b.row, b.outer,
                            cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpy2DAsync");
}

/// Device scratch that grows as needed.
char *scratch(int64_t bytes) {
  static char *memory = nullptr;
  static int64_t size = 0;
  if (bytes > size) {
    if (memory) {
      // Queued work may still read the old buffer.
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      check(cudaFree(memory), "cudaFree");
    }
    check(cudaMalloc(reinterpret_cast<void **>(&memory),
                     static_cast<size_t>(bytes)),
          "cudaMalloc");
    size = bytes;
  }
  return memory;
}

/// The NCCL communicators, by MPI group, and the order they were made in
/// (the same on every rank), for the teardown.
std::map<rt::Communicator *, Communicator *> &ncclGroups() {
  static std::map<rt::Communicator *, Communicator *> groups;
  return groups;
}
std::vector<std::unique_ptr<Communicator>> &ncclOrder() {
  static std::vector<std::unique_ptr<Communicator>> order;
  return order;
}

Communicator *makeNccl(rt::Communicator *mpi) {
  auto &groups = ncclGroups();
  auto it = groups.find(mpi);
  if (it != groups.end())
    return it->second;
  ncclOrder().push_back(std::make_unique<Communicator>(*mpi));
  return groups[mpi] = ncclOrder().back().get();
}

} // namespace

//===----------------------------------------------------------------------===//
// Device, arena, communicators
//===----------------------------------------------------------------------===//

void loom::cuda::startDevice() {
  Runtime &runtime = Runtime::get();
  int devices = 0;
  cudaError_t code = cudaGetDeviceCount(&devices);
  if (code != cudaSuccess || devices == 0)
    runtime.fail("no CUDA device on this node (" +
                 std::string(code != cudaSuccess ? cudaGetErrorString(code)
                                                 : "0 devices") +
                 "); run the host target instead");
  check(cudaSetDevice(runtime.getLocalRank() % devices), "cudaSetDevice");
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS ||
      cublasSetStream(blas, stream) != CUBLAS_STATUS_SUCCESS)
    runtime.fail("cannot create a cuBLAS handle on the rank's stream");
  setContext(stream, blas);
}

Arena::Arena(int64_t size) : bytes(size) {
  size_t rounded =
      static_cast<size_t>((std::max<int64_t>(size, 1) + 255) / 256 * 256);
  check(cudaMalloc(reinterpret_cast<void **>(&storage), rounded), "cudaMalloc");
  check(cudaMemset(storage, 0, rounded), "cudaMemset");
}

Arena::Arena(Arena &&other) noexcept
    : storage(other.storage), bytes(other.bytes) {
  other.storage = nullptr;
}

Arena::~Arena() {
  if (storage)
    cudaFree(storage);
}

Communicator::Communicator(rt::Communicator &mpi) : mpi(mpi) {
  // Member 0 makes the unique id and broadcasts it over MPI (not counted:
  // bootstrapping is not the program's traffic).
  ncclUniqueId id;
  if (mpi.getRank() == 0)
    check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  if (mpi.getSize() > 1)
    mpi.broadcastUncounted(&id, sizeof(id), 0);
  ncclComm_t comm = nullptr;
  check(ncclCommInitRank(&comm, mpi.getSize(), id, mpi.getRank()),
        "ncclCommInitRank");
  nccl = comm;
}

Communicator::~Communicator() {
  if (nccl)
    ncclCommDestroy(static_cast<ncclComm_t>(nccl));
}

Communicator *loom::cuda::subgroup(Ints devices, Shape mesh, Shape axes) {
  return makeNccl(host::subgroup(devices, mesh, axes));
}

const host::device::Target &loom::cuda::target() {
  static const host::device::Target cuda = {
      "cuda",
      startDevice,
      finishDevice,
      [](void *to, const void *from, size_t bytes) {
        copyToDevice(to, from, bytes);
      },
      [](void *to, const void *from, size_t bytes) {
        copyToHost(to, from, bytes);
      },
      [] { synchronize(); }};
  return cuda;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

void loom::cuda::allReduceBytes(void *out, const void *in, Shape shape,
                                ElementType type, Communicator *comm,
                                const char *kind) {
  int64_t n = shape.numElements();
  countAllReduce(n, rt::getElementSize(type), comm->getSize(), comm->getRank());
  check(ncclAllReduce(in, out, static_cast<size_t>(n), ncclType(type),
                      ncclOp("all_reduce", kind, type),
                      static_cast<ncclComm_t>(comm->getNccl()), stream),
        "ncclAllReduce");
}

void loom::cuda::allGatherBytes(void *out, Shape outShape, const void *in,
                                Shape inShape, ElementType type,
                                Communicator *comm, int64_t dim) {
  int64_t n = inShape.numElements(), size = rt::getElementSize(type);
  int64_t k = comm->getSize();
  count("all_gather", n * size * (k - 1), n * size * (k - 1));
  bool direct = leadingDim(inShape, dim);
  char *gathered = direct ? static_cast<char *>(out) : scratch(n * size * k);
  check(ncclAllGather(in, gathered, static_cast<size_t>(n), ncclType(type),
                      static_cast<ncclComm_t>(comm->getNccl()), stream),
        "ncclAllGather");
  if (!direct)
    for (int64_t j = 0; j < k; ++j)
      moveBlock(static_cast<char *>(out), gathered + j * n * size, outShape,
                dim, k, j, size, /*pack=*/false);
}

void loom::cuda::reduceScatterBytes(void *out, Shape outShape, const void *in,
                                    Shape inShape, ElementType type,
                                    Communicator *comm, int64_t dim,
                                    const char *kind) {
  int64_t n = outShape.numElements(), size = rt::getElementSize(type);
  int64_t k = comm->getSize();
  count("reduce_scatter", n * size * (k - 1), n * size * (k - 1));
  const char *source = static_cast<const char *>(in);
  if (!leadingDim(inShape, dim)) {
    char *packed = scratch(n * size * k);
    for (int64_t j = 0; j < k; ++j)
      moveBlock(packed + j * n * size, source, inShape, dim, k, j, size,
                /*pack=*/true);
    source = packed;
  }
  check(ncclReduceScatter(source, out, static_cast<size_t>(n), ncclType(type),
                          ncclOp("reduce_scatter", kind, type),
                          static_cast<ncclComm_t>(comm->getNccl()), stream),
        "ncclReduceScatter");
}

void loom::cuda::allToAllBytes(void *out, Shape outShape, const void *in,
                               Shape inShape, ElementType type,
                               Communicator *comm, int64_t splitDim,
                               int64_t concatDim) {
  int64_t k = comm->getSize(), size = rt::getElementSize(type);
  int64_t block = inShape.numElements() / k;
  count("all_to_all", block * size * (k - 1), block * size * (k - 1));
  char *sendBuffer = scratch(2 * block * k * size);
  char *receiveBuffer = sendBuffer + block * k * size;
  for (int64_t j = 0; j < k; ++j)
    moveBlock(sendBuffer + j * block * size, static_cast<const char *>(in),
              inShape, splitDim, k, j, size, /*pack=*/true);
  auto nccl = static_cast<ncclComm_t>(comm->getNccl());
  check(ncclGroupStart(), "ncclGroupStart");
  for (int j = 0; j < k; ++j) {
    check(ncclSend(sendBuffer + j * block * size, static_cast<size_t>(block),
                   ncclType(type), j, nccl, stream),
          "ncclSend");
    check(ncclRecv(receiveBuffer + j * block * size, static_cast<size_t>(block),
                   ncclType(type), j, nccl, stream),
          "ncclRecv");
  }
  check(ncclGroupEnd(), "ncclGroupEnd");
  for (int64_t j = 0; j < k; ++j)
    moveBlock(static_cast<char *>(out), receiveBuffer + j * block * size,
              outShape, concatDim, k, j, size, /*pack=*/false);
}

void loom::cuda::localSliceBytes(void *out, Shape outShape, const void *in,
                                 Shape inShape, int64_t elementBytes,
                                 Communicator *comm, int64_t dim) {
  Runtime::get().count("local_slice").calls += 1;
  if (outShape.numElements() == 0)
    return;
  moveBlock(static_cast<char *>(out), static_cast<const char *>(in), inShape,
            dim, comm->getSize(), comm->getRank(), elementBytes,
            /*pack=*/true);
}

void loom::cuda::makePartialBytes(void *out, Shape outShape, const void *in,
                                  Shape inShape, int64_t elementBytes,
                                  Communicator *comm, int64_t dim) {
  Runtime::get().count("make_partial").calls += 1;
  int64_t bytes = outShape.numElements() * elementBytes;
  if (bytes == 0)
    return;
  check(cudaMemsetAsync(out, 0, static_cast<size_t>(bytes), stream),
        "cudaMemsetAsync");
  if (dim >= 0)
    moveBlock(static_cast<char *>(out), static_cast<const char *>(in), outShape,
              dim, comm->getSize(), comm->getRank(), elementBytes,
              /*pack=*/false);
  else if (comm->getRank() == 0)
    check(cudaMemcpyAsync(
              out, in,
              static_cast<size_t>(inShape.numElements() * elementBytes),
              cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpyAsync");
}

void loom::cuda::axisIndex(void *out, int64_t elementBytes, bool isFloat,
                           double value) {
  char bytes[8];
  encodeScalar(bytes, elementBytes, isFloat, value);
  check(cudaMemcpyAsync(out, bytes, static_cast<size_t>(elementBytes),
                        cudaMemcpyHostToDevice, stream),
        "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

void ExchangePlan::run(void *out, int64_t outElements, const void *in,
                       int64_t inElements, int64_t elementBytes,
                       ElementType type) {
  stagedExchange(
      plan, out, outElements, in, inElements, elementBytes, type,
      [] { check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); },
      [](void *to, const void *from, size_t bytes) {
        copyToHost(to, from, bytes);
      },
      [](void *to, const void *from, size_t bytes) {
        copyToDevice(to, from, bytes);
      });
}

void loom::cuda::tracePhaseBegin(const char *name) {
  host::tracePhaseBegin(name);
}

void loom::cuda::tracePhaseEnd() {
  // A phase's span covers its kernels (only when tracing).
  if (host::tracing())
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  host::tracePhaseEnd();
}

void loom::cuda::finishDevice() {
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  // Communicators in creation order (the same on every rank), before MPI
  // ends; then the handle and the stream.
  auto &order = ncclOrder();
  for (std::unique_ptr<Communicator> &comm : order)
    comm.reset();
  order.clear();
  ncclGroups().clear();
  if (blas)
    cublasDestroy(blas);
  if (stream)
    cudaStreamDestroy(stream);
  blas = nullptr;
  stream = nullptr;
}
