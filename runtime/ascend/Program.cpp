//===- Program.cpp - Support of generated Ascend programs -----------------===//

#include "runtime/ascend/Program.h"
#include "runtime/ascend/Internal.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

using namespace loom;
using namespace loom::ascend;
using namespace loom::ascend::internal;
using namespace loom::host::device;
using loom::rt::ElementType;
using loom::rt::Runtime;

namespace {

aclrtStream rankStream = nullptr;
int32_t rankDevice = -1;

/// What the stream's queued work may still use, released after it drains.
struct Pending {
  std::vector<void *> workspaces;
  uint64_t workspaceBytes = 0;
  std::vector<aclTensor *> tensors;
  std::vector<aclScalar *> scalars;
  std::vector<aclIntArray *> arrays;
  std::vector<aclTensorList *> lists;
  std::vector<std::unique_ptr<char[]>> values;
};
Pending &pending() {
  static Pending instance;
  return instance;
}

void release() {
  Pending &p = pending();
  const Api &a = api();
  for (aclTensorList *list : p.lists)
    a.aclDestroyTensorList(list);
  for (aclTensor *tensor : p.tensors)
    a.aclDestroyTensor(tensor);
  for (aclScalar *scalar : p.scalars)
    a.aclDestroyScalar(scalar);
  for (aclIntArray *array : p.arrays)
    a.aclDestroyIntArray(array);
  for (void *memory : p.workspaces)
    checkAcl(a.aclrtFree(memory), "aclrtFree");
  p = Pending();
}

std::string recentError() {
  const char *message = api().aclGetRecentErrMsg();
  return message && *message ? std::string(": ") + message : std::string();
}

HcclDataType hcclType(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return HCCL_DATA_TYPE_FP32;
  case ElementType::F64:
    return HCCL_DATA_TYPE_FP64;
  case ElementType::I64:
    return HCCL_DATA_TYPE_INT64;
  }
  return HCCL_DATA_TYPE_FP32;
}

aclDataType aclType(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return ACL_FLOAT;
  case ElementType::F64:
    return ACL_DOUBLE;
  case ElementType::I64:
    return ACL_INT64;
  }
  return ACL_FLOAT;
}

/// HCCL's reduction for `kind`; a mean is a sum scaled afterwards.
HcclReduceOp hcclOp(const char *op, const char *kind, ElementType type,
                    bool &mean) {
  mean = !std::strcmp(kind, "mean");
  if (mean && type == ElementType::I64)
    Runtime::get().fail(std::string(op) + ": a mean of integers");
  if (mean || !std::strcmp(kind, "sum"))
    return HCCL_REDUCE_SUM;
  if (!std::strcmp(kind, "max"))
    return HCCL_REDUCE_MAX;
  if (!std::strcmp(kind, "min"))
    return HCCL_REDUCE_MIN;
  Runtime::get().fail(std::string(op) + ": unknown reduction '" + kind + "'");
}

/// HCCL has no average: out *= 1 / members, on the stream.
void scaleByMembers(void *out, int64_t elements, ElementType type,
                    Communicator *comm) {
  if (elements == 0)
    return;
  aclDataType acl = aclType(type);
  detail::Arg arg{out, Shape{elements}, acl};
  LOOM_ACLNN(aclnnInplaceMuls, tensor(arg), scalar(1.0 / comm->getSize(), acl));
}

/// Block `j` of `k` along `dim` of `in` (shape `shape`) to `out`,
/// contiguous (`pack`), or back (`!pack`), on the stream.
void moveBlock(char *out, const char *in, const Shape &shape, int64_t dim,
               int64_t k, int64_t j, int64_t elementBytes, bool pack) {
  Block b = blockOf(shape, dim, k, j, elementBytes);
  if (b.empty())
    return;
  if (pack)
    checkAcl(api().aclrtMemcpy2dAsync(out, b.row, in + b.start, b.wide, b.row,
                                      b.outer, ACL_MEMCPY_DEVICE_TO_DEVICE,
                                      rankStream),
             "aclrtMemcpy2dAsync");
  else
    checkAcl(api().aclrtMemcpy2dAsync(out + b.start, b.wide, in, b.row, b.row,
                                      b.outer, ACL_MEMCPY_DEVICE_TO_DEVICE,
                                      rankStream),
             "aclrtMemcpy2dAsync");
}

