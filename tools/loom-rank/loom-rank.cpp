//===- loom-rank.cpp - Runs a program library on one MPI rank -------------===//
//
//   mpirun -np N loom-rank LIBRARY [LIBRARY...] [--steps K] [--in DIR]
//                          [--out DIR] [--trace] [--calls]
//
// Opens the program library (loom-run --emit-library), or several that
// are variants of one step (one per shape bucket; DIR/step<n>/variant
// picks each step's), and runs them under
// the driver every compiled program shares (runtime/driver/Driver.h, which
// documents the options); loom-run launches it.
//
//===----------------------------------------------------------------------===//

#include "runtime/driver/Driver.h"
#include "runtime/driver/ProgramLoader.h"

#include <cstdio>

int main(int argc, char **argv) {
  // LIBRARY [LIBRARY...]: one, or variants of one step (Driver.h).
  int first = 1;
  std::vector<loom_program_api> apis;
  for (; first < argc && argv[first][0] != '-'; ++first) {
    loom_program_api api;
    loom::driver::LoadError error =
        loom::driver::openProgramLibrary(argv[first], api);
    if (error.kind != loom::driver::LoadError::None) {
      std::fprintf(stderr, "loom-rank: error: %s\n", error.message.c_str());
      return 1;
    }
    apis.push_back(api);
  }
  if (apis.empty()) {
    std::fprintf(stderr, "usage: loom-rank LIBRARY [LIBRARY...] [--steps K] "
                         "[--in DIR] [--out DIR] [--trace] [--calls]\n");
    return 1;
  }
  return loom::driver::runDriver(argc, argv, first, apis);
}
