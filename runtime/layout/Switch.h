//===- Switch.h - Moving a parameter set between layouts -------*- C++ -*-===//
//
// A strategy switch (docs/switching.md): every tensor of a parameter set
// (and the optimizer state that moves with it) goes from its layout under
// one strategy to its layout under another, all of it in one batched
// exchange. Built on planTransfers (Transfers.h), which keeps in place what
// a device already holds and moves exactly what each destination lacks;
// here the tensors are planned together:
//
//  - senders are balanced over the whole set (bytes per device and per
//    link carried from one tensor to the next), intra-node holders
//    preferred (SenderChoice);
//  - the transfers of every tensor between one pair of devices form one
//    message, so the switch is one exchange of at most one message per
//    ordered pair of devices;
//  - where the target's devices are interchangeable (the same node and
//    kind), the plan may relabel them: device p takes the role the target
//    gave device r, for the permutation that minimises the bytes moved.
//    The volume of a relabelling is the sum over roles of what the device
//    given the role lacks, so the best one is an assignment problem,
//    solved exactly (solveAssignment);
//  - every plan reports its volume against the minimum under the identity
//    and under the best relabelling, and its largest per-device and
//    per-link bytes against lower bounds every plan obeys.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_LAYOUT_SWITCH_H
#define LOOM_RUNTIME_LAYOUT_SWITCH_H

#include "runtime/layout/Transfers.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loom::layout {

/// One tensor of the set and its two layouts.
struct SwitchTensor {
  std::string name;
  std::vector<int64_t> shape;
  int64_t elementBytes = 4;
  Layout from, to;
};

/// Where the devices are. A device absent from `nodeOf` is on node 0; one
/// absent from `kindOf` is of kind "".
struct Topology {
  std::map<int64_t, int64_t> nodeOf;
  std::map<int64_t, std::string> kindOf;
};

struct SwitchOptions {
  /// Relabel the target's interchangeable devices to move the least.
  bool relabel = false;
  /// Passed to planTransfers, per tensor.
  int64_t maxCells = 1 << 20;
};

/// A box of one tensor of the set.
struct SwitchPiece {
  int64_t tensor = 0;
  std::vector<int64_t> offsets, sizes;
  int64_t bytes = 0;
};

/// Everything one device sends another in the switch.
struct SwitchMessage {
  int64_t source = 0, destination = 0;
  /// By tensor, then offsets.
  std::vector<SwitchPiece> pieces;
  int64_t bytes = 0;
};

struct SwitchPlan {
  /// The role each device of the targets plays: device `relabelling[r]`
  /// holds what the target layouts give device r (identity unless
  /// relabelled).
  std::map<int64_t, int64_t> relabelling;
  /// Every tensor's target layout with the relabelling applied: what the
  /// devices hold after the switch.
  std::vector<Layout> targets;
  /// One per (source, destination) with something to move, in that order.
  std::vector<SwitchMessage> messages;
  std::map<int64_t, int64_t> sent, received;
  /// Bytes between nodes, per (source node, destination node).
  std::map<std::pair<int64_t, int64_t>, int64_t> linkBytes;
  int64_t totalBytes = 0;
  /// The bytes of the targets that stay where they are.
  int64_t keptBytes = 0;
  /// The least volume of any plan under the identity mapping, and under
  /// the best relabelling (both computed whether or not the plan
  /// relabels).
  int64_t identityMinimum = 0;
  int64_t relabelledMinimum = 0;
  /// The largest bytes a device sends and receives, the largest bytes on
  /// one link between nodes, and the bytes crossing nodes in all, each
  /// with a lower bound that every plan to these targets obeys:
  ///  - received: the most bytes one device lacks (met exactly);
  ///  - sent: what a device alone holds of what others lack, or the volume
  ///    over the devices that hold anything, whichever is larger;
  ///  - link: what the devices of one node lack and only one other node
  ///    holds, or what they lack and their own node does not hold over the
  ///    other nodes that hold anything;
  ///  - cross-node: what devices lack and their own node does not hold
  ///    (met exactly, intra-node holders being preferred).
  int64_t maxSent = 0, maxSentBound = 0;
  int64_t maxReceived = 0, maxReceivedBound = 0;
  int64_t maxLink = 0, maxLinkBound = 0;
  int64_t crossNodeBytes = 0, crossNodeBound = 0;
};

/// Plans the switch of `tensors` (InvalidArgument, naming the tensor, where
/// a layout does not fit its shape or holds partial sums). Tensors may lie
/// on different devices (pipeline stages); a relabelling renames a device
/// in every tensor's target at once.
absl::StatusOr<SwitchPlan> planSwitch(const std::vector<SwitchTensor> &tensors,
                                      const Topology &topology,
                                      const SwitchOptions &options = {});

/// The assignment of least total cost: result[row] is the column of row
/// `row`, every column used once, for a square matrix of non-negative
/// costs (Hungarian method with potentials, O(n^3)). InvalidArgument for a
/// matrix that is not square or holds a negative cost.
absl::StatusOr<std::vector<int64_t>>
solveAssignment(const std::vector<std::vector<int64_t>> &cost);

/// One device's source shard of one tensor: its bytes (row-major, the
/// shard's sizes), or null where the device holds nothing of the tensor.
struct ShardBytes {
  const char *data = nullptr;
  int64_t bytes = 0;
};

/// A rank's part of `plan` (device `device`; `own` by tensor, its source
/// shards): the buffer of every message it sends, in plan order (each the
/// message's pieces one after another, every piece's box row-major).
/// InvalidArgument where `own` does not match the source layouts.
absl::StatusOr<std::vector<std::vector<char>>>
packSwitch(const SwitchPlan &plan, const std::vector<SwitchTensor> &tensors,
           int64_t device, const std::vector<ShardBytes> &own);

/// The rest of it: the device's shard of every tensor under the plan's
/// target (empty where it holds none), from what it keeps of `own` and
/// `received`, the buffers of the messages sent to it in plan order.
absl::StatusOr<std::vector<std::vector<char>>>
unpackSwitch(const SwitchPlan &plan, const std::vector<SwitchTensor> &tensors,
             int64_t device, const std::vector<ShardBytes> &own,
             const std::vector<std::vector<char>> &received);

/// Carries out `plan` in one address space, every device packing and
/// unpacking its part as a rank does (the driver's exchange sends the
/// packed buffers between ranks): for every tensor and every device of its target, the
/// block the device holds afterwards, from what it keeps of `sources`
/// (tensor, then device: that device's shard under the tensor's `from`
/// layout) and the pieces sent to it. The result is indexed the same way,
/// by tensor then by device of the target. InvalidArgument where a source
/// shard is missing or of the wrong size.
absl::StatusOr<std::vector<std::map<int64_t, std::vector<char>>>>
executeSwitch(const SwitchPlan &plan, const std::vector<SwitchTensor> &tensors,
              const std::vector<std::map<int64_t, std::vector<char>>> &sources);

/// The plan's figures as text, one per line (what `hspmd-switch-plans`
/// prints and tests check):
///   volume V bytes (identity minimum I, relabelled minimum R), kept K
///   messages M, largest sent S (bound B), received S (bound B)
///   cross-node C (bound B), largest link L (bound B)
///   relabelling r->p, ... (only when some device moves)
std::string describeSwitch(const SwitchPlan &plan);

} // namespace loom::layout

#endif // LOOM_RUNTIME_LAYOUT_SWITCH_H
