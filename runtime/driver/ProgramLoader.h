//===- ProgramLoader.h - Opening a program library --------------*- C++ -*-===//
//
// Fills the function table of include/loom-c/Program.h from a program
// library (dlopen), checking its ABI version. MLIR-free: the compiler's C
// API (loom_program_library_open) and loom-rank share it.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_DRIVER_PROGRAMLOADER_H
#define LOOM_RUNTIME_DRIVER_PROGRAMLOADER_H

#include "include/loom-c/Program.h"

#include <string>

namespace loom::driver {

/// What went wrong opening a library, and how a C API reports it.
struct LoadError {
  enum Kind { None, NotFound, Incompatible } kind = None;
  std::string message;
};

/// Opens the library at `path` into `api` (zeroed first, and again on
/// failure; `api.library` is the dlopen handle).
LoadError openProgramLibrary(const char *path, loom_program_api &api);

/// Closes what openProgramLibrary opened and zeroes `api`.
void closeProgramLibrary(loom_program_api &api);

} // namespace loom::driver

#endif // LOOM_RUNTIME_DRIVER_PROGRAMLOADER_H
