//===- Executor.cpp - The two-phase operator protocol of the test double --===//
//
// Part of the CPU test double of CANN (see Double.h). Every aclnn operator
// is planned by its GetWorkspaceSize function (argument checks, the
// workspace it needs, an executor holding the work) and run by its launch
// function, which checks the protocol: the executor is live, made for this
// operator and used once; the workspace is at least as large as asked and
// lies in live device memory; the tensors are still alive and their memory
// not freed. The workspace is then marked in flight on the stream until
// aclrtSynchronizeStream, and the work runs at once, using the workspace as
// its scratch memory (staged results, gathered strided inputs).
//
//===----------------------------------------------------------------------===//

#include "runtime/ascend/double/Double.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

using namespace loom::ascend::testdouble;
namespace testdouble = loom::ascend::testdouble;
namespace host = loom::host;

namespace {

struct Executors {
  uint64_t next = 1;
  std::unordered_set<const aclOpExecutor *> live;
  /// Executors already launched (and freed): a second launch is refused
  /// with a message saying so, until the address is reused.
  std::unordered_set<const aclOpExecutor *> used;
};

Executors &executors() {
  static Executors *instance = new Executors;
  return *instance;
}

bool isFloat(aclDataType dtype) {
  return dtype == ACL_FLOAT || dtype == ACL_DOUBLE;
}

bool sameShape(const host::Shape &a, const host::Shape &b) {
  if (a.rank != b.rank)
    return false;
  for (int64_t d = 0; d < a.rank; ++d)
    if (a[d] != b[d])
      return false;
  return true;
}

template <typename T> void gatherTyped(char *dst, const TensorArg &src) {
  auto *out = reinterpret_cast<T *>(dst);
  const auto *in = reinterpret_cast<const T *>(src.base);
  int64_t zeros[host::kMaxRank] = {};
  int64_t i = 0;
  forEachIndex(src.shape, src.strides, zeros,
               [&](int64_t a, int64_t) { out[i++] = in[a]; });
}

} // namespace

//===----------------------------------------------------------------------===//
// Views
//===----------------------------------------------------------------------===//

void testdouble::rowMajorStrides(const host::Shape &shape, int64_t *strides) {
  int64_t stride = 1;
  for (int64_t d = shape.rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= shape[d];
  }
}

bool testdouble::overlaps(const TensorArg &a, const TensorArg &b) {
  if (!a.present || !b.present || !a.extentBytes || !b.extentBytes)
    return false;
  auto x = reinterpret_cast<uintptr_t>(a.base);
  auto y = reinterpret_cast<uintptr_t>(b.base);
  return x < y + b.extentBytes && y < x + a.extentBytes;
}

void testdouble::gatherView(char *dst, const TensorArg &src) {
  switch (src.elementBytes) {
  case 1:
    return gatherTyped<uint8_t>(dst, src);
  case 2:
    return gatherTyped<uint16_t>(dst, src);
  case 4:
    return gatherTyped<uint32_t>(dst, src);
  default:
    return gatherTyped<uint64_t>(dst, src);
  }
}

void Output::commit(char *workspace) const {
  if (staged && arg.bytes())
    std::memcpy(arg.base, workspace + slot, arg.bytes());
}

void Input::prepare(char *workspace) const {
  if (gathered)
    gatherView(workspace + slot, arg);
}

//===----------------------------------------------------------------------===//
// Plan
//===----------------------------------------------------------------------===//

Plan::Plan(const char *op)
    : op(op), function(std::string(op) + "GetWorkspaceSize"),
      call(function.c_str()), lock(stateMutex()) {}

aclnnStatus Plan::fail(aclnnStatus code, const char *format, ...) {
  va_list args;
  va_start(args, format);
  char text[1024];
  std::vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  testdouble::fail(code, "%s: %s", function.c_str(), text);
  return call.status(code);
}

