//===- Transfers.h - Send/recv plans between layouts -----------*- C++ -*-===//
//
// The general reshard between two layouts (docs/architecture.md, "Exchanges
// and send/recv plans"), for the compiler (hspmd.exchange lowering, the
// communication report, through dialects/hspmd/IR/HSPMDTransfers.h) and for
// whatever moves data between layouts at run time (strategy switches):
//
//  - planTransfers: both layouts hold complete values. Every destination
//    device receives the pieces of its block it does not hold already.
//    Pieces are the cells of the common refinement of every source and
//    destination block's cut points (per dimension); a cell a destination
//    holds itself in the source stays put, any other goes from one of the
//    source devices that hold it, chosen to balance the bytes each source
//    sends (the least loaded first, then the lowest device id). Adjacent
//    cells with the same sender and receiver merge into larger boxes, so a
//    message is one box. Exactly the bytes each destination lacks move.
//  - planExchange: the source may also be a partial(sum) union across
//    groups (each group's contribution complete inside it); the cells are
//    then reduced as hierarchical all-reduces among one representative per
//    group, their reductions shared among each group's replicas (see
//    planExchange below), before the transfers.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_LAYOUT_TRANSFERS_H
#define LOOM_RUNTIME_LAYOUT_TRANSFERS_H

#include "runtime/layout/Layout.h"

#include <cstdint>
#include <map>
#include <vector>

