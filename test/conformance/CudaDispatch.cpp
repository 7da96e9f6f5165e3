//===- CudaDispatch.cpp - The cuda target's kernel dispatcher -----------===//
//
// dispatchCuda(op, types, call): `loom::cuda::<op>` of the overload of
// `types` with `call`'s arguments (KernelCall.h). The dispatcher is
// generated from the kernel contracts (loom-tblgen
// -gen-cuda-kernel-dispatch) and compiled against the target's real
// declarations (runtime/cuda/CudaKernels.h).
//
//===----------------------------------------------------------------------===//

#include "test/conformance/Targets.h"

#include "runtime/cuda/CudaKernels.h"

namespace loom::conformance {
namespace {
#include "test/conformance/CudaKernelDispatch.h.inc"
} // namespace

bool dispatchCuda(const std::string &op, const std::vector<std::string> &types,
                  const KernelCall &call) {
  return dispatch(op, types, call);
}

} // namespace loom::conformance