aclnnStatus Plan::tensor(const aclTensor *t, const char *what, TensorArg &arg,
                         bool optional) {
  arg = TensorArg();
  arg.what = what;
  if (!t) {
    if (optional)
      return ACLNN_SUCCESS;
    return fail(ACLNN_ERR_PARAM_NULLPTR, "%s is null", what);
  }
  if (!isLive(t))
    return fail(ACLNN_ERR_PARAM_INVALID,
                "%s is not a live tensor (destroyed, or not made by "
                "aclCreateTensor)",
                what);
  arg.present = true;
  arg.handle = t;
  arg.serial = t->serial;
  arg.dtype = t->dtype;
  arg.elementBytes = elementSize(t->dtype);
  arg.shape.rank = static_cast<int64_t>(t->dims.size());
  for (int64_t d = 0; d < arg.shape.rank; ++d) {
    arg.shape.dims[d] = t->dims[d];
    arg.strides[d] = t->strides[d];
  }
  auto *data = static_cast<char *>(t->data);
  arg.storage = data;
  uint64_t storageCount = 1;
  for (int64_t size : t->storageDims)
    storageCount *= static_cast<uint64_t>(size);
  arg.storageBytes = storageCount * arg.elementBytes;
  arg.base = data ? data + t->offset * static_cast<int64_t>(arg.elementBytes)
                  : nullptr;
  int64_t count = arg.numElements();
  if (count) {
    int64_t reach = 0;
    for (int64_t d = 0; d < arg.shape.rank; ++d)
      reach += (arg.shape[d] - 1) * arg.strides[d];
    arg.extentBytes = static_cast<uint64_t>(reach + 1) * arg.elementBytes;
  }
  int64_t expected[host::kMaxRank];
  rowMajorStrides(arg.shape, expected);
  arg.contiguous = true;
  for (int64_t d = 0; d < arg.shape.rank; ++d)
    if (arg.shape[d] > 1 && arg.strides[d] != expected[d])
      arg.contiguous = false;
  if (count == 0)
    arg.contiguous = true;
  if (arg.storageBytes) {
    const Allocation *allocation =
        findAllocation(arg.storage, arg.storageBytes);
    if (!allocation)
      return fail(ACLNN_ERR_PARAM_INVALID,
                  "%s (tensor%llu): its storage, %llu bytes at %s, is not in "
                  "device memory (inside one live aclrtMalloc allocation)",
                  what, static_cast<unsigned long long>(arg.serial),
                  static_cast<unsigned long long>(arg.storageBytes),
                  describeAddress(arg.storage).c_str());
    arg.allocation = allocation->id;
  }
  tensors.push_back(arg);
  return ACLNN_SUCCESS;
}

aclnnStatus Plan::contiguous(const aclTensor *t, const char *what,
                             TensorArg &arg, bool optional) {
  if (aclnnStatus status = tensor(t, what, arg, optional))
    return status;
  if (arg.present && !arg.contiguous)
    return fail(ACLNN_ERR_PARAM_INVALID,
                "%s must be contiguous here (the test double takes strided "
                "views only where the operator needs them)",
                what);
  return ACLNN_SUCCESS;
}

aclnnStatus Plan::input(const aclTensor *t, const char *what, Input &in) {
  in = Input();
  if (aclnnStatus status = tensor(t, what, in.arg))
    return status;
  if (!in.arg.contiguous) {
    in.gathered = true;
    in.slot = reserve(in.arg.bytes());
  }
  return ACLNN_SUCCESS;
}

aclnnStatus Plan::output(const aclTensor *t, const char *what, Output &out,
                         std::initializer_list<const TensorArg *> reads,
                         bool stage, const TensorArg *alias) {
  out = Output();
  if (aclnnStatus status = contiguous(t, what, out.arg))
    return status;
  for (const TensorArg *read : reads) {
    if (!read || !overlaps(out.arg, *read))
      continue;
    bool exactAlias = read == alias && read->base == out.arg.base &&
                      sameShape(read->shape, out.arg.shape);
    if (!exactAlias)
      stage = true;
  }
  if (stage) {
    out.staged = true;
    out.slot = reserve(out.arg.bytes());
  }
  return ACLNN_SUCCESS;
}

aclnnStatus Plan::disjoint(std::initializer_list<const Output *> outputs) {
  for (auto i = outputs.begin(); i != outputs.end(); ++i)
    for (auto j = i + 1; j != outputs.end(); ++j)
      if (overlaps((*i)->arg, (*j)->arg))
        return fail(ACLNN_ERR_PARAM_INVALID, "results %s and %s overlap",
                    (*i)->arg.what, (*j)->arg.what);
  return ACLNN_SUCCESS;
}

aclnnStatus Plan::scalar(const aclScalar *s, const char *what) {
  if (!s)
    return fail(ACLNN_ERR_PARAM_NULLPTR, "%s is null", what);
  if (!isLive(s))
    return fail(ACLNN_ERR_PARAM_INVALID, "%s is not a live scalar", what);
  return ACLNN_SUCCESS;
}

aclnnStatus Plan::list(const aclTensorList *l, const char *what) {
  if (!l)
    return fail(ACLNN_ERR_PARAM_NULLPTR, "%s is null", what);
  if (!isLive(l))
    return fail(ACLNN_ERR_PARAM_INVALID, "%s is not a live tensor list", what);
  lists.emplace_back(l, l->serial);
  return ACLNN_SUCCESS;
}

