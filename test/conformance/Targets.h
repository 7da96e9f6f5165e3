//===- Targets.h - The targets the conformance suite runs on ----*- C++ -*-===//
//
// Each target's adapter: its memory (host memory; the CUDA runtime's device
// memory; the Ascend test double's device memory through ACL) and its
// generated dispatcher (<Target>Dispatch.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TEST_CONFORMANCE_TARGETS_H
#define LOOM_TEST_CONFORMANCE_TARGETS_H

#include "test/conformance/KernelCall.h"

#include <cstddef>
#include <string>
#include <vector>

namespace loom::conformance {

bool dispatchHost(const std::string &op, const std::vector<std::string> &types,
                  const KernelCall &call);
bool dispatchAscend(const std::string &op,
                    const std::vector<std::string> &types,
                    const KernelCall &call);
bool dispatchCuda(const std::string &op, const std::vector<std::string> &types,
                  const KernelCall &call);

/// How results are compared with the reference interpreter.
enum class Agreement {
  /// Bit for bit (the kernels mirror the interpreter's loops and constants).
  Bitwise,
  /// Within a relative tolerance (f64 1e-12, f32 1e-5); integers and i1
  /// exactly.
  Tolerance,
};

struct Target {
  /// "host", "cuda", "ascend": the contract's target name.
  const char *name;
  /// Why the target cannot run here, or null.
  const char *(*unavailable)();
  void *(*allocate)(size_t bytes);
  void (*release)(void *pointer);
  void (*toDevice)(void *device, const void *host, size_t bytes);
  void (*toHost)(void *host, const void *device, size_t bytes);
  bool (*dispatch)(const std::string &op, const std::vector<std::string> &types,
                   const KernelCall &call);
  Agreement agreement;
};

} // namespace loom::conformance

#endif // LOOM_TEST_CONFORMANCE_TARGETS_H
