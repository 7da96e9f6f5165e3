//===- HSPMDTransfers.cpp - Send/recv plans between layouts ---------------===//

#include "dialects/hspmd/IR/HSPMDTransfers.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cassert>
#include <tuple>

using namespace mlir;
using namespace loom::hspmd;

namespace {

using DeviceShards = SmallVector<std::pair<int64_t, Shard>>;
/// A box of the global tensor as [lo, hi) per dimension.
using Box = std::pair<SmallVector<int64_t>, SmallVector<int64_t>>;

/// Whether `shard` (offsets, sizes) contains the box [lo, hi).
bool contains(const Shard &shard, ArrayRef<int64_t> lo, ArrayRef<int64_t> hi) {
  for (size_t d = 0; d < lo.size(); ++d)
    if (lo[d] < shard.offsets[d] || hi[d] > shard.offsets[d] + shard.sizes[d])
      return false;
  return true;
}

/// The bytes `device` has sent so far according to `sent` (0 when absent).
int64_t bytesOf(const std::map<int64_t, int64_t> &sent, int64_t device) {
  auto it = sent.find(device);
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
FailureOr<DeviceShards> shardsOf(UnionAttr layout, ArrayRef<int64_t> shape,
                                 StringRef role, std::string &why) {
  DeviceShards shards;
  for (int64_t device : layout.getAllDevices()) {
    std::optional<Shard> shard = getShard(layout, shape, device);
    if (!shard) {
      why = (role + " layout does not fit the shape").str();
      return failure();
    }
    shards.push_back({device, *shard});
  }
  return shards;
}

/// Fails with `why` (ending in `advice`) when a device of `shards` holds
/// partial sums.
LogicalResult refusePartials(const DeviceShards &shards, StringRef role,
                             StringRef advice, std::string &why) {
  for (auto &[device, shard] : shards)
    if (shard.numPartials > 1) {
      why = (role + " layout holds partial sums on device " +
             std::to_string(device) + "; " + advice)
                .str();
      return failure();
    }
  return success();
}

LogicalResult checkStaticShape(ArrayRef<int64_t> shape, std::string &why) {
  for (int64_t size : shape)
    if (size < 0) {
      why = "a send/recv plan needs a static shape";
      return failure();
    }
  return success();
}

/// The common refinement of the blocks of `lists`: every block boundary,
/// per dimension, sorted and unique (0 and the size included).
SmallVector<SmallVector<int64_t>>
getCommonCuts(ArrayRef<int64_t> shape,
              std::initializer_list<const DeviceShards *> lists) {
  int64_t rank = static_cast<int64_t>(shape.size());
  SmallVector<SmallVector<int64_t>> cuts(rank);
  for (int64_t d = 0; d < rank; ++d) {
    cuts[d] = {0, shape[d]};
    for (const DeviceShards *list : lists)
      for (auto &[device, shard] : *list) {
        cuts[d].push_back(shard.offsets[d]);
        cuts[d].push_back(shard.offsets[d] + shard.sizes[d]);
      }
    llvm::sort(cuts[d]);
    cuts[d].erase(std::unique(cuts[d].begin(), cuts[d].end()), cuts[d].end());
  }
  return cuts;
}

/// Calls `fn(lo, hi, index, elements)` for every cell of the refinement
/// `cuts` inside the box at `offsets` of `sizes`, the last dimension
/// fastest; `index` is the cell's position in the refinement's grid, per
/// dimension. Counts the cells into `visited` first and fails with `why`
/// when that passes `maxCells`; stops at the first failing `fn`.
LogicalResult
forEachCell(ArrayRef<SmallVector<int64_t>> cuts, ArrayRef<int64_t> offsets,
            ArrayRef<int64_t> sizes, int64_t &visited, int64_t maxCells,
            std::string &why,
            function_ref<LogicalResult(ArrayRef<int64_t>, ArrayRef<int64_t>,
                                       ArrayRef<int64_t>, int64_t)>
                fn) {
  int64_t rank = static_cast<int64_t>(cuts.size());
  SmallVector<int64_t> first(rank), last(rank);
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    first[d] = llvm::lower_bound(cuts[d], offsets[d]) - cuts[d].begin();
    last[d] =
        llvm::lower_bound(cuts[d], offsets[d] + sizes[d]) - cuts[d].begin();
    // Saturates: one count past the limit is as good as any larger one.
    count = std::min(count * (last[d] - first[d]), maxCells + 1);
  }
  visited = std::min(visited + count, maxCells + 1);
  if (visited > maxCells) {
    why = "the refinement of the two layouts' blocks has more than " +
          std::to_string(maxCells) + " cells";
    return failure();
  }
  SmallVector<int64_t> index(first);
  SmallVector<int64_t> lo(rank), hi(rank);
  for (int64_t cell = 0; cell < count; ++cell) {
    int64_t elements = 1;
    for (int64_t d = 0; d < rank; ++d) {
      lo[d] = cuts[d][index[d]];
      hi[d] = cuts[d][index[d] + 1];
      elements *= hi[d] - lo[d];
    }
    if (failed(fn(lo, hi, index, elements)))
      return failure();
    // Next cell, last dimension fastest.
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < last[d])
        break;
      index[d] = first[d];
    }
  }
  return success();
}