aclnnStatus Plan::requireFloat(const TensorArg &arg) {
  if (arg.present && !isFloat(arg.dtype))
    return fail(ACLNN_ERR_PARAM_INVALID,
                "%s has element type %s; the test double computes in f32 and "
                "f64",
                arg.what, dtypeName(arg.dtype));
  return ACLNN_SUCCESS;
}

aclnnStatus Plan::requireIndex(const TensorArg &arg) {
  if (arg.present && arg.dtype != ACL_INT32 && arg.dtype != ACL_INT64)
    return fail(ACLNN_ERR_PARAM_INVALID,
                "%s has element type %s, not i32 or i64", arg.what,
                dtypeName(arg.dtype));
  return ACLNN_SUCCESS;
}

aclnnStatus Plan::requireSameType(const TensorArg &arg, const TensorArg &like) {
  if (arg.present && like.present && arg.dtype != like.dtype)
    return fail(ACLNN_ERR_PARAM_INVALID,
                "%s has element type %s but %s has %s (the test double does "
                "not convert)",
                arg.what, dtypeName(arg.dtype), like.what,
                dtypeName(like.dtype));
  return ACLNN_SUCCESS;
}

aclnnStatus Plan::requireShape(const TensorArg &arg, const host::Shape &shape) {
  if (arg.present && !sameShape(arg.shape, shape))
    return fail(ACLNN_ERR_PARAM_INVALID, "%s has shape %s, expected %s",
                arg.what, formatShape(arg.shape).c_str(),
                formatShape(shape).c_str());
  return ACLNN_SUCCESS;
}

aclnnStatus Plan::requireScalarIndex(const TensorArg &arg) {
  if (arg.present && (arg.dtype != ACL_INT64 || arg.shape.rank != 0))
    return fail(ACLNN_ERR_PARAM_INVALID,
                "%s must be a 0-d i64 tensor, got %s of shape %s", arg.what,
                dtypeName(arg.dtype), formatShape(arg.shape).c_str());
  return ACLNN_SUCCESS;
}

aclnnStatus Plan::requireNoSelfOverlap(const TensorArg &arg) {
  // Sorted by stride, each dimension must step past everything the
  // smaller-strided dimensions reach.
  std::vector<std::pair<int64_t, int64_t>> dims; // (stride, size)
  for (int64_t d = 0; d < arg.shape.rank; ++d)
    if (arg.shape[d] > 1)
      dims.emplace_back(arg.strides[d], arg.shape[d]);
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;
  for (auto [stride, size] : dims) {
    if (stride <= reach)
      return fail(ACLNN_ERR_PARAM_INVALID,
                  "%s is written, but several of its elements share memory "
                  "(strides overlap)",
                  arg.what);
    reach += stride * (size - 1);
  }
  return ACLNN_SUCCESS;
}

uint64_t Plan::reserve(uint64_t bytes) {
  uint64_t offset = workspace;
  workspace += (std::max<uint64_t>(bytes, 1) + 63) / 64 * 64;
  return offset;
}

aclnnStatus Plan::finish(std::function<void(char *)> work,
                         uint64_t *workspaceSize, aclOpExecutor **executor) {
  return finishChecked(
      [work = std::move(work)](char *workspace) {
        work(workspace);
        return ACLNN_SUCCESS;
      },
      workspaceSize, executor);
}

