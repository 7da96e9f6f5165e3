//===- ProgramSwitch.h - Moving arguments between two programs --*- C++ -*-===//
//
// The switch between two compiled programs on the same MPI ranks (the
// strategies of a switching run, docs/switching.md): every argument of the
// target program but its data and step counters (its parameters and
// optimizer state) comes from the source's argument of the same name (else
// the same index where neither is named; the same element type and global
// shape; a target parameter or state without one is an error), from the
// source's layout to the target's, in one exchange planned by the layout
// core (layout::planSwitch, with the ranks' nodes as MPI finds them:
// holders on the receiver's node are preferred): what a rank holds under
// both stays put,
// at most one message per ordered pair of ranks, every receive posted before
// any send. Every rank must call it at once, with programs created on
// `comm` (rank r running device r). The driver uses it between the
// variants of a step; the compiler's C API exports it
// (loom_program_switch, include/loom-c/Compiler.h).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_DRIVER_PROGRAMSWITCH_H
#define LOOM_RUNTIME_DRIVER_PROGRAMSWITCH_H

#include "include/loom-c/Program.h"

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace loom::driver {

struct SwitchSettings {
  /// A switch that makes no progress for this long fails, naming the ranks
  /// it waits for.
  int64_t timeoutMs = 30000;
  /// Messages are cut into pieces of at most this many bytes.
  int64_t pieceBytes = int64_t{1} << 30;
  /// A test hook: exchange the bytes but leave the target's arguments as
  /// they were.
  bool skipSetting = false;
  /// Move the parameters (nn.param) only, leaving the target's optimizer
  /// state and other arguments as they are: weights coming back from a
  /// rollout (inference) program, which has no optimizer state, into the
  /// training program that kept its own.
  bool parametersOnly = false;
  /// The node of every rank of the communicator; empty: the ranks that
  /// share memory (MPI_COMM_TYPE_SHARED) form a node. LOOM_SWITCH_NODES
  /// ("0,0,1,1") sets it, for a cluster MPI cannot see (and tests).
  std::vector<int64_t> nodeOf;
  /// Why the switch cannot go on (a bad LOOM_SWITCH_NODES, or a call the
  /// caller refused): it fails with it, on every rank together.
  std::string invalid;
  /// Whether LOOM_SWITCH_NODES was set but does not parse (what the ranks
  /// compare of their settings).
  bool nodesInvalid = false;
};

/// The bytes of one element of `dtype`.
int64_t getElementBytes(loom_dtype dtype);

/// LOOM_COLLECTIVE_TIMEOUT_S, LOOM_MPI_MESSAGE_LIMIT (as the runtime reads
/// them) and LOOM_SWITCH_NODES where set (one that is not a list of
/// non-negative integers sets `invalid`).
SwitchSettings getSwitchSettings();

/// What one rank did in a switch.
struct SwitchRecord {
  int64_t bytesSent = 0, bytesReceived = 0, messagesSent = 0;
  /// Of the bytes sent, those to ranks on other nodes.
  int64_t bytesSentOffNode = 0;
  /// The plan's volume over all ranks.
  int64_t planBytes = 0;
  /// The arguments moved.
  int64_t arguments = 0;
  double seconds = 0;
};

/// Moves the arguments (see above) of `from` into `to`. Returns the empty
/// string, or why it failed (a mismatch of the arguments, ranks that
/// planned different switches, a message of the wrong size, the timeout,
/// a failing program call); after a failure in the exchange the programs'
/// arguments are in an unknown state.
std::string switchPrograms(const loom_program_api &fromApi,
                           loom_program *from, const loom_program_api &toApi,
                           loom_program *to, MPI_Comm comm,
                           const SwitchSettings &settings,
                           SwitchRecord &record);

} // namespace loom::driver

#endif // LOOM_RUNTIME_DRIVER_PROGRAMSWITCH_H