/// Merges adjacent boxes: two boxes that agree in every dimension but one,
/// where they touch, become one, until no two do.
void mergeBoxes(SmallVector<Box> &boxes) {
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
            differing = d;
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

int64_t getNumElements(const Box &box) {
  int64_t elements = 1;
  for (auto [lo, hi] : llvm::zip_equal(box.first, box.second))
    elements *= hi - lo;
  return elements;
}

/// The transfers of the cells per (source, destination), merged into boxes,
/// in the order of TransferPlan::transfers.
SmallVector<Transfer>
buildTransfers(std::map<std::pair<int64_t, int64_t>, SmallVector<Box>> &cells,
               int64_t elementBytes) {
  SmallVector<Transfer> transfers;
  for (auto &[pair, boxes] : cells) {
    mergeBoxes(boxes);
    for (Box &box : boxes) {
      Transfer transfer;
      transfer.source = pair.first;
      transfer.destination = pair.second;
      transfer.bytes = getNumElements(box) * elementBytes;
      transfer.offsets = box.first;
      for (auto [lo, hi] : llvm::zip_equal(box.first, box.second))
        transfer.sizes.push_back(hi - lo);
      transfers.push_back(std::move(transfer));
    }
  }
  llvm::sort(transfers, [](const Transfer &a, const Transfer &b) {
    return std::tie(a.destination, a.source, a.offsets) <
           std::tie(b.destination, b.source, b.offsets);
  });
  return transfers;
}

/// Fails with `why` unless `from`, a union partial across its groups, can be
/// reduced by an exchange: a sum, complete inside every group.
LogicalResult checkReducibleSource(UnionAttr from, std::string &why) {
  if (from.getReduction() != ReductionKind::Sum) {
    why = ("the source layout is partial(" +
           stringifyReductionKind(from.getReduction()) +
           ") across groups; an exchange reduces only partial(sum)")
              .str();
    return failure();
  }
  for (auto [member, states] : llvm::enumerate(from.getStates()))
    if (states.getPartialDegree() > 1) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "group " << member << " of the partial(sum) source layout holds "
         << "partial sums inside the group (" << states
         << "); reduce them inside the group before an exchange";
      why = os.str();
      return failure();
    }
  return success();
}

} // namespace

FailureOr<TransferPlan> loom::hspmd::planTransfers(UnionAttr from, UnionAttr to,
                                                   ArrayRef<int64_t> shape,
                                                   int64_t elementBytes,
                                                   std::string &why,
                                                   int64_t maxCells) {
  if (failed(checkStaticShape(shape, why)))
    return failure();
  constexpr StringLiteral advice =
      "reduce them (collectives) before a send/recv plan";
  FailureOr<DeviceShards> sources = shardsOf(from, shape, "the source", why);
  if (failed(sources) ||
      failed(refusePartials(*sources, "the source", advice, why)))
    return failure();
  FailureOr<DeviceShards> destinations = shardsOf(to, shape, "the target", why);
  if (failed(destinations) ||
      failed(refusePartials(*destinations, "the target", advice, why)))
    return failure();
  SmallVector<SmallVector<int64_t>> cuts =
      getCommonCuts(shape, {&*sources, &*destinations});

  TransferPlan plan;
  // Cells per (source, destination).
  std::map<std::pair<int64_t, int64_t>, SmallVector<Box>> cells;
  int64_t visited = 0;
  for (auto &entry : *destinations) {
    // A named copy: lambdas cannot capture structured bindings in C++17.
    int64_t destination = entry.first;
    const Shard &block = entry.second;
    if (block.getNumElements() == 0)
      continue;
    const Shard *own = nullptr;
    for (auto &[device, shard] : *sources)
      if (device == destination)
        own = &shard;
    LogicalResult walked = forEachCell(
        cuts, block.offsets, block.sizes, visited, maxCells, why,
        [&](ArrayRef<int64_t> lo, ArrayRef<int64_t> hi, ArrayRef<int64_t>,
            int64_t elements) -> LogicalResult {
          if (own && contains(*own, lo, hi))
            return success();
          int64_t bytes = elements * elementBytes;
          std::optional<int64_t> sender;
          for (auto &[device, shard] : *sources)
            if (contains(shard, lo, hi))
              offerLeastLoaded(sender, device, plan.sent);
          if (!sender) {
            why = "no source device holds a piece the target needs (the "
                  "source layout does not cover the tensor)";
            return failure();
          }
          plan.sent[*sender] += bytes;
          plan.received[destination] += bytes;
          plan.totalBytes += bytes;
          cells[{*sender, destination}].push_back(
              {SmallVector<int64_t>(lo), SmallVector<int64_t>(hi)});
          return success();
        });
    if (failed(walked))
      return failure();
  }
  plan.transfers = buildTransfers(cells, elementBytes);
  return plan;
}

