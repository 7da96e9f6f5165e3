//===- Placement.h - Expert replicas and their devices for MoE layers -*- C++ -*-===//
//
// Expert placement (DESIGN.md item 6). For one MoE layer, the tokens routed
// to each logical expert in the coming micro-step are known ahead (from the
// rollout's routing); the planner chooses how many replicas (physical
// experts) each logical expert gets and the device of each, under a slot
// budget per device, so that the busiest device's tokens are as few as
// possible. A replica receives an even share of its expert's tokens, w_e /
// r_e, unless uneven splits are asked for.
//
// Devices are numbered node-major (device d is on node d / devicesPerNode)
// and physical expert p lives in slot p % slotsPerDevice of device p /
// slotsPerDevice, the layout EPLB's physical-to-logical map uses.
//
// Two planners:
//
//  * planEplb reproduces DeepSeek EPLB's rebalance (hierarchical: groups of
//    experts packed onto nodes, replicas made within each node, replicas
//    packed onto the node's devices; global: replicas made over the whole
//    cluster, then packed onto all devices), decision for decision and tie
//    for tie, as the baseline the runtime's planner is compared with. It
//    fills every slot and may put two replicas of one expert on a device.
//
//  * planPlacement, the runtime's planner. Replica counts come from the
//    greedy that gives the next replica to the expert of largest w_e / r_e
//    (which minimises max_e w_e / r_e for a budget of replicas, the second
//    term of the lower bound), tried at the full budget and a few budgets
//    below it, since a fuller budget is not always easier to pack, and from
//    split-fit against bisected targets; each vector is placed largest
//    replica first onto the least loaded device with a free slot (LPT) and
//    refined by a local search that moves a replica off, or swaps one with,
//    the busiest device while that lowers the pair's larger load, and by
//    exact re-splits of the busiest device with a light one. Two replicas
//    of one expert may share a device (the device then takes two shares).
//    The EPLB plan is one of the candidates, so the result is never above
//    the baseline. On small instances (experts x devices <= 64) the count
//    vectors one or two changes away from the best are tried too, and the
//    plans are re-planned exactly a few devices at a time: the busiest
//    device with one or two others, every expert's replica count free
//    there, the other devices' contents fixed (a depth-first search with a
//    node budget; on every candidate where experts x devices <= 32, on the
//    final plan otherwise). Hierarchically, each group of experts stays on
//    one node (EPLB's node packing, then improved by group swaps between
//    nodes that lower the nodes' bounds). The finished device contents are
//    then matched to the physical devices (and, with groups, to nodes) so
//    that as many replicas as possible stay where the previous placement
//    had them. With a previous placement two more candidates compete on
//    modelled time (below): the previous placement improved only by trades
//    that pay for their bytes (a replica moved off the busiest device,
//    swapped, or a new replica of one of its experts added), and the
//    previous placement kept as it is, which wins unless a plan's modelled
//    time is lower, so a small balance gain never buys a large move.
//
// The modelled micro-step time is
//
//     max device tokens x secondsPerToken
//       + intra-node bytes moved / intraNodeBandwidth
//       + inter-node bytes moved / interNodeBandwidth,
//
// where a replica on a device that held no replica of its expert before
// costs one expert's weights, fetched within the node where another device
// of the node held the expert, and from another node otherwise. With no
// previous placement nothing is moved.
//
// Lower bound (for reporting): max(total / devices, min over r_e >= 1 with
// sum r_e <= slots and r_e <= devices of max_e w_e / r_e). With uneven
// splits the bound is total / devices.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_MOE_PLACEMENT_H
#define LOOM_RUNTIME_MOE_PLACEMENT_H

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/moe/RunTimePlan.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom::moe {

struct Topology {
  int64_t nodes = 1;
  /// All devices of all nodes; a multiple of nodes.
  int64_t devices = 1;
  /// Physical experts a device holds.
  int64_t slotsPerDevice = 1;

  int64_t devicesPerNode() const { return nodes > 0 ? devices / nodes : 0; }
  int64_t slots() const { return devices * slotsPerDevice; }
};

struct CostParams {
  /// Seconds a device takes for one token through one expert.
  double secondsPerToken = 1e-6;
  /// Bytes of one expert's weights (0: moves are free, only counted).
  double expertBytes = 0;
  /// Bytes per second between devices of one node and across nodes.
  double intraNodeBandwidth = 4e11;
  double interNodeBandwidth = 5e10;
};

/// One replica of a logical expert held by a device.
struct Holding {
  int64_t expert = 0;
  int64_t device = 0;
};

/// The holdings of a physical-to-logical map (slot p on device p / slots;
/// -1: an empty slot).
std::vector<Holding> holdingsOf(const std::vector<int64_t> &physicalToLogical,
                                int64_t slotsPerDevice);

/// What each device holds once `map` (a plan's physical-to-logical map)
/// runs after `previous`: the plan's replicas, and then, in the slots the
/// plan leaves empty, the device's previous residents the plan does not
/// place there (in their order). A replica the plan stops using stays
/// resident: dropping it frees nothing, and keeping it saves a move when a
/// later micro-step wants it back. The next plan's previous placement.
std::vector<Holding> residentAfter(const std::vector<Holding> &previous,
                                   const std::vector<int64_t> &map,
                                   int64_t slotsPerDevice);

struct Cluster {
  Topology topology;
  /// Expert groups (EPLB's hierarchy keeps a group on one node); the
  /// experts of a layer divide into groups of equal size, consecutive.
  int64_t groups = 1;
  CostParams cost;
  /// Bytes free on each device for expert weights (empty: not checked);
  /// each must hold slotsPerDevice experts of cost.expertBytes.
  std::vector<double> freeBytes;
};

struct LayerInput {
  /// Tokens routed to each logical expert.
  std::vector<double> tokens;
  /// The previous placement (empty: none).
  std::vector<Holding> previous;
  /// Where set, the tokens must sum to it.
  std::optional<double> expectedTotal;
};

struct PlacementOptions {
  /// Groups on nodes (where groups divide by nodes), or one flat cluster.
  bool hierarchical = true;
  /// Split an expert's tokens unevenly among its replicas (water-filling)
  /// to balance the devices further.
  bool unevenSplits = false;
  /// On small layers (experts x devices <= 64), spend the extra effort
  /// that takes the plan to (or near) the exact optimum: more candidates,
  /// longer local searches and exact re-plans of a few devices at a time.
  /// It costs milliseconds a layer there (more than a large layer's whole
  /// plan); false plans every layer as a large one (never above the
  /// baseline either), for a plan needed at run time.
  bool exactSmallLayers = true;
};

struct Placement {
  /// Logical expert of each physical slot (devices x slotsPerDevice; -1:
  /// empty; only the runtime planner leaves slots empty).
  std::vector<int64_t> physicalToLogical;
  /// Tokens the replica in each slot receives (0 for an empty slot).
  std::vector<double> slotTokens;
  /// Replicas of each logical expert.
  std::vector<int64_t> replicaCount;
  std::vector<double> deviceLoad;
  double maxLoad = 0;
  /// The even-split lower bound, and total / devices (the uneven one).
  double lowerBound = 0;
  double unevenLowerBound = 0;
  /// Replicas that are new on their device, and their bytes, split by
  /// where they come from.
  int64_t replicasMoved = 0;
  double intraNodeBytes = 0;
  double interNodeBytes = 0;
  double bytesMoved() const { return intraNodeBytes + interNodeBytes; }
  double modelledSeconds = 0;
  /// Whether the planner kept the previous placement as it was.
  bool keptPrevious = false;
  /// Whether the maximum load is total / devices (within 1e-9 relative).
  /// With uneven splits the planner cuts the experts' tokens end to end
  /// into equal pieces (McNaughton's wrap-around); where the slots cannot
  /// take the pieces it falls back to the even-split plan, water-filled,
  /// and this tells whether the mean was reached all the same.
  bool meanReached = false;
  /// With uneven splits: whether the wrap-around plan was used (false: the
  /// even-split plan, water-filled).
  bool wrapAround = false;
};

/// InvalidArgument with a message naming what is wrong: bad topology
/// (devices not a multiple of nodes, fewer than one slot, ...), more
/// experts than slots, a negative or non-finite count, counts not summing
/// to expectedTotal, a previous placement naming a device or expert out of
/// range or overfilling a device, bad cost parameters, memory that cannot
/// hold the slots, groups that do not divide the experts.
absl::Status checkLayer(const Cluster &cluster, const LayerInput &layer);

/// DeepSeek EPLB's rebalance of one layer (hierarchical where the options
/// ask for it and groups divide by nodes, global otherwise); the previous
/// placement, if any, only enters the moved bytes and modelled time.
absl::StatusOr<Placement> planEplb(const Cluster &cluster,
                                   const LayerInput &layer,
                                   const PlacementOptions &options = {});

/// The runtime's planner (see the file comment).
absl::StatusOr<Placement> planPlacement(const Cluster &cluster,
                                        const LayerInput &layer,
                                        const PlacementOptions &options = {});

/// Every layer, each planned on its own (errors name the layer).
absl::StatusOr<std::vector<Placement>>
planLayers(const Cluster &cluster, const std::vector<LayerInput> &layers,
           const PlacementOptions &options = {}, bool baseline = false);

/// Integer counts, converted (exact below 2^53).
std::vector<double> tokensOf(const std::vector<int64_t> &counts);

/// min over r_e >= 1, sum r_e <= slots, r_e <= devices of max_e w_e / r_e
/// (the largest-share greedy); infinity where experts > slots.
double minMaxShare(const std::vector<double> &tokens, int64_t slots,
                   int64_t devices);

/// The reporting lower bound: max(total / devices, minMaxShare).
double lowerBound(const std::vector<double> &tokens, const Topology &topology);

/// Checks a placement's invariants against its layer: the map's size, every
/// expert with at least one replica, slots respected, no two replicas of an
/// expert on a device (unless allowColocated; both planners may colocate), each expert's slot tokens
/// summing to its tokens (and equal where splits are even), loads, maxima
/// and replica counts consistent. FailedPrecondition naming the first
/// broken one.
absl::Status validatePlacement(const Cluster &cluster, const LayerInput &layer,
                               const Placement &placement, bool evenSplits,
                               bool allowColocated);

/// Loads, moves and modelled time of a given physical-to-logical map, with
/// even splits (or water-filled ones); InvalidArgument where an expert has
/// no replica or the map is the wrong size.
absl::StatusOr<Placement> evaluateMap(const Cluster &cluster,
                                      const LayerInput &layer,
                                      const std::vector<int64_t> &map,
                                      bool unevenSplits = false);

// planFromForecast, nn.moe_plan's kernel: RunTimePlan.h (included above).

} // namespace loom::moe

#endif // LOOM_RUNTIME_MOE_PLACEMENT_H
