//===- Transfers.cpp - Send/recv plans between layouts --------------------===//

#include "runtime/layout/Transfers.h"

#include <algorithm>
#include <cassert>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

using namespace loom::layout;

namespace {

using DeviceShards = std::vector<std::pair<int64_t, Shard>>;
using Ints = std::vector<int64_t>;
/// A box of the global tensor as [lo, hi) per dimension.
using Span = std::pair<Ints, Ints>;

absl::Status invalid(const std::string &message) {
  return absl::InvalidArgumentError(message);
}

/// Whether `shard` (offsets, sizes) contains the box [lo, hi).
bool contains(const Shard &shard, const Ints &lo, const Ints &hi) {
  for (size_t d = 0; d < lo.size(); ++d)
    if (lo[d] < shard.offsets[d] || hi[d] > shard.offsets[d] + shard.sizes[d])
      return false;
  return true;
}

/// The bytes `key` (a device, a link) has sent so far according to `sent`
/// (0 when absent).
template <typename Key>
int64_t bytesOf(const std::map<Key, int64_t> &sent, const Key &key) {
  auto it = sent.find(key);
  return it == sent.end() ? 0 : it->second;
}

/// Keeps in `best` the less loaded of itself and `device`: the one that has
/// sent fewer bytes, then the lower id.
void offerLeastLoaded(std::optional<int64_t> &best, int64_t device,
                      const std::map<int64_t, int64_t> &sent) {
  if (!best || std::make_pair(bytesOf(sent, device), device) <
                   std::make_pair(bytesOf(sent, *best), *best))
    best = device;
}

/// The shards of every device of `layout`, in member order.
absl::StatusOr<DeviceShards> shardsOf(const Layout &layout, const Ints &shape,
                                      const std::string &role) {
  DeviceShards shards;
  for (int64_t device : layout.getDevices()) {
    absl::StatusOr<Shard> shard = getShard(layout, shape, device);
    if (!shard.ok())
      return invalid(role + " layout does not fit the shape");
    shards.push_back({device, *std::move(shard)});
  }
  return shards;
}

/// InvalidArgument (ending in `advice`) when a device of `shards` holds
/// partial sums.
absl::Status refusePartials(const DeviceShards &shards, const std::string &role,
                            const std::string &advice) {
  for (auto &[device, shard] : shards)
    if (shard.numPartials > 1)
      return invalid(role + " layout holds partial sums on device " +
                     std::to_string(device) + "; " + advice);
  return absl::OkStatus();
}

absl::Status checkStaticShape(const Ints &shape) {
  for (int64_t size : shape)
    if (size < 0)
      return invalid("a send/recv plan needs a static shape");
  return absl::OkStatus();
}

/// The common refinement of the blocks of `lists`: every block boundary,
/// per dimension, sorted and unique (0 and the size included).
std::vector<Ints> getCommonCuts(const Ints &shape,
                                std::initializer_list<const DeviceShards *> lists) {
  size_t rank = shape.size();
  std::vector<Ints> cuts(rank);
  for (size_t d = 0; d < rank; ++d) {
    cuts[d] = {0, shape[d]};
    for (const DeviceShards *list : lists)
      for (auto &[device, shard] : *list) {
        cuts[d].push_back(shard.offsets[d]);
        cuts[d].push_back(shard.offsets[d] + shard.sizes[d]);
      }
    std::sort(cuts[d].begin(), cuts[d].end());
    cuts[d].erase(std::unique(cuts[d].begin(), cuts[d].end()), cuts[d].end());
  }
  return cuts;
}

/// Calls `fn(lo, hi, index, elements)` for every cell of the refinement
/// `cuts` inside the box at `offsets` of `sizes`, the last dimension
/// fastest; `index` is the cell's position in the refinement's grid, per
/// dimension. Counts the cells into `visited` first and fails when that
/// passes `maxCells`; stops at the first failing `fn`.
template <typename Fn>
absl::Status forEachCell(const std::vector<Ints> &cuts, const Ints &offsets,
                         const Ints &sizes, int64_t &visited, int64_t maxCells,
                         Fn &&fn) {
  size_t rank = cuts.size();
  Ints first(rank), last(rank);
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    first[d] = std::lower_bound(cuts[d].begin(), cuts[d].end(), offsets[d]) -
               cuts[d].begin();
    last[d] = std::lower_bound(cuts[d].begin(), cuts[d].end(),
                               offsets[d] + sizes[d]) -
              cuts[d].begin();
    // Saturates: one count past the limit is as good as any larger one.
    count = std::min(count * (last[d] - first[d]), maxCells + 1);
  }
  visited = std::min(visited + count, maxCells + 1);
  if (visited > maxCells)
    return invalid("the refinement of the two layouts' blocks has more than " +
                   std::to_string(maxCells) + " cells");
  Ints index(first);
  Ints lo(rank), hi(rank);
  for (int64_t cell = 0; cell < count; ++cell) {
    int64_t elements = 1;
    for (size_t d = 0; d < rank; ++d) {
      lo[d] = cuts[d][index[d]];
      hi[d] = cuts[d][index[d] + 1];
      elements *= hi[d] - lo[d];
    }
    if (absl::Status status = fn(lo, hi, index, elements); !status.ok())
      return status;
    // Next cell, last dimension fastest.
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < last[d])
        break;
      index[d] = first[d];
    }
  }
  return absl::OkStatus();
}

