//===- RLBatchTest.cpp - The prefix trie of RL batches --------------------===//
//
// On seeded random batches (prompts shared by several responses, responses
// branching again), the packed trie is what deduplication needs: every
// sample's path spells its tokens at their original positions, parents come
// first, a subtree is a contiguous range ending at its subtree end, two
// samples share a node exactly where their prefixes agree, and the
// statistics count what the definitions say.
//
//===----------------------------------------------------------------------===//

#include "frontends/rl/Batch.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

using namespace loom::rl;

namespace {

Batch randomBatch(std::mt19937 &rng) {
  Batch batch;
  std::uniform_int_distribution<int> prompts(1, 4), responses(1, 8),
      length(1, 6), vocab(0, 3);
  int numPrompts = prompts(rng);
  for (int p = 0; p < numPrompts; ++p) {
    std::vector<int64_t> prompt;
    for (int i = length(rng); i > 0; --i)
      prompt.push_back(vocab(rng));
    for (int r = responses(rng); r > 0; --r) {
      Sample sample;
      sample.tokens = prompt;
      for (int i = length(rng) - 1; i > 0; --i)
        sample.tokens.push_back(vocab(rng));
      sample.lossMask.assign(sample.tokens.size(), 1.0);
      sample.lossMask[0] = 0;
      batch.samples.push_back(std::move(sample));
    }
  }
  return batch;
}

TEST(RLBatch, RandomTriesAreConsistent) {
  std::mt19937 rng(17);
  for (int round = 0; round < 200; ++round) {
    Batch batch = randomBatch(rng);
    Trie trie = buildTrie(batch);
    int64_t n = trie.getNumNodes();
    // Distinct prefixes, counted directly.
    std::map<std::vector<int64_t>, int64_t> prefixes;
    for (size_t s = 0; s < batch.samples.size(); ++s) {
      const std::vector<int64_t> &tokens = batch.samples[s].tokens;
      ASSERT_EQ(trie.nodeOf[s].size(), tokens.size());
      for (size_t t = 0; t < tokens.size(); ++t) {
        int64_t node = trie.nodeOf[s][t];
        ASSERT_GE(node, 0);
        ASSERT_LT(node, n);
        EXPECT_EQ(trie.tokens[node], tokens[t]);
        EXPECT_EQ(trie.positions[node], static_cast<int64_t>(t));
        EXPECT_EQ(trie.parents[node], t == 0 ? -1 : trie.nodeOf[s][t - 1]);
        std::vector<int64_t> prefix(tokens.begin(), tokens.begin() + t + 1);
        auto [it, added] = prefixes.emplace(prefix, node);
        // The same prefix is the same node, another prefix another node.
        EXPECT_EQ(it->second, node);
      }
    }
    EXPECT_EQ(static_cast<int64_t>(prefixes.size()), n);
    for (int64_t node = 0; node < n; ++node) {
      int64_t parent = trie.parents[node];
      EXPECT_LT(parent, node);
      EXPECT_GE(trie.subtreeEnd[node], node);
      EXPECT_LT(trie.subtreeEnd[node], n);
      // Contiguous subtrees: every node in (node, end] descends from node,
      // and the one after end does not.
      for (int64_t k = node + 1; k <= trie.subtreeEnd[node]; ++k) {
        int64_t up = k;
        while (up > node)
          up = trie.parents[up];
        EXPECT_EQ(up, node);
      }
      if (parent >= 0) {
        EXPECT_LE(trie.subtreeEnd[node], trie.subtreeEnd[parent]);
      }
    }
    Statistics stats = getStatistics(batch, trie);
    EXPECT_EQ(stats.uniqueTokens, n);
    int64_t roots = 0;
    for (int64_t parent : trie.parents)
      roots += parent < 0;
    EXPECT_EQ(stats.trieEdges, n - roots);
    EXPECT_LE(stats.triePairs, stats.plainPairs);
    EXPECT_LE(stats.uniqueTokens, stats.totalTokens);
  }
}

TEST(RLBatch, LinesAreNamed) {
  llvm::Expected<Batch> batch =
      parseBatch("{\"tokens\": [1]}\n{\"tokens\": [1, -2]}\n", "b.jsonl");
  ASSERT_FALSE(static_cast<bool>(batch));
  EXPECT_EQ(llvm::toString(batch.takeError()),
            "b.jsonl:2: 'tokens'[1] is negative");
}

} // namespace