/// Device scratch that grows as needed.
void *scratchMemory = nullptr;
int64_t scratchSize = 0;
char *scratch(int64_t bytes) {
  void *&memory = scratchMemory;
  int64_t &size = scratchSize;
  if (bytes > size) {
    if (memory) {
      // Queued work may still read the old buffer.
      synchronize();
      checkAcl(api().aclrtFree(memory), "aclrtFree");
    }
    checkAcl(api().aclrtMalloc(&memory, static_cast<size_t>(bytes),
                               ACL_MEM_MALLOC_HUGE_FIRST),
             "aclrtMalloc");
    size = bytes;
  }
  return static_cast<char *>(memory);
}

/// The HCCL communicators, by MPI group, and the order they were made in
/// (the same on every rank), for the teardown.
std::map<rt::Communicator *, Communicator *> &hcclGroups() {
  static std::map<rt::Communicator *, Communicator *> groups;
  return groups;
}
std::vector<std::unique_ptr<Communicator>> &hcclOrder() {
  static std::vector<std::unique_ptr<Communicator>> order;
  return order;
}

Communicator *makeHccl(rt::Communicator *mpi) {
  auto &groups = hcclGroups();
  auto it = groups.find(mpi);
  if (it != groups.end())
    return it->second;
  hcclOrder().push_back(std::make_unique<Communicator>(*mpi));
  return groups[mpi] = hcclOrder().back().get();
}

HcclComm hcclOf(Communicator *comm) {
  return static_cast<HcclComm>(comm->getHccl());
}

} // namespace

//===----------------------------------------------------------------------===//
// Internals shared with the kernels
//===----------------------------------------------------------------------===//

aclrtStream internal::stream() { return rankStream; }

void internal::checkAcl(aclError code, const char *what) {
  if (code != ACL_SUCCESS)
    Runtime::get().fail(std::string("ACL error ") + std::to_string(code) +
                        " in " + what + recentError());
}

void internal::checkNn(aclnnStatus code, const char *what) {
  if (code != 0)
    Runtime::get().fail(std::string("aclnn error ") + std::to_string(code) +
                        " in " + what + recentError());
}

void internal::checkHccl(HcclResult code, const char *what) {
  if (code == HCCL_SUCCESS)
    return;
  const char *name =
      api().HcclGetErrorString ? api().HcclGetErrorString(code) : nullptr;
  Runtime::get().fail(
      std::string("HCCL error ") + std::to_string(code) + " in " + what +
      (name ? std::string(" (") + name + ")" : std::string()) + recentError());
}

void *internal::workspace(uint64_t bytes) {
  Pending &p = pending();
  // Bound what waits for the next synchronisation.
  if (p.workspaceBytes + bytes > (uint64_t(256) << 20))
    synchronize();
  void *memory = nullptr;
  checkAcl(api().aclrtMalloc(&memory, static_cast<size_t>(bytes),
                             ACL_MEM_MALLOC_HUGE_FIRST),
           "aclrtMalloc (operator workspace)");
  pending().workspaces.push_back(memory);
  pending().workspaceBytes += bytes;
  return memory;
}

aclTensor *internal::view(const void *base, aclDataType type,
                          const Shape &shape, const int64_t *strides,
                          int64_t offset, int64_t storageElements) {
  int64_t storage[1] = {storageElements};
  aclTensor *result = api().aclCreateTensor(
      shape.dims, static_cast<uint64_t>(shape.rank), type, strides, offset,
      ACL_FORMAT_ND, storage, 1, const_cast<void *>(base));
  if (!result)
    Runtime::get().fail("aclCreateTensor failed" + recentError());
  pending().tensors.push_back(result);
  return result;
}

aclTensor *internal::tensor(const detail::Arg &arg) {
  if (!arg.data)
    return nullptr;
  int64_t strides[host::kMaxRank];
  int64_t stride = 1;
  for (int64_t d = arg.shape.rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= arg.shape[d];
  }
  aclTensor *result = api().aclCreateTensor(
      arg.shape.dims, static_cast<uint64_t>(arg.shape.rank), arg.type, strides,
      0, ACL_FORMAT_ND, arg.shape.dims, static_cast<uint64_t>(arg.shape.rank),
      const_cast<void *>(arg.data));
  if (!result)
    Runtime::get().fail("aclCreateTensor failed" + recentError());
  pending().tensors.push_back(result);
  return result;
}

