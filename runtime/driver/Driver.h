//===- Driver.h - Running a compiled program on MPI ranks -------*- C++ -*-===//
//
// The one driver of compiled programs, over the C ABI of
// include/loom-c/Program.h: a program executable's `main` calls it with its
// own, statically linked functions, and loom-rank with those of a program
// library it opened. loom-run launches loom-rank under mpirun. Every rank
// of MPI_COMM_WORLD runs device rank's program:
//
//   --steps K   steps to run (default 1)
//   --in DIR    DIR/arg<i>.bin is argument i's global array before the
//               first step, DIR/step<n>/arg<i>.bin before step n (raw
//               little-endian elements, the whole array as one device
//               holds it; every rank reads the same file and keeps its
//               shard); a missing file leaves the argument as it is
//   --out DIR   rank 0 writes DIR/grad_norm.bin where the program computes
//               the gradients' norm (one f64 per step), and DIR/loss.bin (the loss of every step, one
//               f64 each); every rank writes DIR/rank<r>/times.txt
//               (seconds per step) and comm.txt (a line per collective
//               kind: kind, calls, bytes sent, bytes received)
//   --save-args also, after the last step, DIR/arg<i>.bin (rank 0): the
//               global arrays of every argument but the data and the step
//               counters (each gathered from every rank's shard)
//   --trace     also DIR/rank<r>/trace.json (loom_program_write_trace)
//   --calls     also DIR/rank<r>/calls.txt: every device library call, a
//               line each: step, collective of the step, collective,
//               library call, data type, count, peer (-1: none), members
//               (world ranks, comma-separated); empty on the host target
//
// A test hook: LOOM_TEST_HANG=RANK:STEP makes rank RANK stop (sleep)
// before step STEP, as a hung rank would; the others must fail within the
// collective timeout, naming it.
//
// Errors are printed as `loom runtime: rank R: ...` and end the rank with
// status 1 without finalizing MPI (the others fail their next collective
// within the timeout, each naming what it waited for).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_DRIVER_DRIVER_H
#define LOOM_RUNTIME_DRIVER_DRIVER_H

#include "include/loom-c/Program.h"

#include <vector>

namespace loom::driver {

/// Runs the program of `api` as the options in `argv[first..argc)` say;
/// starts and ends MPI. Returns the exit status (0; failures end the rank).
int runDriver(int argc, char **argv, int first, const loom_program_api &api);
/// The same over several libraries, variants of one step (the same
/// arguments, parameters and state of the same types; data of other
/// shapes; each variant may lay out its parameters and state its own way,
/// as the strategies of a switching run do): step n runs the variant
/// DIR/step<n>/variant names (0 when absent); when the variant changes,
/// the parameters and state move into it in one exchange between the
/// ranks, planned from the two variants' layouts (layout::planSwitch; what
/// a rank holds under both stays put, at most one message per ordered pair
/// of ranks), and its step count continues (loom_program_set_steps_done).
/// With --out, DIR/rank<r>/switch.txt gets a line per switch: step, from,
/// to, bytes this rank sent, bytes it received, messages it sent, the
/// plan's volume over all ranks, seconds. comm.txt sums the variants'
/// traffic (not the switches'); --calls, --trace and --save-args are the
/// last step's variant's.
int runDriver(int argc, char **argv, int first,
              const std::vector<loom_program_api> &apis);

} // namespace loom::driver

#endif // LOOM_RUNTIME_DRIVER_DRIVER_H
