//===- Batch.h - RL update batches and their prefix trie -------*- C++ -*-===//
//
// The batch of an RL update step (GRPO, PPO, tree-structured rollouts), as
// users write it: JSON Lines, one sample an object,
//
//   {"tokens": [1, 2, 3, 4], "loss_mask": [0, 0, 1, 1], "weight": 1.0,
//    "advantage": 0.5, "old_logprobs": [0, 0, -1.2, -0.7]}
//
//   tokens        the sample's token ids (at least one)
//   loss_mask     optional, one entry per token: entry t weighs the
//                 prediction of tokens[t] from tokens[0..t-1] (so entry 0,
//                 which predicts nothing, must be 0); default 0 for the
//                 first token, 1 for the others
//   weight        optional sample weight (default 1)
//   advantage     optional (PPO, GRPO): the sample's advantage
//   old_logprobs  optional (PPO, GRPO), one entry per token: the old
//                 policy's log-probability of tokens[t] (entry 0 unused)
//
// The prefix trie of a batch: a node per distinct prefix, so two samples
// share a node exactly where their tokens agree at the same positions from
// the start; every sample is a path from a root. Packed in depth-first
// order, a node's subtree is the contiguous range [node, subtreeEnd[node]]
// of the packing, which is what the tree attention mask reads (key k is
// visible to query q iff k <= q <= subtreeEnd[k]).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTENDS_RL_BATCH_H
#define LOOM_FRONTENDS_RL_BATCH_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom::rl {

struct Sample {
  std::vector<int64_t> tokens;
  /// Per token; entry 0 is 0.
  std::vector<double> lossMask;
  double weight = 1;
  std::optional<double> advantage;
  /// Per token, or empty.
  std::vector<double> oldLogProbs;
  /// Where the sample was read (1-based line), for messages.
  int64_t line = 0;
};

struct Batch {
  std::vector<Sample> samples;
};

/// Reads a batch from JSON Lines `text` (blank lines are skipped); errors
/// name `name`, the line and what is wrong. An empty batch is an error.
llvm::Expected<Batch> parseBatch(llvm::StringRef text, llvm::StringRef name);
llvm::Expected<Batch> readBatchFile(llvm::StringRef path);

/// The prefix trie of a batch, packed in depth-first order (children in
/// the order samples first reach them).
struct Trie {
  /// Per node, in packed order: its token, its position (depth from the
  /// root, = the token's position in every sample through it), its parent
  /// (-1 for a root) and the last node of its subtree.
  std::vector<int64_t> tokens, positions, parents, subtreeEnd;
  /// Per sample, per token: the node that holds it.
  std::vector<std::vector<int64_t>> nodeOf;

  int64_t getNumNodes() const { return static_cast<int64_t>(tokens.size()); }
};

Trie buildTrie(const Batch &batch);

/// What deduplication saves, before (plain: every sample on its own) and
/// after (the trie).
struct Statistics {
  int64_t samples = 0;
  /// T: every sample's tokens; U: the trie's nodes.
  int64_t totalTokens = 0, uniqueTokens = 0;
  /// Predictions of a token from its predecessor: per sample length - 1;
  /// in the trie, one per node with a parent.
  int64_t plainEdges = 0, trieEdges = 0;
  /// Attention (query, key) pairs, a query seeing itself and what comes
  /// before it: causal per sample, sum of L (L + 1) / 2; in the trie, each
  /// node sees its ancestors and itself, the sum of (depth + 1).
  int64_t plainPairs = 0, triePairs = 0;
};

Statistics getStatistics(const Batch &batch, const Trie &trie);

/// `batch NAME: ...` lines, as loom-batch prints them.
std::string formatStatistics(const Statistics &stats, llvm::StringRef name);

} // namespace loom::rl

#endif // LOOM_FRONTENDS_RL_BATCH_H