aclScalar *internal::scalar(double value, aclDataType type) {
  auto storage = std::make_unique<char[]>(8);
  switch (type) {
  case ACL_FLOAT: {
    float v = static_cast<float>(value);
    std::memcpy(storage.get(), &v, 4);
    break;
  }
  case ACL_INT32: {
    int32_t v = static_cast<int32_t>(value);
    std::memcpy(storage.get(), &v, 4);
    break;
  }
  case ACL_INT64: {
    int64_t v = static_cast<int64_t>(value);
    std::memcpy(storage.get(), &v, 8);
    break;
  }
  case ACL_BOOL: {
    bool v = value != 0;
    std::memcpy(storage.get(), &v, 1);
    break;
  }
  default:
    type = ACL_DOUBLE;
    std::memcpy(storage.get(), &value, 8);
    break;
  }
  aclScalar *result = api().aclCreateScalar(storage.get(), type);
  if (!result)
    Runtime::get().fail("aclCreateScalar failed" + recentError());
  pending().scalars.push_back(result);
  pending().values.push_back(std::move(storage));
  return result;
}

aclIntArray *internal::intArray(const int64_t *values, int64_t count) {
  aclIntArray *result =
      api().aclCreateIntArray(values, static_cast<uint64_t>(count));
  if (!result)
    Runtime::get().fail("aclCreateIntArray failed" + recentError());
  pending().arrays.push_back(result);
  return result;
}

aclTensorList *internal::tensorList(aclTensor *const *tensors, int64_t count) {
  aclTensorList *result =
      api().aclCreateTensorList(tensors, static_cast<uint64_t>(count));
  if (!result)
    Runtime::get().fail("aclCreateTensorList failed" + recentError());
  // The list owns its tensors: they leave the pending list.
  auto &pendingTensors = pending().tensors;
  for (int64_t i = 0; i < count; ++i)
    pendingTensors.erase(
        std::remove(pendingTensors.begin(), pendingTensors.end(), tensors[i]),
        pendingTensors.end());
  pending().lists.push_back(result);
  return result;
}

//===----------------------------------------------------------------------===//
// Device, arena, communicators
//===----------------------------------------------------------------------===//

void loom::ascend::startDevice() {
  Runtime &runtime = Runtime::get();
  const Api &a = api();
  checkAcl(a.aclInit(nullptr), "aclInit");
  uint32_t devices = 0;
  aclError code = a.aclrtGetDeviceCount(&devices);
  if (code != ACL_SUCCESS || devices == 0)
    runtime.fail("no Ascend device on this node (" +
                 (code != ACL_SUCCESS ? "aclrtGetDeviceCount: error " +
                                            std::to_string(code) + recentError()
                                      : std::string("0 devices")) +
                 "); run the host target instead");
  rankDevice = static_cast<int32_t>(runtime.getLocalRank() % devices);
  checkAcl(a.aclrtSetDevice(rankDevice), "aclrtSetDevice");
  checkAcl(a.aclrtCreateStream(&rankStream), "aclrtCreateStream");
}

void loom::ascend::synchronize() {
  checkAcl(api().aclrtSynchronizeStream(rankStream), "aclrtSynchronizeStream");
  release();
}

void loom::ascend::copyToDevice(void *to, const void *from, size_t bytes) {
  if (bytes)
    checkAcl(
        api().aclrtMemcpy(to, bytes, from, bytes, ACL_MEMCPY_HOST_TO_DEVICE),
        "aclrtMemcpy");
}

void loom::ascend::copyToHost(void *to, const void *from, size_t bytes) {
  if (!bytes)
    return;
  // The copy follows queued work.
  synchronize();
  checkAcl(api().aclrtMemcpy(to, bytes, from, bytes, ACL_MEMCPY_DEVICE_TO_HOST),
           "aclrtMemcpy");
}

