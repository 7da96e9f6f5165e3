//===- HostDispatch.cpp - The host target's kernel dispatcher -----------===//
//
// dispatchHost(op, types, call): `loom::host::<op>` of the overload of
// `types` with `call`'s arguments (KernelCall.h). The dispatcher is
// generated from the kernel contracts (loom-tblgen
// -gen-host-kernel-dispatch) and compiled against the target's real
// declarations (runtime/kernels/HostKernels.h).
//
//===----------------------------------------------------------------------===//

#include "test/conformance/Targets.h"

#include "runtime/kernels/HostKernels.h"

namespace loom::conformance {
namespace {
#include "test/conformance/HostKernelDispatch.h.inc"
} // namespace

bool dispatchHost(const std::string &op, const std::vector<std::string> &types,
                  const KernelCall &call) {
  return dispatch(op, types, call);
}

} // namespace loom::conformance
