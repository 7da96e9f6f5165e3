//===- Bins.h - Cutting a batch's trie into data-parallel bins --*- C++ -*-===//
//
// Deduplicated training on data-parallel ranks: each rank trains the trie
// of its own samples, so a prefix shared by samples on two ranks is
// computed on both. The plan trades that recomputation against balance: it
// minimises the largest rank's load
//
//   load(r) = c_tok * (unique tokens of r's trie) + c_att * (its attention
//             pairs)
//
// over assignments of samples to ranks. Pieces start as the roots'
// subtrees (no prefix recomputed); the plan assigns pieces largest first to
// the least loaded rank, then splits the largest splittable piece of the
// most loaded rank at its first branching (each branch keeps the prefix,
// recomputed) and assigns again, keeping the best assignment seen; it stops
// when a split no longer pays for a few rounds, or nothing can be split.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTENDS_RL_BINS_H
#define LOOM_FRONTENDS_RL_BINS_H

#include "frontends/rl/Batch.h"

namespace loom::rl {

struct BinCosts {
  double perToken = 1, perPair = 0;
};

struct BinPlan {
  /// Per rank: its samples (indices into the batch, ascending), the unique
  /// tokens and attention pairs of their trie, and the load.
  std::vector<std::vector<int64_t>> samples;
  std::vector<int64_t> uniqueTokens, pairs;
  std::vector<double> loads;

  /// Tokens computed over all ranks (the sum of unique tokens) against the
  /// one-trie ideal U; the largest load against the mean.
  int64_t totalComputed = 0, idealUnique = 0, totalTokens = 0;
  double maxLoad = 0, meanLoad = 0;
};

/// The plan for `ranks` (>= 1) ranks. Ranks may be left without samples
/// when there are fewer samples than ranks.
/// With `slots` > 0, a rank takes at most that many samples (the sample
/// slots of a bin of a compiled step); a plan that cannot keep to it puts
/// more on some rank (the packer reports it).
BinPlan planBins(const Batch &batch, int64_t ranks, const BinCosts &costs,
                 int64_t slots = 0);

/// `bins: ...` lines, as loom-batch prints them.
std::string formatBinPlan(const BinPlan &plan);

} // namespace loom::rl

#endif // LOOM_FRONTENDS_RL_BINS_H