Arena::Arena(int64_t size) : bytes(size) {
  size_t rounded =
      static_cast<size_t>((std::max<int64_t>(size, 1) + 255) / 256 * 256);
  void *memory = nullptr;
  checkAcl(api().aclrtMalloc(&memory, rounded, ACL_MEM_MALLOC_HUGE_FIRST),
           "aclrtMalloc (arena)");
  storage = static_cast<char *>(memory);
  checkAcl(api().aclrtMemsetAsync(storage, rounded, 0, rounded, rankStream),
           "aclrtMemsetAsync");
  synchronize();
}

Arena::Arena(Arena &&other) noexcept
    : storage(other.storage), bytes(other.bytes) {
  other.storage = nullptr;
}

Arena::~Arena() {
  if (storage)
    api().aclrtFree(storage);
}

Communicator::Communicator(rt::Communicator &mpi) : mpi(mpi) {
  // Member 0 makes the root info and broadcasts it over MPI (not counted:
  // bootstrapping is not the program's traffic).
  HcclRootInfo root;
  std::memset(&root, 0, sizeof(root));
  if (mpi.getRank() == 0)
    checkHccl(api().HcclGetRootInfo(&root), "HcclGetRootInfo");
  if (mpi.getSize() > 1)
    mpi.broadcastUncounted(&root, sizeof(root), 0);
  HcclComm comm = nullptr;
  checkHccl(
      api().HcclCommInitRootInfo(static_cast<uint32_t>(mpi.getSize()), &root,
                                 static_cast<uint32_t>(mpi.getRank()), &comm),
      "HcclCommInitRootInfo");
  hccl = comm;
}

Communicator::~Communicator() {
  if (hccl)
    api().HcclCommDestroy(static_cast<HcclComm>(hccl));
}

Communicator *loom::ascend::subgroup(Ints devices, Shape mesh, Shape axes) {
  return makeHccl(host::subgroup(devices, mesh, axes));
}