/// Merges adjacent boxes: two boxes that agree in every dimension but one,
/// where they touch, become one, until no two do.
void mergeBoxes(std::vector<Span> &boxes) {
  // Merging is quadratic in the boxes; many boxes stay cells.
  constexpr size_t kMaxMergedBoxes = 1024;
  bool merged = boxes.size() <= kMaxMergedBoxes;
  while (merged) {
    merged = false;
    for (size_t i = 0; i < boxes.size() && !merged; ++i)
      for (size_t j = i + 1; j < boxes.size() && !merged; ++j) {
        auto &[loA, hiA] = boxes[i];
        auto &[loB, hiB] = boxes[j];
        int64_t differing = -1, count = 0;
        for (size_t d = 0; d < loA.size(); ++d)
          if (loA[d] != loB[d] || hiA[d] != hiB[d]) {
            differing = static_cast<int64_t>(d);
            ++count;
          }
        if (count != 1 || (hiA[differing] != loB[differing] &&
                           hiB[differing] != loA[differing]))
          continue;
        loA[differing] = std::min(loA[differing], loB[differing]);
        hiA[differing] = std::max(hiA[differing], hiB[differing]);
        boxes.erase(boxes.begin() + j);
        merged = true;
      }
  }
}

int64_t elementsOf(const Span &box) {
  int64_t elements = 1;
  for (size_t d = 0; d < box.first.size(); ++d)
    elements *= box.second[d] - box.first[d];
  return elements;
}

Ints sizesOf(const Span &box) {
  Ints sizes;
  for (size_t d = 0; d < box.first.size(); ++d)
    sizes.push_back(box.second[d] - box.first[d]);
  return sizes;
}

/// The transfers of the cells per (source, destination), merged into boxes,
/// in the order of TransferPlan::transfers.
std::vector<Transfer>
buildTransfers(std::map<std::pair<int64_t, int64_t>, std::vector<Span>> &cells,
               int64_t elementBytes) {
  std::vector<Transfer> transfers;
  for (auto &[pair, boxes] : cells) {
    mergeBoxes(boxes);
    for (Span &box : boxes) {
      Transfer transfer;
      transfer.source = pair.first;
      transfer.destination = pair.second;
      transfer.bytes = elementsOf(box) * elementBytes;
      transfer.offsets = box.first;
      transfer.sizes = sizesOf(box);
      transfers.push_back(std::move(transfer));
    }
  }
  std::sort(transfers.begin(), transfers.end(),
            [](const Transfer &a, const Transfer &b) {
              return std::tie(a.destination, a.source, a.offsets) <
                     std::tie(b.destination, b.source, b.offsets);
            });
  return transfers;
}

