//===- HSPMDTransfers.cpp - Send/recv plans between layouts ---------------===//

#include "dialects/hspmd/IR/HSPMDTransfers.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <tuple>

using namespace mlir;
using namespace loom::hspmd;

namespace {

/// Whether `shard` (offsets, sizes) contains the box [lo, hi).
bool contains(const Shard &shard, ArrayRef<int64_t> lo, ArrayRef<int64_t> hi) {
  for (size_t d = 0; d < lo.size(); ++d)
    if (lo[d] < shard.offsets[d] || hi[d] > shard.offsets[d] + shard.sizes[d])
      return false;
  return true;
}

/// The shards of every device of `layout`, failing on partial sums.
FailureOr<SmallVector<std::pair<int64_t, Shard>>>
shardsOf(UnionAttr layout, ArrayRef<int64_t> shape, StringRef role,
         std::string &why) {
  SmallVector<std::pair<int64_t, Shard>> shards;
  for (int64_t device : layout.getAllDevices()) {
    std::optional<Shard> shard = getShard(layout, shape, device);
    if (!shard) {
      why = (role + " layout does not fit the shape").str();
      return failure();
    }
    if (shard->numPartials > 1) {
      why = (role + " layout holds partial sums on device " +
             std::to_string(device) +
             "; reduce them (collectives) before a send/recv plan")
                .str();
      return failure();
    }
    shards.push_back({device, *shard});
  }
  return shards;
}

} // namespace

FailureOr<TransferPlan> loom::hspmd::planTransfers(UnionAttr from, UnionAttr to,
                                                   ArrayRef<int64_t> shape,
                                                   int64_t elementBytes,
                                                   std::string &why,
                                                   int64_t maxCells) {
  for (int64_t size : shape)
    if (size < 0) {
      why = "a send/recv plan needs a static shape";
      return failure();
    }
  FailureOr<SmallVector<std::pair<int64_t, Shard>>> sources =
      shardsOf(from, shape, "the source", why);
  if (failed(sources))
    return failure();
  FailureOr<SmallVector<std::pair<int64_t, Shard>>> destinations =
      shardsOf(to, shape, "the target", why);
  if (failed(destinations))
    return failure();

  // The common refinement: every block boundary, per dimension.
  int64_t rank = static_cast<int64_t>(shape.size());
  SmallVector<SmallVector<int64_t>> cuts(rank);
  for (int64_t d = 0; d < rank; ++d) {
    cuts[d] = {0, shape[d]};
    for (auto *list : {&*sources, &*destinations})
      for (auto &[device, shard] : *list) {
        cuts[d].push_back(shard.offsets[d]);
        cuts[d].push_back(shard.offsets[d] + shard.sizes[d]);
      }
    llvm::sort(cuts[d]);
    cuts[d].erase(std::unique(cuts[d].begin(), cuts[d].end()), cuts[d].end());
  }

  TransferPlan plan;
  // Cells per (source, destination), as [lo, hi) boxes.
  using Box = std::pair<SmallVector<int64_t>, SmallVector<int64_t>>;
  std::map<std::pair<int64_t, int64_t>, SmallVector<Box>> cells;
  int64_t visited = 0;
  for (auto &[destination, block] : *destinations) {
    if (block.getNumElements() == 0)
      continue;
    const Shard *own = nullptr;
    for (auto &[device, shard] : *sources)
      if (device == destination)
        own = &shard;
    // The refinement's cells inside the destination's block.
    SmallVector<SmallVector<int64_t>> ranges(rank);
    int64_t count = 1;
    for (int64_t d = 0; d < rank; ++d) {
      for (int64_t cut : cuts[d])
        if (cut >= block.offsets[d] && cut <= block.offsets[d] + block.sizes[d])
          ranges[d].push_back(cut);
      count *= static_cast<int64_t>(ranges[d].size()) - 1;
    }
    visited += count;
    if (visited > maxCells) {
      why = "the refinement of the two layouts' blocks has more than " +
            std::to_string(maxCells) + " cells";
      return failure();
    }
    SmallVector<int64_t> index(rank, 0);
    for (int64_t cell = 0; cell < count; ++cell) {
      SmallVector<int64_t> lo(rank), hi(rank);
      int64_t elements = 1;
      for (int64_t d = 0; d < rank; ++d) {
        lo[d] = ranges[d][index[d]];
        hi[d] = ranges[d][index[d] + 1];
        elements *= hi[d] - lo[d];
      }
      // Next cell, last dimension fastest.
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++index[d] + 1 < static_cast<int64_t>(ranges[d].size()))
          break;
        index[d] = 0;
      }
      if (own && contains(*own, lo, hi))
        continue;
      int64_t bytes = elements * elementBytes;
      // The holder that has sent the least so far, then the lowest id.
      std::optional<int64_t> sender;
      for (auto &[device, shard] : *sources) {
        if (!contains(shard, lo, hi))
          continue;
        if (!sender || std::make_pair(plan.sent[device], device) <
                           std::make_pair(plan.sent[*sender], *sender))
          sender = device;
      }
      if (!sender) {
        why = "no source device holds a piece the target needs (the source "
              "layout does not cover the tensor)";
        return failure();
      }
      plan.sent[*sender] += bytes;
      plan.received[destination] += bytes;
      plan.totalBytes += bytes;
      cells[{*sender, destination}].push_back({lo, hi});
    }
  }

  // Merge adjacent boxes of one pair: two boxes that agree in every
  // dimension but one, where they touch, become one.
  constexpr size_t kMaxMergedBoxes = 1024;
  for (auto &[pair, boxes] : cells) {
    // Merging is quadratic in the boxes of a pair; many boxes stay cells.
    bool merged = boxes.size() <= kMaxMergedBoxes;
    while (merged) {
      merged = false;
      for (size_t i = 0; i < boxes.size() && !merged; ++i)
        for (size_t j = i + 1; j < boxes.size() && !merged; ++j) {
          auto &[loA, hiA] = boxes[i];
          auto &[loB, hiB] = boxes[j];
          int64_t differing = -1, count = 0;
          for (int64_t d = 0; d < rank; ++d)
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
    for (auto &[lo, hi] : boxes) {
      Transfer transfer;
      transfer.source = pair.first;
      transfer.destination = pair.second;
      int64_t elements = 1;
      for (int64_t d = 0; d < rank; ++d) {
        transfer.offsets.push_back(lo[d]);
        transfer.sizes.push_back(hi[d] - lo[d]);
        elements *= hi[d] - lo[d];
      }
      transfer.bytes = elements * elementBytes;
      plan.transfers.push_back(std::move(transfer));
    }
  }
  llvm::sort(plan.transfers, [](const Transfer &a, const Transfer &b) {
    return std::tie(a.destination, a.source, a.offsets) <
           std::tie(b.destination, b.source, b.offsets);
  });
  return plan;
}
