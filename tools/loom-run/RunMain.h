//===- RunMain.h - The loom-run driver -------------------------*- C++ -*-===//

#ifndef LOOM_TOOLS_LOOM_RUN_RUNMAIN_H
#define LOOM_TOOLS_LOOM_RUN_RUNMAIN_H

namespace loom::interp {

/// The whole of `loom-run`: parses the command line, runs the program and
/// returns the process exit code (0 on success, 1 after a diagnostic).
int loomRunMain(int argc, char **argv);

} // namespace loom::interp

#endif // LOOM_TOOLS_LOOM_RUN_RUNMAIN_H
