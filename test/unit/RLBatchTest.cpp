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
#include "frontends/rl/Bins.h"
#include "frontends/rl/Objective.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

// Bins: every sample on exactly one rank, loads as the costs say, never
// worse than assigning whole root subtrees, never fewer tokens computed
// than the trie has.
TEST(RLBatch, BinsCoverEverySampleOnce) {
  std::mt19937 rng(29);
  for (int round = 0; round < 60; ++round) {
    Batch batch = randomBatch(rng);
    int64_t ranks = 1 + round % 4;
    BinCosts costs{1.0, round % 2 ? 0.25 : 0.0};
    BinPlan plan = planBins(batch, ranks, costs);
    ASSERT_EQ(static_cast<int64_t>(plan.samples.size()), ranks);
    std::vector<int> seen(batch.samples.size(), 0);
    for (const std::vector<int64_t> &samples : plan.samples)
      for (int64_t s : samples)
        ++seen[s];
    for (int count : seen)
      EXPECT_EQ(count, 1);
    int64_t computed = 0;
    double maxLoad = 0;
    for (int64_t r = 0; r < ranks; ++r) {
      Batch part;
      for (int64_t s : plan.samples[r])
        part.samples.push_back(batch.samples[s]);
      int64_t unique = 0, pairs = 0;
      if (!part.samples.empty()) {
        Statistics stats = getStatistics(part, buildTrie(part));
        unique = stats.uniqueTokens;
        pairs = stats.triePairs;
      }
      EXPECT_EQ(plan.uniqueTokens[r], unique);
      EXPECT_EQ(plan.pairs[r], pairs);
      EXPECT_DOUBLE_EQ(plan.loads[r],
                       costs.perToken * unique + costs.perPair * pairs);
      computed += unique;
      maxLoad = std::max(maxLoad, plan.loads[r]);
    }
    EXPECT_EQ(plan.totalComputed, computed);
    EXPECT_GE(computed, plan.idealUnique);
    EXPECT_DOUBLE_EQ(plan.maxLoad, maxLoad);
    if (ranks == 1)
      EXPECT_EQ(computed, plan.idealUnique);
    // Whole root subtrees, largest first to the least loaded rank: the
    // plan's starting point, which it may only improve.
    std::map<int64_t, std::vector<int64_t>> byRoot;
    for (size_t s = 0; s < batch.samples.size(); ++s)
      byRoot[batch.samples[s].tokens.front()].push_back(s);
    std::vector<double> pieceLoads;
    for (auto &[token, samples] : byRoot) {
      Batch part;
      for (int64_t s : samples)
        part.samples.push_back(batch.samples[s]);
      Statistics stats = getStatistics(part, buildTrie(part));
      pieceLoads.push_back(costs.perToken * stats.uniqueTokens +
                           costs.perPair * stats.triePairs);
    }
    std::sort(pieceLoads.rbegin(), pieceLoads.rend());
    std::vector<double> loads(ranks, 0);
    for (double load : pieceLoads)
      *std::min_element(loads.begin(), loads.end()) += load;
    EXPECT_LE(plan.maxLoad, *std::max_element(loads.begin(), loads.end()));
  }
}

// The merged PPO/GRPO objective: on random batches whose old
// log-probabilities are a function of the prefix (as an old policy's are),
// the per-node sums of positive and negative advantages give the plain
// per-(sample, token) objective and its derivative in every node's ratio
// within 1e-12, for ratios inside and outside the clip range.
TEST(RLObjective, MergedAdvantagesAreExact) {
  std::mt19937 rng(53);
  std::uniform_real_distribution<double> advantage(-2, 2), ratio(0.3, 2.0),
      weight(0, 2);
  for (int round = 0; round < 100; ++round) {
    Batch batch = randomBatch(rng);
    std::map<std::vector<int64_t>, double> oldOf;
    std::uniform_real_distribution<double> logp(-4, 0);
    for (Sample &sample : batch.samples) {
      sample.advantage = advantage(rng);
      sample.weight = weight(rng);
      sample.oldLogProbs.assign(sample.tokens.size(), 0);
      for (size_t t = 1; t < sample.tokens.size(); ++t) {
        std::vector<int64_t> prefix(sample.tokens.begin(),
                                    sample.tokens.begin() + t + 1);
        auto [it, added] = oldOf.emplace(prefix, logp(rng));
        sample.oldLogProbs[t] = it->second;
        sample.lossMask[t] = (t % 3 == 0) ? 0.0 : 1.0;
      }
    }
    Trie trie = buildTrie(batch);
    llvm::Expected<MergedNodes> merged = mergeAdvantages(batch, trie);
    ASSERT_TRUE(static_cast<bool>(merged)) << llvm::toString(merged.takeError());
    const double eps = 0.2;
    std::vector<double> r(trie.getNumNodes());
    for (double &x : r)
      x = ratio(rng);
    double plain = 0, dedup = 0, norm = 0;
    std::vector<double> dPlain(r.size(), 0), dDedup(r.size(), 0);
    for (size_t s = 0; s < batch.samples.size(); ++s) {
      const Sample &sample = batch.samples[s];
      for (size_t t = 1; t < sample.tokens.size(); ++t) {
        int64_t node = trie.nodeOf[s][t];
        double scale = sample.weight * sample.lossMask[t], d = 0;
        plain += scale * clippedSurrogate(r[node], *sample.advantage, eps, &d);
        dPlain[node] += scale * d;
        norm += std::fabs(scale * r[node] * *sample.advantage);
      }
    }
    for (int64_t node = 0; node < trie.getNumNodes(); ++node) {
      double d = 0;
      dedup += mergedSurrogate(r[node], merged->advantages[node], eps, &d);
      dDedup[node] = d;
    }
    EXPECT_NEAR(dedup, plain, 1e-12 * std::max(norm, 1.0));
    for (size_t node = 0; node < r.size(); ++node)
      EXPECT_NEAR(dDedup[node], dPlain[node], 1e-12 * std::max(norm, 1.0));
  }
}