namespace loom::layout {

/// One message: a box of the global tensor from one device to another.
struct Transfer {
  int64_t source = 0, destination = 0;
  std::vector<int64_t> offsets, sizes;
  int64_t bytes = 0;
};

struct TransferPlan {
  /// In a deterministic order: by destination, then source, then offsets.
  std::vector<Transfer> transfers;
  /// Per device: bytes sent and received in all.
  std::map<int64_t, int64_t> sent, received;
  int64_t totalBytes = 0;
  /// What any plan between the two layouts must move, for lower bounds:
  /// per device, the bytes it alone holds of what others lack (it must send
  /// them); with a SenderChoice's nodes, per destination node the bytes
  /// its devices lack that no device of the node holds (they must cross
  /// nodes), and per (source node, destination node) the part of those
  /// held on that one source node only.
  std::map<int64_t, int64_t> forcedSent;
  std::map<int64_t, int64_t> crossNodeIn;
  std::map<std::pair<int64_t, int64_t>, int64_t> forcedLink;
};

/// How planTransfers picks the sender of a piece among the devices holding
/// it, when the plan is one of several moved together (a strategy switch
/// moves a whole parameter set). With `nodeOf` (device to node; a device
/// absent from it is on node 0), a holder on the destination's node is
/// preferred, so a piece crosses nodes only when the destination's node
/// holds none of it; between holders on other nodes, the least loaded link
/// (source node, destination node) wins; then the device that has sent the
/// fewest bytes, then the lowest id. The loads start from and are added to
/// `deviceLoad` and `linkLoad` (bytes sent so far, carried from one call to
/// the next); without them, from this plan's own `sent`.
struct SenderChoice {
  const std::map<int64_t, int64_t> *nodeOf = nullptr;
  std::map<int64_t, int64_t> *deviceLoad = nullptr;
  std::map<std::pair<int64_t, int64_t>, int64_t> *linkLoad = nullptr;
};

/// The send/recv plan that turns a tensor of static `shape`, laid out as
/// `from`, into `to`, for elements of `elementBytes` bytes. InvalidArgument
/// when a layout does not fit the shape or holds partial sums, or the
/// refinement would have more than `maxCells` cells.
absl::StatusOr<TransferPlan> planTransfers(const Layout &from, const Layout &to,
                                           const std::vector<int64_t> &shape,
                                           int64_t elementBytes,
                                           int64_t maxCells = 1 << 20,
                                           const SenderChoice &choice = {});

/// An all-reduce of one box among devices that each hold one contribution
/// to it, a ring over `devices` in order (Collectives.h: chunk j reduced at
/// member j, the first `elements mod k` chunks one element larger). After
/// it every member holds the sum, combined in the order of `devices`.
struct BoxReduction {
  std::vector<int64_t> offsets, sizes;
  std::vector<int64_t> devices;
};

/// The bytes member `position` of a ring all-reduce over `k` members sends
/// (and receives) for a box of `elements` elements of `elementBytes` bytes.
int64_t getRingAllReduceBytes(int64_t elements, int64_t k, int64_t position,
                              int64_t elementBytes);

/// A cross-group layout change (`hspmd.exchange`): first the reductions,
/// then the transfers. Executing it, the block a device holds under `to`
/// is, cell by cell:
///  - `from` complete: its own data where it holds the cell under `from`,
///    else the one transfer to it covering the cell, which sends the
///    sender's data under `from`;
///  - `from` partial across groups: the reduced cell where the device is a
///    member of the reduction covering it, else the one transfer covering
///    it, sent by a member of that reduction (so it carries the sum).
struct ExchangePlan {
  std::vector<BoxReduction> reductions;
  std::vector<Transfer> transfers;
  /// Per device: bytes sent and received in all (reductions included).
  std::map<int64_t, int64_t> sent, received;
  int64_t totalBytes = 0;
};

/// The plan that turns a tensor of static `shape` laid out as `from` into
/// `to`, where `from` may be a `partial(sum)` union (each group holding its
/// contribution, complete inside the group). `to` must hold complete
/// values. For a partial `from`, every cell of the common refinement of
/// `from`'s and `to`'s cut points is reduced as a hierarchical all-reduce,
/// its reduction shared among each group's replicas of it:
///  - the replicas of the cell in group g are the devices of g that hold it
///    under `from` and need it under `to`, or all of g's devices that hold
///    it where none of those needs it; r_g of them, sorted by id;
///  - the cell is cut into P = max over g of r_g pieces, at most its extent
///    along the cut: along its largest dimension (the first of equal
///    ones), near-equal, the first (extent mod P) one element larger (a
///    rank-0 cell is one piece);
///  - piece i is one reduction among one representative per group, in
///    group order: in group g, replica number (s_g + i) mod r_g, where s_g
///    is the number of the replica that had sent the fewest bytes when the
///    cell was reached (then the lowest id). The bytes sent so far count
///    every earlier piece's ring and transfer, in the walk's order: cells
///    row-major (last dimension fastest), pieces in order, all reductions
///    before the transfers (by target device in `to`'s device order, then
///    cell, then piece); the plan is deterministic;
///  - adjacent pieces (of one cell or of neighbouring cells) with the same
///    representatives merge into one box (one reduction);
///  - every device that needs a piece under `to` and is not one of its
///    representatives receives it from its own group's representative of
///    the piece, or, for a device of no group of `from`, from the one of
///    its representatives that has sent the fewest bytes so far (then the
///    lowest id).
/// So a group's r_g replicas that need a cell each reduce about 1/P of it
/// and receive the rest from each other (with P = r_g, each sends its
/// pieces to the r_g - 1 others), no device receives a piece it reduced,
/// and a cell held once per group is one piece, as a plain all-reduce.
/// `sent`, `received` and `totalBytes` are those of the final reductions
/// (getRingAllReduceBytes per box) and transfers. InvalidArgument as for
/// planTransfers, or when `to` holds partial sums, or a group of a partial
/// `from` holds partial sums inside the group.
absl::StatusOr<ExchangePlan> planExchange(const Layout &from, const Layout &to,
                                          const std::vector<int64_t> &shape,
                                          int64_t elementBytes,
                                          int64_t maxCells = 1 << 20);

} // namespace loom::layout

#endif // LOOM_RUNTIME_LAYOUT_TRANSFERS_H
