//===- Internal.h - Shared by the Ascend runtime's sources ------*- C++ -*-===//

#ifndef LOOM_RUNTIME_ASCEND_INTERNAL_H
#define LOOM_RUNTIME_ASCEND_INTERNAL_H

#include "runtime/ascend/AscendKernels.h"
#include "runtime/ascend/Loader.h"

#include <string>
#include <utility>
#include <vector>

namespace loom::ascend::internal {

/// The rank's stream (made by startDevice).
aclrtStream stream();

void checkAcl(aclError code, const char *what);
void checkNn(aclnnStatus code, const char *what);
void checkHccl(HcclResult code, const char *what);

/// Device memory of `bytes` for an operator's workspace; freed after the
/// next synchronisation of the stream.
void *workspace(uint64_t bytes);

/// Device memory for one kernel's temporaries, alive until the kernel
/// returns: unlike workspace(), whose memory a drain for the workspace
/// budget may free in the middle of a kernel, its memory joins the
/// workspaces (freed after the stream next drains) only when the object
/// goes out of scope.
class KernelScratch {
public:
  KernelScratch() = default;
  KernelScratch(const KernelScratch &) = delete;
  KernelScratch &operator=(const KernelScratch &) = delete;
  ~KernelScratch();
  void *allocate(uint64_t bytes);

private:
  std::vector<std::pair<void *, uint64_t>> memory_;
};

// Descriptors, destroyed after the next synchronisation of the stream.
/// A contiguous tensor over `arg` (null for an absent operand).
aclTensor *tensor(const detail::Arg &arg);
/// A strided view: `shape` with `strides` (elements) from `offset`
/// (elements) into `base`, which holds `storageElements` elements.
aclTensor *view(const void *base, aclDataType type, const Shape &shape,
                const int64_t *strides, int64_t offset,
                int64_t storageElements);
/// `value` as a scalar of `type`.
aclScalar *scalar(double value, aclDataType type);
aclIntArray *intArray(const int64_t *values, int64_t count);
aclTensorList *tensorList(aclTensor *const *tensors, int64_t count);
/// The tensors of a variadic operand as a list; null when there are none
/// (an absent optional list of CANN's).
aclTensorList *tensorListOrNull(const std::vector<detail::Arg> &args);
/// An optional integer array; null when absent (rank -1).
aclIntArray *intArrayOrNull(const Shape &shape);

/// Ends the rank with `loom::ascend::<message>` (the runtime's failure
/// path: every rank stops, nothing hangs).
[[noreturn]] void fail(const std::string &message);

/// Row-major strides of `shape`.
inline void contiguousStrides(const Shape &shape,
                              int64_t (&strides)[host::kMaxRank]) {
  int64_t stride = 1;
  for (int64_t d = shape.rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= shape[d];
  }
}

inline bool empty(const detail::Arg &arg) {
  return arg.shape.numElements() == 0;
}

/// A view of `in`'s elements as `shape` with `strides` from `offset`.
inline aclTensor *viewOf(const detail::Arg &in, const Shape &shape,
                         const int64_t *strides, int64_t offset) {
  return view(in.data, in.type, shape, strides, offset,
              in.shape.numElements());
}

/// Calls an aclnn operator: `get(args..., &size, &executor)`, a workspace
/// of that size, then `run(workspace, size, executor, stream)`.
template <typename Get, typename Run, typename... Args>
void launch(const char *name, Get get, Run run, Args... args) {
  if (!get || !run)
    fail(std::string(name) +
         ": the operator is not in the CANN operator libraries loaded "
         "(libopapi.so, or libopapi_math/_nn/_transformer.so)");
  uint64_t size = 0;
  aclOpExecutor *executor = nullptr;
  checkNn(get(args..., &size, &executor), name);
  void *memory = size ? workspace(size) : nullptr;
  checkNn(run(memory, size, executor, stream()), name);
}

} // namespace loom::ascend::internal

/// Launches aclnn operator OP (an Api member pair) with ARGS.
#define LOOM_ACLNN(OP, ...)                                                    \
  ::loom::ascend::internal::launch(#OP, api().OP##GetWorkspaceSize, api().OP,  \
                                   __VA_ARGS__)

#endif // LOOM_RUNTIME_ASCEND_INTERNAL_H
