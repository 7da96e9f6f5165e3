//===- ProgramBuild.h - Compiling generated programs -----------*- C++ -*-===//
//
// How generated C++ becomes a program executable or a program library on
// this machine: the compiler, flags, include paths and libraries of this
// build (tools/loom-run/CMakeLists.txt writes them), shared by loom-run and
// the C API.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_CAPI_PROGRAMBUILD_H
#define LOOM_LIB_CAPI_PROGRAMBUILD_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace loom::capi {

/// What a build of generated C++ links besides the host runtime.
struct BuildKind {
  /// The CUDA or Ascend runtime (a cluster may need both).
  bool cuda = false, ascend = false;
  /// A shared library with the C ABI of include/loom-c/Program.h instead
  /// of an executable.
  bool library = false;
};

/// What generated C++ `source` links (a cluster's programs may be of several
/// targets: the runtimes it includes), as a library or an executable.
BuildKind getBuildKind(llvm::StringRef source, bool library);

/// Whether this build has the CUDA toolchain.
bool haveCudaToolchain();

/// The command that compiles `source` to `output`.
std::vector<std::string> getCompileCommand(const std::string &source,
                                           const std::string &output,
                                           const BuildKind &kind);

/// Runs `command` and waits; "" when it succeeds, else why not (naming
/// `what` and the command).
std::string runCommand(llvm::ArrayRef<std::string> command,
                       const std::string &what);

} // namespace loom::capi

#endif // LOOM_LIB_CAPI_PROGRAMBUILD_H