const host::device::Target &loom::ascend::target() {
  static const host::device::Target ascend = {"ascend",     startDevice,
                                              finishDevice, copyToDevice,
                                              copyToHost,   synchronize};
  return ascend;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

void loom::ascend::allReduceBytes(void *out, const void *in, Shape shape,
                                  ElementType type, Communicator *comm,
                                  const char *kind) {
  int64_t n = shape.numElements();
  countAllReduce(n, rt::getElementSize(type), comm->getSize(), comm->getRank());
  bool mean = false;
  HcclReduceOp op = hcclOp("all_reduce", kind, type, mean);
  checkHccl(api().HcclAllReduce(const_cast<void *>(in), out,
                                static_cast<uint64_t>(n), hcclType(type), op,
                                hcclOf(comm), rankStream),
            "HcclAllReduce");
  if (mean)
    scaleByMembers(out, n, type, comm);
}

void loom::ascend::allGatherBytes(void *out, Shape outShape, const void *in,
                                  Shape inShape, ElementType type,
                                  Communicator *comm, int64_t dim) {
  int64_t n = inShape.numElements(), size = rt::getElementSize(type);
  int64_t k = comm->getSize();
  count("all_gather", n * size * (k - 1), n * size * (k - 1));
  bool direct = leadingDim(inShape, dim);
  char *gathered = direct ? static_cast<char *>(out) : scratch(n * size * k);
  checkHccl(api().HcclAllGather(const_cast<void *>(in), gathered,
                                static_cast<uint64_t>(n), hcclType(type),
                                hcclOf(comm), rankStream),
            "HcclAllGather");
  if (!direct)
    for (int64_t j = 0; j < k; ++j)
      moveBlock(static_cast<char *>(out), gathered + j * n * size, outShape,
                dim, k, j, size, /*pack=*/false);
}

void loom::ascend::reduceScatterBytes(void *out, Shape outShape, const void *in,
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
  bool mean = false;
  HcclReduceOp op = hcclOp("reduce_scatter", kind, type, mean);
  checkHccl(api().HcclReduceScatter(const_cast<char *>(source), out,
                                    static_cast<uint64_t>(n), hcclType(type),
                                    op, hcclOf(comm), rankStream),
            "HcclReduceScatter");
  if (mean)
    scaleByMembers(out, n, type, comm);
}

void loom::ascend::allToAllBytes(void *out, Shape outShape, const void *in,
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
  std::vector<uint64_t> counts(static_cast<size_t>(k),
                               static_cast<uint64_t>(block));
  std::vector<uint64_t> displacements(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j)
    displacements[static_cast<size_t>(j)] = static_cast<uint64_t>(j * block);
  checkHccl(api().HcclAlltoAllV(sendBuffer, counts.data(), displacements.data(),
                                hcclType(type), receiveBuffer, counts.data(),
                                displacements.data(), hcclType(type),
                                hcclOf(comm), rankStream),
            "HcclAlltoAllV");
  for (int64_t j = 0; j < k; ++j)
    moveBlock(static_cast<char *>(out), receiveBuffer + j * block * size,
              outShape, concatDim, k, j, size, /*pack=*/false);
}

void loom::ascend::localSliceBytes(void *out, Shape outShape, const void *in,
                                   Shape inShape, int64_t elementBytes,
                                   Communicator *comm, int64_t dim) {
  Runtime::get().count("local_slice").calls += 1;
  if (outShape.numElements() == 0)
    return;
  moveBlock(static_cast<char *>(out), static_cast<const char *>(in), inShape,
            dim, comm->getSize(), comm->getRank(), elementBytes,
            /*pack=*/true);
}

void loom::ascend::makePartialBytes(void *out, Shape outShape, const void *in,
                                    Shape inShape, int64_t elementBytes,
                                    Communicator *comm, int64_t dim) {
  Runtime::get().count("make_partial").calls += 1;
  size_t bytes = static_cast<size_t>(outShape.numElements() * elementBytes);
  if (bytes == 0)
    return;
  checkAcl(api().aclrtMemsetAsync(out, bytes, 0, bytes, rankStream),
           "aclrtMemsetAsync");
  if (dim >= 0) {
    moveBlock(static_cast<char *>(out), static_cast<const char *>(in), outShape,
              dim, comm->getSize(), comm->getRank(), elementBytes,
              /*pack=*/false);
  } else if (comm->getRank() == 0) {
    size_t inBytes = static_cast<size_t>(inShape.numElements() * elementBytes);
    checkAcl(api().aclrtMemcpyAsync(out, bytes, in, inBytes,
                                    ACL_MEMCPY_DEVICE_TO_DEVICE, rankStream),
             "aclrtMemcpyAsync");
  }
}

void loom::ascend::axisIndex(void *out, int64_t elementBytes, bool isFloat,
                             double value) {
  char bytes[8];
  encodeScalar(bytes, elementBytes, isFloat, value);
  // The host bytes are on the stack: the copy completes before returning.
  synchronize();
  checkAcl(api().aclrtMemcpy(out, static_cast<size_t>(elementBytes), bytes,
                             static_cast<size_t>(elementBytes),
                             ACL_MEMCPY_HOST_TO_DEVICE),
           "aclrtMemcpy");
}

void ExchangePlan::run(void *out, int64_t outElements, const void *in,
                       int64_t inElements, int64_t elementBytes,
                       ElementType type) {
  stagedExchange(
      plan, out, outElements, in, inElements, elementBytes, type,
      [] { synchronize(); }, copyToHost, copyToDevice);
}

void loom::ascend::tracePhaseBegin(const char *name) {
  host::tracePhaseBegin(name);
}

void loom::ascend::tracePhaseEnd() {
  // A phase's span covers its operators (only when tracing).
  if (host::tracing())
    synchronize();
  host::tracePhaseEnd();
}

void loom::ascend::finishDevice() {
  if (!rankStream)
    return;
  synchronize();
  // Communicators in creation order (the same on every rank), before MPI
  // ends; then the stream and the device.
  auto &order = hcclOrder();
  for (std::unique_ptr<Communicator> &comm : order)
    comm.reset();
  order.clear();
  hcclGroups().clear();
  if (scratchMemory)
    api().aclrtFree(scratchMemory);
  scratchMemory = nullptr;
  scratchSize = 0;
  api().aclrtDestroyStream(rankStream);
  rankStream = nullptr;
  api().aclrtResetDevice(rankDevice);
  api().aclFinalize();
}
