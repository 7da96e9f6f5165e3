//===- Pack.h - A batch as the arrays of one training step -----*- C++ -*-===//
//
// What a step over a padded batch (the plain step) and its prefix-
// deduplicated form (nn-prefix-dedup) read, built from an RL batch. The
// step has `batch` sample slots of `seq` tokens; bin r (a data-parallel
// rank's share) owns slots [r * batch / bins, (r + 1) * batch / bins) and
// fills them with its samples in order; unused slots and the positions past
// a sample's end are padding (token 0, weight 0).
//
// Per (slot b, position s), for s < length - 1 (the prediction of token
// s + 1 from the prefix up to s), and 0 elsewhere:
//
//   targets[b, s]       tokens[s + 1]
//   weights[b, s]       loss_mask[s + 1] * weight
//   advantages[b, s]    the sample's advantage
//   old_logprobs[b, s]  old_logprobs[s + 1]
//
// The deduplicated step's arrays, per bin the trie of its samples packed
// depth first into a row of `capacity` (padding nodes: token 0, position 0,
// their own subtree, so no real token sees them):
//
//   trie_tokens, trie_positions, trie_subtree_end   [bins, capacity]
//   trie_nodes[b, s]          the node of token s of slot b in its row
//   trie_index_targets[b, s]  trie_nodes[b, s] * vocab + targets[b, s]
//
// and `normalizer` (0-d): the sum of the weights.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTENDS_RL_PACK_H
#define LOOM_FRONTENDS_RL_PACK_H

#include "frontends/rl/Batch.h"

#include <map>

namespace loom::rl {

struct PackShape {
  int64_t batch = 0, seq = 0, bins = 1, capacity = 0;
  /// The model's classes (token ids are checked against it; 0: unchecked,
  /// and no trie_index_targets).
  int64_t vocab = 0;
};

/// The arrays of one step, by argument name (the names above and
/// `tokens`); integer arrays are i64, the others f64.
struct PackedStep {
  std::map<std::string, std::vector<int64_t>> ints;
  std::map<std::string, std::vector<double>> floats;
  std::map<std::string, std::vector<int64_t>> shapes;
  /// Per bin: its samples and the trie nodes it uses.
  std::vector<std::vector<int64_t>> binSamples;
  std::vector<int64_t> binNodes;
};

/// Packs `batch` for a step of `shape`; `binSamples` gives each bin's
/// samples (empty: samples in order, batch / bins per bin). Errors name the
/// sample's line: a sample longer than `seq`, a token outside the
/// vocabulary, a bin with more samples than slots or more trie nodes than
/// `capacity`.
llvm::Expected<PackedStep>
packStep(const Batch &batch, const PackShape &shape,
         std::vector<std::vector<int64_t>> binSamples = {});

/// PPO/GRPO compression of a packed step (of `batch` and `shape`, with a
/// vocabulary): samples whose predictions share a trie edge (the same
/// token after the same prefix) share its old log-probability, so their
/// clipped objectives sum to P min(r, 1 + eps) + N max(r, 1 - eps), P and
/// N the sums of weight * advantage above and below 0 (summing the
/// advantages before clipping would be wrong). Per bin, the per-(slot,
/// position) arrays (weights, advantages, old_logprobs,
/// trie_index_targets) become at most two entries per edge: advantage +1
/// weighted by P and -1 weighted by -N; `normalizer` stays the
/// un-deduplicated batch's. tokens, targets and trie_nodes are dropped:
/// they no longer follow the samples, so a step that reads per-sample
/// values cannot take the compressed arrays (it finds them missing). An
/// error names two samples whose old log-probabilities for a shared edge
/// differ by more than `tolerance`.
llvm::Error compressStep(PackedStep &step, const Batch &batch,
                         const PackShape &shape, double tolerance = 0);

} // namespace loom::rl

#endif // LOOM_FRONTENDS_RL_PACK_H
