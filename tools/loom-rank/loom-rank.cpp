//===- loom-rank.cpp - Runs a program library on one MPI rank -------------===//
//
//   mpirun -np N loom-rank LIBRARY [--steps K] [--in DIR] [--out DIR]
//                                  [--trace] [--calls]
//
// Opens the program library (loom-run --emit-library) and runs it under
// the driver every compiled program shares (runtime/driver/Driver.h, which
// documents the options); loom-run launches it.
//
//===----------------------------------------------------------------------===//

#include "runtime/driver/Driver.h"
#include "runtime/driver/ProgramLoader.h"

#include <cstdio>

int main(int argc, char **argv) {
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: loom-rank LIBRARY [--steps K] [--in DIR] "
                         "[--out DIR] [--trace] [--calls]\n");
    return 1;
  }
  loom_program_api api;
  loom::driver::LoadError error =
      loom::driver::openProgramLibrary(argv[1], api);
  if (error.kind != loom::driver::LoadError::None) {
    std::fprintf(stderr, "loom-rank: error: %s\n", error.message.c_str());
    return 1;
  }
  return loom::driver::runDriver(argc, argv, 2, api);
}
