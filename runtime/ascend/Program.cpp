//===- Program.cpp - Support of generated Ascend programs -----------------===//

#include "runtime/ascend/Program.h"
#include "runtime/ascend/Internal.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

using namespace loom;
using namespace loom::ascend;
using namespace loom::ascend::internal;
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

/// Frees the workspaces (the stream has drained).
void releaseWorkspaces() {
  Pending &p = pending();
  for (void *memory : p.workspaces)
    checkAcl(api().aclrtFree(memory), "aclrtFree");
  p.workspaces.clear();
  p.workspaceBytes = 0;
}

/// Frees everything pending (the stream has drained).
void release() {
  releaseWorkspaces();
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

/// The name of an HCCL data type for the records of library calls.
const char *typeName(HcclDataType type) {
  switch (type) {
  case HCCL_DATA_TYPE_FP32:
    return "f32";
  case HCCL_DATA_TYPE_FP64:
    return "f64";
  case HCCL_DATA_TYPE_INT64:
    return "i64";
  default:
    return "unknown";
  }
}

using host::device::recordLibraryCall;
using host::device::Reduction;

/// HCCL's reduction: a mean is a sum, scaled afterwards.
HcclReduceOp hcclOp(Reduction reduction) {
  switch (reduction) {
  case Reduction::Sum:
  case Reduction::Mean:
    return HCCL_REDUCE_SUM;
  case Reduction::Max:
    return HCCL_REDUCE_MAX;
  case Reduction::Min:
    return HCCL_REDUCE_MIN;
  }
  return HCCL_REDUCE_SUM;
}

/// HCCL has no average: out *= 1 / members, on the stream.
void scaleByMembers(void *out, int64_t elements, ElementType type,
                    int members) {
  if (elements == 0)
    return;
  aclDataType acl = aclType(type);
  detail::Arg arg{out, Shape{elements}, acl};
  LOOM_ACLNN(aclnnInplaceMuls, tensor(arg), scalar(1.0 / members, acl));
}

/// Device scratch that grows as needed.
void *scratchMemory = nullptr;
int64_t scratchSize = 0;
char *scratch(int64_t bytes) {
  if (bytes > scratchSize) {
    if (scratchMemory) {
      // Queued work may still read the old buffer.
      synchronize();
      checkAcl(api().aclrtFree(scratchMemory), "aclrtFree");
    }
    checkAcl(api().aclrtMalloc(&scratchMemory, static_cast<size_t>(bytes),
                               ACL_MEM_MALLOC_HUGE_FIRST),
             "aclrtMalloc");
    scratchSize = bytes;
  }
  return static_cast<char *>(scratchMemory);
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
  // Bound the workspaces that wait for the next synchronisation: drain
  // the stream and free them, but not the descriptors (this launch's own
  // are among them, its executor not yet run).
  static const uint64_t budget = [] {
    const char *bytes = std::getenv("LOOM_ASCEND_WORKSPACE_BUDGET");
    return bytes ? std::strtoull(bytes, nullptr, 10) : uint64_t(256) << 20;
  }();
  Pending &p = pending();
  if (!p.workspaces.empty() && p.workspaceBytes + bytes > budget) {
    checkAcl(api().aclrtSynchronizeStream(rankStream),
             "aclrtSynchronizeStream");
    releaseWorkspaces();
  }
  void *memory = nullptr;
  checkAcl(api().aclrtMalloc(&memory, static_cast<size_t>(bytes),
                             ACL_MEM_MALLOC_HUGE_FIRST),
           "aclrtMalloc (operator workspace)");
  pending().workspaces.push_back(memory);
  pending().workspaceBytes += bytes;
  return memory;
}

void *internal::KernelScratch::allocate(uint64_t bytes) {
  void *memory = nullptr;
  checkAcl(api().aclrtMalloc(&memory, static_cast<size_t>(bytes ? bytes : 1),
                             ACL_MEM_MALLOC_HUGE_FIRST),
           "aclrtMalloc (kernel scratch)");
  memory_.push_back({memory, bytes});
  return memory;
}

internal::KernelScratch::~KernelScratch() {
  // Queued work may still read it: it joins the workspaces, freed once the
  // stream has drained (a drain inside the kernel, for another operator's
  // workspace, left it alone).
  Pending &p = pending();
  for (auto [memory, bytes] : memory_) {
    p.workspaces.push_back(memory);
    p.workspaceBytes += bytes;
  }
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

aclTensorList *internal::tensorListOrNull(const std::vector<detail::Arg> &args) {
  if (args.empty())
    return nullptr;
  std::vector<aclTensor *> tensors;
  for (const detail::Arg &arg : args)
    tensors.push_back(tensor(arg));
  return tensorList(tensors.data(), static_cast<int64_t>(tensors.size()));
}

aclIntArray *internal::intArrayOrNull(const Shape &shape) {
  return shape.isAbsent() ? nullptr : intArray(shape.dims, shape.rank);
}

//===----------------------------------------------------------------------===//
// Device, arena, communicators
//===----------------------------------------------------------------------===//

void loom::ascend::startDevice(int index) {
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
  rankDevice = static_cast<int32_t>(index % static_cast<int>(devices));
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

namespace {

/// Member 0 makes the root info and broadcasts it over MPI (not counted:
/// bootstrapping is not the program's traffic); then every member joins.
void *makeHccl(rt::Communicator &mpi) {
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
  return comm;
}

} // namespace

Communicator *loom::ascend::subgroup(Ints devices, Shape mesh, Shape axes) {
  return host::device::subgroup(devices, mesh, axes, makeHccl);
}

//===----------------------------------------------------------------------===//
// The target
//===----------------------------------------------------------------------===//

const host::device::Target &loom::ascend::target() {
  static const host::device::Target ascend = {
      "ascend",
      startDevice,
      finishDevice,
      synchronize,
      copyToDevice,
      copyToHost,
      [](size_t bytes) {
        void *memory = nullptr;
        checkAcl(api().aclrtMalloc(&memory, bytes, ACL_MEM_MALLOC_HUGE_FIRST),
                 "aclrtMalloc (arena)");
        checkAcl(api().aclrtMemsetAsync(memory, bytes, 0, bytes, rankStream),
                 "aclrtMemsetAsync");
        synchronize();
        return memory;
      },
      [](void *memory) { api().aclrtFree(memory); },
      [](void *to, size_t toPitch, const void *from, size_t fromPitch,
         size_t width, size_t height) {
        // CANN 8.x's aclrtMemcpy2dAsync copies only between host and
        // device: rows of bytes move as aclnnInplaceCopy between two
        // strided uint8 views.
        Shape shape{static_cast<int64_t>(height), static_cast<int64_t>(width)};
        int64_t toStrides[2] = {static_cast<int64_t>(toPitch), 1};
        int64_t fromStrides[2] = {static_cast<int64_t>(fromPitch), 1};
        auto span = [&](size_t pitch) {
          return static_cast<int64_t>((height - 1) * pitch + width);
        };
        LOOM_ACLNN(
            aclnnInplaceCopy,
            view(to, ACL_UINT8, shape, toStrides, 0, span(toPitch)),
            view(from, ACL_UINT8, shape, fromStrides, 0, span(fromPitch)));
      },
      [](void *to, const void *from, size_t bytes) {
        checkAcl(api().aclrtMemcpyAsync(to, bytes, from, bytes,
                                        ACL_MEMCPY_DEVICE_TO_DEVICE,
                                        rankStream),
                 "aclrtMemcpyAsync");
      },
      [](void *to, size_t bytes) {
        checkAcl(api().aclrtMemsetAsync(to, bytes, 0, bytes, rankStream),
                 "aclrtMemsetAsync");
      },
      scratch,
      // Each call records exactly what it passes to HCCL.
      [](void *comm, void *out, const void *in, int64_t count, ElementType type,
         Reduction reduction, int members) {
        uint64_t n = static_cast<uint64_t>(count);
        HcclDataType dtype = hcclType(type);
        recordLibraryCall("all_reduce", comm, n, typeName(dtype));
        checkHccl(api().HcclAllReduce(const_cast<void *>(in), out, n, dtype,
                                      hcclOp(reduction),
                                      static_cast<HcclComm>(comm), rankStream),
                  "HcclAllReduce");
        if (reduction == Reduction::Mean)
          scaleByMembers(out, count, type, members);
      },
      [](void *comm, void *out, const void *in, int64_t count,
         ElementType type) {
        uint64_t n = static_cast<uint64_t>(count);
        HcclDataType dtype = hcclType(type);
        recordLibraryCall("all_gather", comm, n, typeName(dtype));
        checkHccl(api().HcclAllGather(const_cast<void *>(in), out, n, dtype,
                                      static_cast<HcclComm>(comm), rankStream),
                  "HcclAllGather");
      },
      [](void *comm, void *out, const void *in, int64_t count, ElementType type,
         Reduction reduction, int members) {
        uint64_t n = static_cast<uint64_t>(count);
        HcclDataType dtype = hcclType(type);
        recordLibraryCall("reduce_scatter", comm, n, typeName(dtype));
        checkHccl(api().HcclReduceScatter(const_cast<void *>(in), out, n, dtype,
                                          hcclOp(reduction),
                                          static_cast<HcclComm>(comm),
                                          rankStream),
                  "HcclReduceScatter");
        if (reduction == Reduction::Mean)
          scaleByMembers(out, count, type, members);
      },
      [](void *comm, void *out, const void *in, int64_t count, ElementType type,
         int members) {
        // One block of `count` elements to and from each member.
        std::vector<uint64_t> counts(static_cast<size_t>(members),
                                     static_cast<uint64_t>(count));
        std::vector<uint64_t> displacements(static_cast<size_t>(members));
        for (int j = 0; j < members; ++j)
          displacements[static_cast<size_t>(j)] =
              static_cast<uint64_t>(j * count);
        HcclDataType dtype = hcclType(type);
        // One HCCL call; its records are the counts it passes per member.
        for (int j = 0; j < members; ++j) {
          recordLibraryCall("send", comm, counts[static_cast<size_t>(j)],
                            typeName(dtype), j);
          recordLibraryCall("recv", comm, counts[static_cast<size_t>(j)],
                            typeName(dtype), j);
        }
        checkHccl(api().HcclAlltoAllV(in, counts.data(), displacements.data(),
                                      dtype, out, counts.data(),
                                      displacements.data(), dtype,
                                      static_cast<HcclComm>(comm), rankStream),
                  "HcclAlltoAllV");
      },
      [](void *comm, void *out, const void *in, int64_t count, ElementType type,
         int to, int from, bool sendFirst) {
        // HCCL pairs each HcclSend with the peer's HcclRecv in stream
        // order (HcclBatchSendRecv, not used yet, would group them): around
        // a cycle one member sends first, the others receive first. The
        // records (what the two calls pass) are in one order, the send's
        // first.
        HcclDataType dtype = hcclType(type);
        recordLibraryCall("send", comm, static_cast<uint64_t>(count),
                          typeName(dtype), to);
        recordLibraryCall("recv", comm, static_cast<uint64_t>(count),
                          typeName(dtype), from);
        auto send = [&] {
          checkHccl(api().HcclSend(const_cast<void *>(in),
                                   static_cast<uint64_t>(count), hcclType(type),
                                   static_cast<uint32_t>(to),
                                   static_cast<HcclComm>(comm), rankStream),
                    "HcclSend");
        };
        auto receive = [&] {
          checkHccl(api().HcclRecv(out, static_cast<uint64_t>(count),
                                   hcclType(type), static_cast<uint32_t>(from),
                                   static_cast<HcclComm>(comm), rankStream),
                    "HcclRecv");
        };
        if (sendFirst) {
          send();
          receive();
        } else {
          receive();
          send();
        }
      }};
  return ascend;
}

void loom::ascend::finishDevice() {
  if (!rankStream)
    return;
  synchronize();
  // Communicators in creation order (the same on every rank), before MPI
  // ends; then the stream and the device.
  host::device::destroyCommunicators(
      [](void *comm) { api().HcclCommDestroy(static_cast<HcclComm>(comm)); });
  if (scratchMemory)
    api().aclrtFree(scratchMemory);
  scratchMemory = nullptr;
  scratchSize = 0;
  api().aclrtDestroyStream(rankStream);
  rankStream = nullptr;
  api().aclrtResetDevice(rankDevice);
  api().aclFinalize();
}
