//===- AscendDispatch.cpp - The ascend target's kernel dispatcher -----------===//
//
// dispatchAscend(op, types, call): `loom::ascend::<op>` of the overload of
// `types` with `call`'s arguments (KernelCall.h). The dispatcher is
// generated from the kernel contracts (loom-tblgen
// -gen-ascend-kernel-dispatch) and compiled against the target's real
// declarations (runtime/ascend/AscendKernels.h).
//
//===----------------------------------------------------------------------===//

#include "test/conformance/Targets.h"

#include "runtime/ascend/AscendKernels.h"

namespace loom::conformance {
namespace {
#include "test/conformance/AscendKernelDispatch.h.inc"
} // namespace

bool dispatchAscend(const std::string &op, const std::vector<std::string> &types,
                  const KernelCall &call) {
  return dispatch(op, types, call);
}

} // namespace loom::conformance