aclnnStatus Plan::finishChecked(std::function<aclnnStatus(char *)> work,
                                uint64_t *workspaceSize,
                                aclOpExecutor **executor) {
  if (!workspaceSize || !executor)
    return fail(ACLNN_ERR_PARAM_NULLPTR, "workspaceSize or executor is null");
  if (!initialized())
    return fail(ACLNN_ERR_RUNTIME_ERROR, "aclInit has not been called");
  auto *planned = new aclOpExecutor;
  Executors &all = executors();
  planned->serial = all.next++;
  planned->op = op;
  planned->workspace = workspace;
  planned->tensors = std::move(tensors);
  planned->lists = std::move(lists);
  planned->work = std::move(work);
  all.live.insert(planned);
  all.used.erase(planned);
  *workspaceSize = workspace;
  *executor = planned;
  call.add("workspace=%llu", static_cast<unsigned long long>(workspace));
  return ACLNN_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Launch
//===----------------------------------------------------------------------===//

aclnnStatus testdouble::launch(const char *op, void *workspace,
                               uint64_t workspaceSize, aclOpExecutor *executor,
                               aclrtStream stream) {
  CallLog call(op);
  std::function<aclnnStatus(char *)> work;
  {
    std::lock_guard<std::recursive_mutex> lock(stateMutex());
    if (call.enabled()) {
      if (!workspace && !workspaceSize)
        call.add("workspace=none");
      else
        call.add("workspace=%s bytes=%llu", describeAddress(workspace).c_str(),
                 static_cast<unsigned long long>(workspaceSize));
      call.add("stream=%s", describeStreamHandle(stream).c_str());
    }
    Stream *target = nullptr;
    if (resolveStream(op, stream, target) != ACL_SUCCESS)
      return call.status(ACLNN_ERR_RUNTIME_ERROR);
    Executors &all = executors();
    if (!executor)
      return call.status(
          fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is null", op));
    if (!all.live.count(executor)) {
      if (all.used.count(executor))
        return call.status(fail(ACLNN_ERR_PARAM_INVALID,
                                "%s: the executor was already used (an "
                                "executor runs once; call %sGetWorkspaceSize "
                                "again)",
                                op, op));
      return call.status(fail(ACLNN_ERR_PARAM_INVALID,
                              "%s: not an executor a GetWorkspaceSize "
                              "function returned",
                              op));
    }
    if (std::strcmp(executor->op, op) != 0)
      return call.status(fail(ACLNN_ERR_PARAM_INVALID,
                              "%s: the executor was made by "
                              "%sGetWorkspaceSize",
                              op, executor->op));
    uint64_t required = executor->workspace;
    if (workspaceSize < required)
      return call.status(fail(ACLNN_ERR_PARAM_INVALID,
                              "%s: workspaceSize %llu is smaller than the "
                              "%llu bytes %sGetWorkspaceSize asked for",
                              op,
                              static_cast<unsigned long long>(workspaceSize),
                              static_cast<unsigned long long>(required), op));
    const Allocation *allocation = nullptr;
    if (required > 0 || workspace) {
      if (!workspace)
        return call.status(fail(ACLNN_ERR_PARAM_NULLPTR,
                                "%s: workspace is null but %llu bytes are "
                                "needed",
                                op, static_cast<unsigned long long>(required)));
      allocation =
          findAllocation(workspace, std::max<uint64_t>(workspaceSize, 1));
      if (!allocation)
        return call.status(
            fail(ACLNN_ERR_PARAM_INVALID,
                 "%s: the workspace (%s, %llu bytes) is not "
                 "inside one live aclrtMalloc allocation",
                 op, describeAddress(workspace).c_str(),
                 static_cast<unsigned long long>(workspaceSize)));
    }
    for (const TensorArg &arg : executor->tensors) {
      if (!isLive(arg.handle) || serialOf(arg.handle) != arg.serial)
        return call.status(fail(ACLNN_ERR_PARAM_INVALID,
                                "%s: %s (tensor%llu) was destroyed before the "
                                "launch",
                                op, arg.what,
                                static_cast<unsigned long long>(arg.serial)));
      const Allocation *memory =
          arg.storageBytes ? findAllocation(arg.storage, arg.storageBytes)
                           : nullptr;
      if (arg.storageBytes && (!memory || memory->id != arg.allocation))
        return call.status(fail(ACLNN_ERR_PARAM_INVALID,
                                "%s: the device memory of %s (tensor%llu) was "
                                "freed before the launch",
                                op, arg.what,
                                static_cast<unsigned long long>(arg.serial)));
    }
    for (auto [list, serial] : executor->lists)
      if (!isLive(list) || list->serial != serial)
        return call.status(fail(ACLNN_ERR_PARAM_INVALID,
                                "%s: tensorlist%llu was destroyed before the "
                                "launch",
                                op, static_cast<unsigned long long>(serial)));
    // In flight on the stream until it is synchronised.
    if (required > 0 &&
        std::find(target->workspaces.begin(), target->workspaces.end(),
                  allocation->id) == target->workspaces.end())
      target->workspaces.push_back(allocation->id);
    ++target->pending;
    work = std::move(executor->work);
    all.live.erase(executor);
    all.used.insert(executor);
    delete executor;
  }
  return call.status(work(static_cast<char *>(workspace)));
}

std::string testdouble::formatShape(const host::Shape &shape) {
  std::string text = "[";
  for (int64_t d = 0; d < shape.rank; ++d)
    text += format(d ? ", %lld" : "%lld", static_cast<long long>(shape[d]));
  return text + "]";
}