/// InvalidArgument unless `from`, a union partial across its groups, can
/// be reduced by an exchange: a sum, complete inside every group.
absl::Status checkReducibleSource(const Layout &from) {
  if (from.reduction != Reduction::Sum)
    return invalid(std::string("the source layout is partial(") +
                   getName(from.reduction) +
                   ") across groups; an exchange reduces only partial(sum)");
  for (size_t member = 0; member < from.members.size(); ++member) {
    const States &states = from.members[member].states;
    if (states.getPartialDegree() > 1)
      return invalid("group " + std::to_string(member) +
                     " of the partial(sum) source layout holds partial sums "
                     "inside the group (#hspmd.states<" +
                     states.str() +
                     ">); reduce them inside the group before an exchange");
  }
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<TransferPlan>
loom::layout::planTransfers(const Layout &from, const Layout &to,
                            const std::vector<int64_t> &shape,
                            int64_t elementBytes, int64_t maxCells,
                            const SenderChoice &choice) {
  if (absl::Status status = checkStaticShape(shape); !status.ok())
    return status;
  const std::string advice = "reduce them (collectives) before a send/recv plan";
  absl::StatusOr<DeviceShards> sources = shardsOf(from, shape, "the source");
  if (!sources.ok())
    return sources.status();
  if (absl::Status status = refusePartials(*sources, "the source", advice);
      !status.ok())
    return status;
  absl::StatusOr<DeviceShards> destinations = shardsOf(to, shape, "the target");
  if (!destinations.ok())
    return destinations.status();
  if (absl::Status status =
          refusePartials(*destinations, "the target", advice);
      !status.ok())
    return status;
  std::vector<Ints> cuts = getCommonCuts(shape, {&*sources, &*destinations});

  TransferPlan plan;
  auto nodeOf = [&](int64_t device) -> int64_t {
    if (!choice.nodeOf)
      return 0;
    auto it = choice.nodeOf->find(device);
    return it == choice.nodeOf->end() ? 0 : it->second;
  };
  const std::map<int64_t, int64_t> &deviceLoad =
      choice.deviceLoad ? *choice.deviceLoad : plan.sent;
  std::map<std::pair<int64_t, int64_t>, int64_t> ownLinkLoad;
  std::map<std::pair<int64_t, int64_t>, int64_t> &linkLoad =
      choice.linkLoad ? *choice.linkLoad : ownLinkLoad;
  // Cells per (source, destination).
  std::map<std::pair<int64_t, int64_t>, std::vector<Span>> cells;
  int64_t visited = 0;
  for (auto &entry : *destinations) {
    int64_t destination = entry.first;
    const Shard &block = entry.second;
    if (block.getNumElements() == 0)
      continue;
    const Shard *own = nullptr;
    for (auto &[device, shard] : *sources)
      if (device == destination)
        own = &shard;
    absl::Status walked = forEachCell(
        cuts, block.offsets, block.sizes, visited, maxCells,
        [&](const Ints &lo, const Ints &hi, const Ints &,
            int64_t elements) -> absl::Status {
          if (own && contains(*own, lo, hi))
            return absl::OkStatus();
          int64_t bytes = elements * elementBytes;
          int64_t home = nodeOf(destination);
          // The holders, and what that forces on every plan.
          Ints holders;
          bool homeHolds = false;
          std::optional<int64_t> onlyNode;
          bool oneNode = true;
          for (auto &[device, shard] : *sources) {
            if (!contains(shard, lo, hi))
              continue;
            holders.push_back(device);
            int64_t node = nodeOf(device);
            homeHolds |= node == home;
            if (onlyNode && *onlyNode != node)
              oneNode = false;
            onlyNode = node;
          }
          if (holders.empty())
            return invalid("no source device holds a piece the target needs "
                           "(the source layout does not cover the tensor)");
          if (holders.size() == 1)
            plan.forcedSent[holders.front()] += bytes;
          if (!homeHolds) {
            plan.crossNodeIn[home] += bytes;
            if (oneNode)
              plan.forcedLink[{*onlyNode, home}] += bytes;
          }
          // The sender: on the destination's node if one holds the piece,
          // else over the least loaded link; then the least loaded device.
          std::optional<int64_t> sender;
          std::tuple<int64_t, int64_t, int64_t, int64_t> best;
          for (int64_t device : holders) {
            int64_t node = nodeOf(device);
            bool cross = node != home;
            std::tuple<int64_t, int64_t, int64_t, int64_t> key{
                cross, cross ? bytesOf(linkLoad, std::make_pair(node, home)) : 0,
                bytesOf(deviceLoad, device), device};
            if (!sender || key < best) {
              sender = device;
              best = key;
            }
          }
          plan.sent[*sender] += bytes;
          if (choice.deviceLoad)
            (*choice.deviceLoad)[*sender] += bytes;
          if (nodeOf(*sender) != home)
            linkLoad[{nodeOf(*sender), home}] += bytes;
          plan.received[destination] += bytes;
          plan.totalBytes += bytes;
          cells[{*sender, destination}].push_back({lo, hi});
          return absl::OkStatus();
        });
    if (!walked.ok())
      return walked;
  }
  plan.transfers = buildTransfers(cells, elementBytes);
  return plan;
}

int64_t loom::layout::getRingAllReduceBytes(int64_t elements, int64_t k,
                                            int64_t position,
                                            int64_t elementBytes) {
  assert(position >= 0 && position < std::max<int64_t>(k, 1) &&
         "position outside the ring");
  if (k <= 1)
    return 0;
  // Every other chunk once (reduce-scatter), its own k - 1 times
  // (all-gather): what Collectives.h says an all-reduce moves.
  return getTraffic(Collective::AllReduce, elements * elementBytes,
                    elementBytes, k, position)
      .sent;
}

absl::StatusOr<ExchangePlan>
loom::layout::planExchange(const Layout &from, const Layout &to,
                           const std::vector<int64_t> &shape,
                           int64_t elementBytes, int64_t maxCells) {
  if (absl::Status status = checkStaticShape(shape); !status.ok())
    return status;
  absl::StatusOr<DeviceShards> destinations = shardsOf(to, shape, "the target");
  if (!destinations.ok())
    return destinations.status();
  if (absl::Status status =
          refusePartials(*destinations, "the target",
                         "an exchange must produce complete values");
      !status.ok())
    return status;

  ExchangePlan plan;
  // Complete values (or partial sums inside a single group, which
  // planTransfers refuses): a send/recv plan.
  if (from.relation != Relation::Partial || from.members.size() == 1) {
    absl::StatusOr<TransferPlan> transfers =
        planTransfers(from, to, shape, elementBytes, maxCells);
    if (!transfers.ok())
      return transfers.status();
    plan.transfers = std::move(transfers->transfers);
    plan.sent = std::move(transfers->sent);
    plan.received = std::move(transfers->received);
    plan.totalBytes = transfers->totalBytes;
    return plan;
  }

  if (absl::Status status = checkReducibleSource(from); !status.ok())
    return status;
  absl::StatusOr<DeviceShards> sources = shardsOf(from, shape, "the source");
  if (!sources.ok())
    return sources.status();
  std::vector<Ints> cuts = getCommonCuts(shape, {&*sources, &*destinations});
  size_t rank = shape.size();
  int64_t numGroups = static_cast<int64_t>(from.members.size());
  std::vector<DeviceShards> groupShards(numGroups);
  for (auto &[device, shard] : *sources)
    groupShards[from.getMemberOf(device)].push_back({device, shard});

  // Who needs a cell: the target block of every device.
  std::map<int64_t, const Shard *> targetOf;
  for (auto &[device, shard] : *destinations)
    targetOf[device] = &shard;

  // The bytes each device sends as the cells are visited, to balance the
  // choice of representatives and senders. Merging pieces into boxes can
  // change a reduction's bytes by rounding of its chunks, so the plan's
  // counts are taken from the final reductions and transfers.
  std::map<int64_t, int64_t> load;

  // Every cell of the refinement (a target layout covers the tensor, so
  // some device needs each) is cut into pieces, each reduced among one
  // representative per group. `cellPieces` maps a cell, by its linear
  // position in the grid, to its cut (dimension and number of pieces) and
  // its pieces' lists of representatives in `repLists`, from
  // `pieceReps[first]` on.
  struct CellPieces {
    int64_t first = 0;
    int32_t dim = -1;
    int32_t count = 1;
  };
  std::vector<Ints> repLists;
  std::map<Ints, int32_t> repListIds;
  std::vector<std::vector<Span>> reducedBoxes;
  std::vector<CellPieces> cellPieces;
  std::vector<int32_t> pieceReps;
  auto linearIndex = [&](const Ints &index) {
    int64_t linear = 0;
    for (size_t d = 0; d < rank; ++d)
      linear = linear * (static_cast<int64_t>(cuts[d].size()) - 1) + index[d];
    return linear;
  };
  // Piece `i` of the cell [lo, hi) cut as `cut`: near-equal along its
  // dimension, the first (extent mod count) one element larger.
  auto getPiece = [](const Ints &lo, const Ints &hi, const CellPieces &cut,
                     int64_t i) {
    Span piece{lo, hi};
    if (cut.dim < 0)
      return piece;
    int64_t extent = hi[cut.dim] - lo[cut.dim];
    int64_t base = extent / cut.count, extra = extent % cut.count;
    piece.first[cut.dim] = lo[cut.dim] + i * base + std::min(i, extra);
    piece.second[cut.dim] = piece.first[cut.dim] + base + (i < extra ? 1 : 0);
    return piece;
  };
  int64_t visited = 0;
  absl::Status walked = forEachCell(
      cuts, Ints(rank, 0), shape, visited, maxCells,
      [&](const Ints &lo, const Ints &hi, const Ints &index,
          int64_t) -> absl::Status {
        // Per group, the replicas that share the cell's reduction: those
        // that hold it and need it, else all that hold it; by id, and the
        // position of the least loaded (then lowest id) to start with.
        std::vector<Ints> replicas(numGroups);
        Ints starts(numGroups, 0);
        int64_t count = 1;
        for (int64_t member = 0; member < numGroups; ++member) {
          Ints holders, needers;
          for (auto &[device, shard] : groupShards[member]) {
            if (!contains(shard, lo, hi))
              continue;
            holders.push_back(device);
            auto target = targetOf.find(device);
            if (target != targetOf.end() && contains(*target->second, lo, hi))
              needers.push_back(device);
          }
          if (holders.empty())
            return invalid("no device of group " + std::to_string(member) +
                           " of the source layout holds a piece of the "
                           "tensor");
          Ints &chosen = replicas[member];
          chosen = needers.empty() ? holders : needers;
          std::sort(chosen.begin(), chosen.end());
          std::optional<int64_t> first;
          for (int64_t device : chosen)
            offerLeastLoaded(first, device, load);
          starts[member] =
              std::find(chosen.begin(), chosen.end(), *first) - chosen.begin();
          count = std::max<int64_t>(count, chosen.size());
        }
        // Cut along the largest dimension (the first of equal ones), into
        // at most as many pieces as it has elements.
        CellPieces cut;
        cut.first = static_cast<int64_t>(pieceReps.size());
        for (size_t d = 0; d < rank; ++d)
          if (cut.dim < 0 || hi[d] - lo[d] > hi[cut.dim] - lo[cut.dim])
            cut.dim = static_cast<int32_t>(d);
        // A 0-d cell is one element: one piece.
        count = cut.dim >= 0 ? std::min(count, hi[cut.dim] - lo[cut.dim]) : 1;
        cut.count = static_cast<int32_t>(count);
        for (int64_t i = 0; i < count; ++i) {
          Span piece = getPiece(lo, hi, cut, i);
          int64_t elements = elementsOf(piece);
          Ints reps;
          for (int64_t member = 0; member < numGroups; ++member) {
            const Ints &chosen = replicas[member];
            reps.push_back(
                chosen[(starts[member] + i) % static_cast<int64_t>(chosen.size())]);
          }
          for (size_t position = 0; position < reps.size(); ++position)
            load[reps[position]] += getRingAllReduceBytes(
                elements, numGroups, static_cast<int64_t>(position),
                elementBytes);
          auto [it, inserted] =
              repListIds.insert({reps, static_cast<int32_t>(repLists.size())});
          if (inserted) {
            repLists.push_back(reps);
            reducedBoxes.emplace_back();
          }
          pieceReps.push_back(it->second);
          reducedBoxes[it->second].push_back(std::move(piece));
        }
        // The walk covers the grid in order.
        assert(linearIndex(index) == static_cast<int64_t>(cellPieces.size()));
        (void)linearIndex;
        cellPieces.push_back(cut);
        return absl::OkStatus();
      });
  if (!walked.ok())
    return walked;

  // Every device that needs a piece and is not among its representatives
  // receives it from one: its own group's, else the least loaded.
  std::map<std::pair<int64_t, int64_t>, std::vector<Span>> cells;
  for (auto &entry : *destinations) {
    int64_t destination = entry.first;
    const Shard &block = entry.second;
    if (block.getNumElements() == 0)
      continue;
    int64_t member = from.getMemberOf(destination);
    walked = forEachCell(
        cuts, block.offsets, block.sizes, visited, maxCells,
        [&](const Ints &lo, const Ints &hi, const Ints &index,
            int64_t) -> absl::Status {
          const CellPieces &cut = cellPieces[linearIndex(index)];
          for (int64_t i = 0; i < cut.count; ++i) {
            const Ints &reps = repLists[pieceReps[cut.first + i]];
            if (std::find(reps.begin(), reps.end(), destination) != reps.end())
              continue;
            std::optional<int64_t> sender;
            if (member >= 0)
              sender = reps[member];
            else
              for (int64_t device : reps)
                offerLeastLoaded(sender, device, load);
            Span piece = getPiece(lo, hi, cut, i);
            load[*sender] += elementsOf(piece) * elementBytes;
            cells[{*sender, destination}].push_back(std::move(piece));
          }
          return absl::OkStatus();
        });
    if (!walked.ok())
      return walked;
  }

  // Merge the cells of one list of representatives into boxes.
  for (size_t list = 0; list < repLists.size(); ++list) {
    const Ints &reps = repLists[list];
    std::vector<Span> &boxes = reducedBoxes[list];
    mergeBoxes(boxes);
    for (Span &box : boxes) {
      BoxReduction reduction;
      reduction.offsets = box.first;
      reduction.sizes = sizesOf(box);
      reduction.devices = reps;
      int64_t elements = elementsOf(box);
      for (size_t position = 0; position < reps.size(); ++position) {
        int64_t bytes = getRingAllReduceBytes(
            elements, numGroups, static_cast<int64_t>(position), elementBytes);
        plan.sent[reps[position]] += bytes;
        plan.received[reps[position]] += bytes;
      }
      plan.reductions.push_back(std::move(reduction));
    }
  }
  std::sort(plan.reductions.begin(), plan.reductions.end(),
            [](const BoxReduction &a, const BoxReduction &b) {
              return std::tie(a.offsets, a.devices) <
                     std::tie(b.offsets, b.devices);
            });
  plan.transfers = buildTransfers(cells, elementBytes);
  for (const Transfer &transfer : plan.transfers) {
    plan.sent[transfer.source] += transfer.bytes;
    plan.received[transfer.destination] += transfer.bytes;
  }
  for (auto &[device, bytes] : plan.sent)
    plan.totalBytes += bytes;
  return plan;
}
