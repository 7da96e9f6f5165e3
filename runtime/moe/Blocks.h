//===- Blocks.h - Rows of one expert block of an MoE buffer -----*- C++ -*-===//
//
// With `blocks = B` (nn.moe_route, nn.grouped_matmul, docs/moe.md), the
// expert-ordered buffer is B blocks of S rows, one per group of E / B
// consecutive experts, so that each block is one device's work of a static
// size. S is the most entries one block can receive: every entry (T * k)
// without a capacity, else at most C per expert of the block. One formula
// (and one reading of the counts into groups of rows) for the op, the
// interpreter and every target's kernels; header-only and free of MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_MOE_BLOCKS_H
#define LOOM_RUNTIME_MOE_BLOCKS_H

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace loom::moe {

/// The rows of one block for `entries` (T * k) routed entries, `experts`
/// experts in `blocks` blocks and a capacity per expert (`capacity < 1`:
/// none).
inline int64_t blockRows(int64_t entries, int64_t experts, int64_t blocks,
                         int64_t capacity) {
  if (capacity < 1 || blocks < 1)
    return entries;
  // (No overflow: the product is compared only when it is below entries.)
  int64_t perBlock = experts / blocks;
  if (perBlock > 0 && capacity > entries / perBlock)
    return entries;
  return std::min(entries, capacity * perBlock);
}

/// The rows of each expert's group of an expert-ordered buffer of `rows`
/// rows in `blocks` blocks (one block: the plain buffer), from the counts:
/// expert e's group is rows [starts[e], ends[e]), each block's groups from
/// the block's first row on. `error` says what is wrong, if anything (the
/// blocks do not divide the experts and rows, or a count is negative or
/// does not fit in its block; the rows are then not all computed), for the
/// kernels to report in their own way; empty when the counts fit.
struct GroupRows {
  std::vector<int64_t> starts, ends;
  /// The row after each block's last group (the block's first row when it
  /// has no rows, or no experts).
  std::vector<int64_t> blockEnds;
  std::string error;
};
inline GroupRows groupRows(const int64_t *counts, int64_t experts,
                           int64_t rows, int64_t blocks) {
  GroupRows groups;
  if (blocks < 1 || experts % blocks != 0 || rows % blocks != 0) {
    groups.error = "blocks = " + std::to_string(blocks) +
                   " must divide the " + std::to_string(experts) +
                   " experts and the " + std::to_string(rows) +
                   " buffer rows";
    return groups;
  }
  int64_t perBlock = experts / blocks, blockRows = rows / blocks;
  groups.starts.resize(static_cast<size_t>(experts));
  groups.ends.resize(static_cast<size_t>(experts));
  groups.blockEnds.resize(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b)
    groups.blockEnds[b] = b * blockRows;
  for (int64_t e = 0; e < experts; ++e) {
    int64_t blockStart = (e / perBlock) * blockRows;
    int64_t start = e % perBlock == 0 ? blockStart : groups.ends[e - 1];
    if (counts[e] < 0 || counts[e] > blockStart + blockRows - start) {
      groups.error = "counts must be non-negative and sum to at most the " +
                     std::to_string(blockRows) + " rows of each of the " +
                     std::to_string(blocks) + " blocks; expert " +
                     std::to_string(e) + " has " + std::to_string(counts[e]) +
                     " after " + std::to_string(start - blockStart) +
                     " rows of its block";
      return groups;
    }
    groups.starts[e] = start;
    groups.ends[e] = start + counts[e];
    groups.blockEnds[e / perBlock] = groups.ends[e];
  }
  return groups;
}

/// One share of a batch routed as one (nn.moe_route ... shares): member
/// `member` of `members`, and `table` (members x experts, row-major) each
/// share's entries per expert. A null table: the whole batch is routed.
struct RouteShares {
  const int64_t *table = nullptr;
  int64_t members = 1, member = 0;
};

/// Whether a share route's operands have their shapes (every target's
/// check): the table `[members >= 1, experts]` (`tableDims` its sizes), the
/// member given and 0-d.
inline bool shareShapesFit(int64_t tableRank, const int64_t *tableDims,
                           bool memberGiven, int64_t memberRank,
                           int64_t experts) {
  return tableRank == 2 && tableDims[0] >= 1 && tableDims[1] == experts &&
         memberGiven && memberRank == 0;
}

/// nn.moe_route (docs/generated/nn.md): each of the `entries` choices
/// `experts` (row-major) gets a buffer row in `slots` (-1: dropped) and
/// each group its rows in `counts`. Without `hosts` the groups are the
/// `numExperts` experts in `blocks` blocks; with them the `hostCount`
/// replica slots (`hostCount / blocks` a block, entry p the expert of slot
/// p, outside [0, numExperts) an empty one), each expert's kept entries
/// split evenly among its replicas in slot order; `placed` says which
/// (`hosts` may be null for none of them). `capacity < 1`: none. With
/// `shares.table`, the entries are one share of a batch routed as one:
/// each entry's rank among its expert's entries counts the shares before
/// it, and the counts and block rows are the whole batch's.
/// Returns what is wrong (empty: nothing): blocks that do not divide the
/// groups, an expert with entries and no replica, a share table that
/// disagrees with the entries or cannot be a batch's, or (never for valid
/// attributes) a block overfilled.
inline std::string routeEntries(const int64_t *experts, int64_t entries,
                                int64_t numExperts, int64_t capacity,
                                int64_t blocks, bool placed,
                                const int64_t *hosts, int64_t hostCount,
                                int64_t *slots, int64_t *counts,
                                const RouteShares &shares = {}) {
  if (!placed)
    hosts = nullptr, hostCount = 0;
  int64_t groups = placed ? hostCount : numExperts;
  if (blocks < 1 || groups % blocks != 0)
    return "blocks = " + std::to_string(blocks) + " does not divide the " +
           std::to_string(groups) + (placed ? " replica slots" : " experts");
  int64_t limit = capacity < 1 ? INT64_MAX : capacity;
  // Each expert's entries in this share; with shares, those of the shares
  // before it (where its entries' ranks start) and of the whole batch.
  std::vector<int64_t> own(static_cast<size_t>(numExperts), 0),
      before(own.size(), 0);
  for (int64_t i = 0; i < entries; ++i)
    if (experts[i] >= 0 && experts[i] < numExperts)
      ++own[experts[i]];
  std::vector<int64_t> total = own;
  int64_t batch = entries;
  if (shares.table) {
    if (shares.members < 1 || shares.member < 0 ||
        shares.member >= shares.members)
      return "member " + std::to_string(shares.member) + " of " +
             std::to_string(shares.members) + " shares";
    if (entries > INT64_MAX / shares.members)
      return std::to_string(shares.members) + " shares of " +
             std::to_string(entries) + " entries: too many entries";
    batch = entries * shares.members;
    std::fill(total.begin(), total.end(), 0);
    for (int64_t m = 0; m < shares.members; ++m) {
      // (Each share has `entries` entries: a row summing to more is no
      // share's, and bounding it keeps every sum below `batch`.)
      int64_t rowSum = 0;
      for (int64_t e = 0; e < numExperts; ++e) {
        int64_t n = shares.table[m * numExperts + e];
        if (n < 0 || n > entries - rowSum)
          return "share " + std::to_string(m) + " gives expert " +
                 std::to_string(e) + " " + std::to_string(n) +
                 " entries, after " + std::to_string(rowSum) +
                 " for the experts before it, in a share of " +
                 std::to_string(entries) + " entries";
        rowSum += n;
        total[e] += n;
        if (m < shares.member)
          before[e] += n;
      }
    }
    for (int64_t e = 0; e < numExperts; ++e)
      if (shares.table[shares.member * numExperts + e] != own[e])
        return "the shares' table gives member " +
               std::to_string(shares.member) + " " +
               std::to_string(shares.table[shares.member * numExperts + e]) +
               " entries of expert " + std::to_string(e) + " but its " +
               "share has " + std::to_string(own[e]);
  }
  // Each entry's rank among its expert's entries of the batch, and each
  // expert's kept entries.
  std::vector<int64_t> seen = before, kept(own.size());
  for (int64_t e = 0; e < numExperts; ++e)
    kept[e] = std::min(total[e], limit);
  for (int64_t i = 0; i < entries; ++i) {
    int64_t e = experts[i];
    slots[i] = e < 0 || e >= numExperts || seen[e] >= limit ? -1 : seen[e]++;
  }
  // Each group's rows: an expert's own count, or a replica's even share.
  std::vector<std::vector<int64_t>> replicas(
      static_cast<size_t>(placed ? numExperts : 0));
  for (int64_t p = 0; placed && p < hostCount; ++p)
    if (hosts[p] >= 0 && hosts[p] < numExperts)
      replicas[hosts[p]].push_back(p);
  for (int64_t g = 0; g < groups; ++g)
    counts[g] = placed ? 0 : kept[g];
  for (int64_t e = 0; placed && e < numExperts; ++e) {
    auto r = static_cast<int64_t>(replicas[e].size());
    if (r == 0 && kept[e] > 0)
      return "expert " + std::to_string(e) + " has " +
             std::to_string(kept[e]) + " entries but no replica in the " +
             std::to_string(hostCount) + " slots of the placement";
    for (int64_t i = 0; i < r; ++i)
      counts[replicas[e][i]] = kept[e] / r + (i < kept[e] % r ? 1 : 0);
  }
  int64_t perBlock = groups / blocks;
  int64_t blockRowsOf = blockRows(batch, groups, blocks, capacity);
  std::vector<int64_t> start(static_cast<size_t>(groups), 0);
  for (int64_t g = 0; g < groups; ++g) {
    start[g] = g % perBlock == 0 ? (g / perBlock) * blockRowsOf
                                 : start[g - 1] + counts[g - 1];
    if (start[g] + counts[g] > (g / perBlock + 1) * blockRowsOf)
      return "the entries overfill block " + std::to_string(g / perBlock) +
             " of " + std::to_string(blockRowsOf) + " rows";
  }
  for (int64_t i = 0; i < entries; ++i) {
    if (slots[i] < 0)
      continue;
    int64_t e = experts[i], rank = slots[i];
    if (!placed) {
      slots[i] = start[e] + rank;
      continue;
    }
    // The replica whose share holds this rank: the first kept % r shares
    // are one longer.
    auto r = static_cast<int64_t>(replicas[e].size());
    int64_t share = kept[e] / r, longer = kept[e] % r;
    int64_t i0 = rank < longer * (share + 1)
                     ? rank / (share + 1)
                     : longer + (rank - longer * (share + 1)) / share;
    int64_t first = i0 * share + std::min(i0, longer);
    slots[i] = start[replicas[e][i0]] + rank - first;
  }
  return {};
}

} // namespace loom::moe

#endif // LOOM_RUNTIME_MOE_BLOCKS_H