// The sign case: one token shared by two branches with advantages +1 and
// -1, its ratio 1.5 outside the clip range (eps 0.2). Per sample:
// min(1.5, 1.2) - max(1.5, 0.8) = -0.3, derivative -1 (only the negative
// branch's term moves). Merged: the same. Clipping the summed advantage
// (0) gives 0 and derivative 0: wrong.
TEST(RLObjective, SummedAdvantageShortcutIsWrong) {
  llvm::Expected<Batch> batch = parseBatch(
      "{\"tokens\": [7, 8, 9], \"advantage\": 1, \"old_logprobs\": [0, "
      "-1, -2]}\n"
      "{\"tokens\": [7, 8, 5], \"advantage\": -1, \"old_logprobs\": [0, "
      "-1, -3]}\n",
      "sign.jsonl");
  ASSERT_TRUE(static_cast<bool>(batch)) << llvm::toString(batch.takeError());
  Trie trie = buildTrie(*batch);
  llvm::Expected<MergedNodes> merged = mergeAdvantages(*batch, trie);
  ASSERT_TRUE(static_cast<bool>(merged));
  int64_t shared = trie.nodeOf[0][1];
  ASSERT_EQ(shared, trie.nodeOf[1][1]);
  const double r = 1.5, eps = 0.2;
  double dA = 0, dB = 0, dMerged = 0, dShortcut = 0;
  double plain = clippedSurrogate(r, 1, eps, &dA) +
                 clippedSurrogate(r, -1, eps, &dB);
  double exact = mergedSurrogate(r, merged->advantages[shared], eps, &dMerged);
  double shortcut =
      summedAdvantageSurrogate(r, merged->advantages[shared], eps, &dShortcut);
  EXPECT_NEAR(plain, -0.3, 1e-15);
  EXPECT_NEAR(exact, plain, 1e-15);
  EXPECT_EQ(dMerged, dA + dB);
  EXPECT_EQ(dMerged, -1.0);
  EXPECT_EQ(shortcut, 0.0);
  EXPECT_EQ(dShortcut, 0.0);
  EXPECT_GT(std::fabs(shortcut - plain), 0.29);
}

// Samples that share a node but not its old log-probability cannot be
// merged: the node and both lines are named.
TEST(RLObjective, DisagreeingOldLogProbsAreRefused) {
  llvm::Expected<Batch> batch = parseBatch(
      "{\"tokens\": [7, 8], \"advantage\": 1, \"old_logprobs\": [0, -1]}\n"
      "{\"tokens\": [7, 8], \"advantage\": 2, \"old_logprobs\": [0, "
      "-1.5]}\n",
      "d.jsonl");
  ASSERT_TRUE(static_cast<bool>(batch));
  Trie trie = buildTrie(*batch);
  llvm::Expected<MergedNodes> merged = mergeAdvantages(*batch, trie);
  ASSERT_FALSE(static_cast<bool>(merged));
  EXPECT_EQ(llvm::toString(merged.takeError()),
            "node 1 (token 8 at position 1): the samples of lines 1 and 2 "
            "have old log-probabilities -1 and -1.5; the advantages of "
            "samples that do not share r cannot be merged");
}

TEST(RLBatch, LinesAreNamed) {
  llvm::Expected<Batch> batch =
      parseBatch("{\"tokens\": [1]}\n{\"tokens\": [1, -2]}\n", "b.jsonl");
  ASSERT_FALSE(static_cast<bool>(batch));
  EXPECT_EQ(llvm::toString(batch.takeError()),
            "b.jsonl:2: 'tokens'[1] is negative");
}

} // namespace
