//===- KernelCall.h - A kernel call as data ---------------------*- C++ -*-===//
//
// The generic argument list of one kernel call, which the generated
// dispatchers (loom-tblgen -gen-<target>-kernel-dispatch, included by
// HostDispatch.cpp, AscendDispatch.cpp, CudaDispatch.cpp) turn into a call
// of `loom::<target>::<op>` with the exact overload. It follows the kernel
// contract (docs/op-contract.md): the results, then the operands by ODS
// group (an absent optional one is an empty group, a variadic one any
// number of buffers), then the attributes in the contract's order (by
// name), each a tagged value of the attribute's kind.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TEST_CONFORMANCE_KERNELCALL_H
#define LOOM_TEST_CONFORMANCE_KERNELCALL_H

#include "runtime/kernels/HostKernels.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::conformance {

using host::IndexPtr;
using host::Shape;

/// A tensor in the target's memory: its elements and shape; an integer
/// index tensor says whether it holds i64 (else i32).
struct KernelBuffer {
  void *data = nullptr;
  Shape shape;
  bool index64 = true;
};

/// An attribute's value: the member of its contract kind (F64 -> f64,
/// I64 -> i64, Unit/Bool -> flag, I64Array -> shape, Enum -> keyword).
struct KernelValue {
  double f64 = 0;
  int64_t i64 = 0;
  bool flag = false;
  Shape shape;
  const char *keyword = nullptr;
};

struct KernelCall {
  std::vector<KernelBuffer> results;
  /// One group per ODS operand: one buffer, none (an absent optional one)
  /// or a list (a variadic one).
  std::vector<std::vector<KernelBuffer>> operands;
  std::vector<KernelValue> attributes;
};

/// The buffer of a group of one, or an absent one (`nullptr, {}`).
inline KernelBuffer one(const std::vector<KernelBuffer> &group) {
  return group.empty() ? KernelBuffer() : group.front();
}

inline IndexPtr indexPtr(const KernelBuffer &buffer) {
  if (!buffer.data)
    return nullptr;
  if (buffer.index64)
    return static_cast<const int64_t *>(buffer.data);
  return static_cast<const int32_t *>(buffer.data);
}

} // namespace loom::conformance

#endif // LOOM_TEST_CONFORMANCE_KERNELCALL_H