int64_t loom::hspmd::getRingAllReduceBytes(int64_t elements, int64_t k,
                                           int64_t position,
                                           int64_t elementBytes) {
  assert(position >= 0 && position < std::max<int64_t>(k, 1) &&
         "position outside the ring");
  if (k <= 1)
    return 0;
  int64_t own = elements / k + (position < elements % k ? 1 : 0);
  // Every other chunk once (reduce-scatter), its own k - 1 times
  // (all-gather).
  return ((elements - own) + (k - 1) * own) * elementBytes;
}

FailureOr<ExchangePlan> loom::hspmd::planExchange(UnionAttr from, UnionAttr to,
                                                  ArrayRef<int64_t> shape,
                                                  int64_t elementBytes,
                                                  std::string &why,
                                                  int64_t maxCells) {
  if (failed(checkStaticShape(shape, why)))
    return failure();
  FailureOr<DeviceShards> destinations = shardsOf(to, shape, "the target", why);
  if (failed(destinations) ||
      failed(refusePartials(*destinations, "the target",
                            "an exchange must produce complete values", why)))
    return failure();

  ExchangePlan plan;
  // Complete values (or partial sums inside a single group, which
  // planTransfers refuses): a send/recv plan.
  if (from.getRelation() != UnionRelation::Partial ||
      from.getNumGroups() == 1) {
    FailureOr<TransferPlan> transfers =
        planTransfers(from, to, shape, elementBytes, why, maxCells);
    if (failed(transfers))
      return failure();
    plan.transfers = std::move(transfers->transfers);
    plan.sent = std::move(transfers->sent);
    plan.received = std::move(transfers->received);
    plan.totalBytes = transfers->totalBytes;
    return plan;
  }

  if (failed(checkReducibleSource(from, why)))
    return failure();
  FailureOr<DeviceShards> sources = shardsOf(from, shape, "the source", why);
  if (failed(sources))
    return failure();
  SmallVector<SmallVector<int64_t>> cuts =
      getCommonCuts(shape, {&*sources, &*destinations});
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t numGroups = from.getNumGroups();
  SmallVector<DeviceShards> groupShards(numGroups);
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
  // representative per group (the hierarchical all-reduce: a group's
  // replicas of the cell share its reduction). `cellPieces` maps a cell,
  // by its linear position in the grid, to its cut (dimension and number
  // of pieces) and its pieces' lists of representatives in `repLists`,
  // from `pieceReps[first]` on.
  struct CellPieces {
    int64_t first = 0;
    int32_t dim = -1;
    int32_t count = 1;
  };
  SmallVector<SmallVector<int64_t>> repLists;
  std::map<SmallVector<int64_t>, int32_t> repListIds;
  SmallVector<SmallVector<Box>> reducedBoxes;
  std::vector<CellPieces> cellPieces;
  std::vector<int32_t> pieceReps;
  auto linearIndex = [&](ArrayRef<int64_t> index) {
    int64_t linear = 0;
    for (int64_t d = 0; d < rank; ++d)
      linear = linear * (static_cast<int64_t>(cuts[d].size()) - 1) + index[d];
    return linear;
  };
  // Piece `i` of the cell [lo, hi) cut as `cut`: near-equal along its
  // dimension, the first (extent mod count) one element larger.
  auto getPiece = [](ArrayRef<int64_t> lo, ArrayRef<int64_t> hi,
                     const CellPieces &cut, int64_t i) {
    Box piece{SmallVector<int64_t>(lo), SmallVector<int64_t>(hi)};
    if (cut.dim < 0)
      return piece;
    int64_t extent = hi[cut.dim] - lo[cut.dim];
    int64_t base = extent / cut.count, extra = extent % cut.count;
    piece.first[cut.dim] = lo[cut.dim] + i * base + std::min(i, extra);
    piece.second[cut.dim] =
        piece.first[cut.dim] + base + (i < extra ? 1 : 0);
    return piece;
  };
  int64_t visited = 0;
  LogicalResult walked = forEachCell(
      cuts, SmallVector<int64_t>(rank, 0), shape, visited, maxCells, why,
      [&](ArrayRef<int64_t> lo, ArrayRef<int64_t> hi, ArrayRef<int64_t> index,
          int64_t) -> LogicalResult {
        // Per group, the replicas that share the cell's reduction: those
        // that hold it and need it, else all that hold it; by id, and the
        // position of the least loaded (then lowest id) to start with.
        SmallVector<SmallVector<int64_t>> replicas(numGroups);
        SmallVector<int64_t> starts(numGroups, 0);
        int64_t count = 1;
        for (auto [member, shards] : llvm::enumerate(groupShards)) {
          SmallVector<int64_t> holders, needers;
          for (auto &[device, shard] : shards) {
            if (!contains(shard, lo, hi))
              continue;
            holders.push_back(device);
            auto target = targetOf.find(device);
            if (target != targetOf.end() &&
                contains(*target->second, lo, hi))
              needers.push_back(device);
          }
          if (holders.empty()) {
            why = "no device of group " + std::to_string(member) +
                  " of the source layout holds a piece of the tensor";
            return failure();
          }
          SmallVector<int64_t> &chosen = replicas[member];
          chosen = needers.empty() ? holders : needers;
          llvm::sort(chosen);
          std::optional<int64_t> first;
          for (int64_t device : chosen)
            offerLeastLoaded(first, device, load);
          starts[member] = llvm::find(chosen, *first) - chosen.begin();
          count = std::max<int64_t>(count, chosen.size());
        }
        // Cut along the largest dimension (the first of equal ones), into
        // at most as many pieces as it has elements.
        CellPieces cut;
        cut.first = static_cast<int64_t>(pieceReps.size());
        for (int64_t d = 0; d < rank; ++d)
          if (cut.dim < 0 || hi[d] - lo[d] > hi[cut.dim] - lo[cut.dim])
            cut.dim = d;
        // A 0-d cell is one element: one piece.
        count = cut.dim >= 0 ? std::min(count, hi[cut.dim] - lo[cut.dim])
                             : 1;
        cut.count = static_cast<int32_t>(count);
        for (int64_t i = 0; i < count; ++i) {
          Box piece = getPiece(lo, hi, cut, i);
          int64_t elements = getNumElements(piece);
          SmallVector<int64_t> reps;
          for (auto [member, chosen] : llvm::enumerate(replicas))
            reps.push_back(chosen[(starts[member] + i) % chosen.size()]);
          for (auto [position, device] : llvm::enumerate(reps))
            load[device] += getRingAllReduceBytes(elements, numGroups,
                                                  position, elementBytes);
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
        cellPieces.push_back(cut);
        return success();
      });
  if (failed(walked))
    return failure();

  // Every device that needs a piece and is not among its representatives
  // receives it from one: its own group's, else the least loaded.
  std::map<std::pair<int64_t, int64_t>, SmallVector<Box>> cells;
  for (auto &entry : *destinations) {
    // A named copy: lambdas cannot capture structured bindings in C++17.
    int64_t destination = entry.first;
    const Shard &block = entry.second;
    if (block.getNumElements() == 0)
      continue;
    int64_t member = from.getMemberOf(destination);
    walked = forEachCell(
        cuts, block.offsets, block.sizes, visited, maxCells, why,
        [&](ArrayRef<int64_t> lo, ArrayRef<int64_t> hi, ArrayRef<int64_t> index,
            int64_t) -> LogicalResult {
          const CellPieces &cut = cellPieces[linearIndex(index)];
          for (int64_t i = 0; i < cut.count; ++i) {
            ArrayRef<int64_t> reps = repLists[pieceReps[cut.first + i]];
            if (llvm::is_contained(reps, destination))
              continue;
            std::optional<int64_t> sender;
            if (member >= 0)
              sender = reps[member];
            else
              for (int64_t device : reps)
                offerLeastLoaded(sender, device, load);
            Box piece = getPiece(lo, hi, cut, i);
            load[*sender] += getNumElements(piece) * elementBytes;
            cells[{*sender, destination}].push_back(std::move(piece));
          }
          return success();
        });
    if (failed(walked))
      return failure();
  }

  // Merge the cells of one list of representatives into boxes.
  for (auto [reps, boxes] : llvm::zip_equal(repLists, reducedBoxes)) {
    mergeBoxes(boxes);
    for (Box &box : boxes) {
      Reduction reduction;
      reduction.offsets = box.first;
      for (auto [lo, hi] : llvm::zip_equal(box.first, box.second))
        reduction.sizes.push_back(hi - lo);
      reduction.devices = reps;
      int64_t elements = getNumElements(box);
      for (auto [position, device] : llvm::enumerate(reps)) {
        int64_t bytes =
            getRingAllReduceBytes(elements, numGroups, position, elementBytes);
        plan.sent[device] += bytes;
        plan.received[device] += bytes;
      }
      plan.reductions.push_back(std::move(reduction));
    }
  }
  llvm::sort(plan.reductions, [](const Reduction &a, const Reduction &b) {
    return std::tie(a.offsets, a.devices) < std::tie(b.offsets, b.devices);
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
