//===- Pack.cpp - A batch as the arrays of one training step --------------===//

#include "frontends/rl/Pack.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <map>

using namespace loom::rl;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<PackedStep>
loom::rl::packStep(const Batch &batch, const PackShape &shape,
                   std::vector<std::vector<int64_t>> binSamples) {
  const int64_t B = shape.batch, S = shape.seq, R = shape.bins,
                C = shape.capacity;
  if (B <= 0 || S <= 0 || R <= 0 || C <= 0 || B % R != 0)
    return fail(llvm::formatv("invalid step shape: batch {0}, seq {1}, bins "
                              "{2}, capacity {3} (all positive, bins "
                              "dividing the batch)",
                              B, S, R, C));
  if (B > (int64_t{1} << 28) / S || R > (int64_t{1} << 28) / C)
    return fail(llvm::formatv("step shape too large: batch {0} x seq {1}, "
                              "bins {2} x capacity {3} (at most 2^28 "
                              "elements each)",
                              B, S, R, C));
  const int64_t slotsPerBin = B / R;
  const int64_t numSamples = static_cast<int64_t>(batch.samples.size());
  if (binSamples.empty() && numSamples > B)
    return fail(llvm::formatv("the batch has {0} samples; the step has {1} "
                              "sample slots",
                              numSamples, B));
  if (binSamples.empty()) {
    binSamples.resize(R);
    for (int64_t i = 0; i < numSamples; ++i)
      binSamples[std::min(i / slotsPerBin, R - 1)].push_back(i);
  }
  if (static_cast<int64_t>(binSamples.size()) != R)
    return fail(llvm::formatv("{0} bins given for a step of {1}",
                              binSamples.size(), R));
  for (const Sample &sample : batch.samples) {
    int64_t length = static_cast<int64_t>(sample.tokens.size());
    if (length > S)
      return fail(llvm::formatv(
          "line {0}: the sample has {1} tokens; the step's sequences hold "
          "{2} (the model's positions)",
          sample.line, length, S));
    if (shape.vocab > 0)
      for (int64_t token : sample.tokens)
        if (token < 0 || token >= shape.vocab)
          return fail(llvm::formatv("line {0}: token {1} is outside the "
                                    "model's vocabulary of {2}",
                                    sample.line, token, shape.vocab));
  }

  PackedStep step;
  auto &tokens = step.ints["tokens"], &targets = step.ints["targets"],
       &nodes = step.ints["trie_nodes"];
  auto &weights = step.floats["weights"], &advantages = step.floats["advantages"],
       &oldLogProbs = step.floats["old_logprobs"];
  auto &packed = step.ints["trie_tokens"],
       &positions = step.ints["trie_positions"],
       &subtreeEnd = step.ints["trie_subtree_end"];
  for (auto *v : {&tokens, &targets, &nodes})
    v->assign(B * S, 0);
  for (auto *v : {&weights, &advantages, &oldLogProbs})
    v->assign(B * S, 0.0);
  packed.assign(R * C, 0);
  positions.assign(R * C, 0);
  subtreeEnd.resize(R * C);
  for (int64_t i = 0; i < R * C; ++i)
    subtreeEnd[i] = i % C;
  for (const char *name : {"tokens", "targets", "trie_nodes", "weights",
                           "advantages", "old_logprobs"})
    step.shapes[name] = {B, S};
  for (const char *name :
       {"trie_tokens", "trie_positions", "trie_subtree_end"})
    step.shapes[name] = {R, C};

  std::vector<bool> placed(numSamples, false);
  for (int64_t r = 0; r < R; ++r) {
    const std::vector<int64_t> &mine = binSamples[r];
    if (static_cast<int64_t>(mine.size()) > slotsPerBin)
      return fail(llvm::formatv("bin {0} holds {1} samples; the step has {2} "
                                "sample slots per bin (batch {3} / bins {4})",
                                r, mine.size(), slotsPerBin, B, R));
    Batch sub;
    for (int64_t i : mine) {
      if (i < 0 || i >= numSamples || placed[i])
        return fail(llvm::formatv("bin {0} names sample {1}, which is out of "
                                  "range or in another bin",
                                  r, i));
      placed[i] = true;
      sub.samples.push_back(batch.samples[i]);
    }
    Trie trie = buildTrie(sub);
    int64_t used = trie.getNumNodes();
    step.binNodes.push_back(used);
    if (used > C)
      return fail(llvm::formatv(
          "bin {0}'s trie has {1} nodes (samples from line {2}); the "
          "capacity is {3}: use a larger capacity bucket",
          r, used, sub.samples.empty() ? 0 : sub.samples.front().line, C));
    for (int64_t n = 0; n < used; ++n) {
      packed[r * C + n] = trie.tokens[n];
      positions[r * C + n] = trie.positions[n];
      subtreeEnd[r * C + n] = trie.subtreeEnd[n];
    }
    for (auto [k, sample] : llvm::enumerate(sub.samples)) {
      int64_t b = r * slotsPerBin + static_cast<int64_t>(k);
      int64_t length = static_cast<int64_t>(sample.tokens.size());
      for (int64_t s = 0; s < length; ++s) {
        tokens[b * S + s] = sample.tokens[s];
        nodes[b * S + s] = trie.nodeOf[k][s];
      }
      for (int64_t s = 0; s + 1 < length; ++s) {
        targets[b * S + s] = sample.tokens[s + 1];
        weights[b * S + s] = sample.lossMask[s + 1] * sample.weight;
        advantages[b * S + s] = sample.advantage.value_or(0.0);
        if (!sample.oldLogProbs.empty())
          oldLogProbs[b * S + s] = sample.oldLogProbs[s + 1];
      }
    }
    step.binSamples.push_back(mine);
  }
  for (int64_t i = 0; i < numSamples; ++i)
    if (!placed[i])
      return fail(llvm::formatv("line {0}: the sample is in no bin (the "
                                "step has {1} sample slots)",
                                batch.samples[i].line, B));
  if (shape.vocab > 0) {
    auto &index = step.ints["trie_index_targets"];
    index.resize(B * S);
    for (int64_t i = 0; i < B * S; ++i)
      index[i] = nodes[i] * shape.vocab + targets[i];
    step.shapes["trie_index_targets"] = {B, S};
  }
  // The normaliser of the un-deduplicated batch (for objectives that take
  // it rather than summing the weights: what compression keeps).
  double total = 0;
  for (double w : weights)
    total += w;
  step.floats["normalizer"] = {total};
  step.shapes["normalizer"] = {};
  return step;
}

llvm::Error loom::rl::compressStep(PackedStep &step, const Batch &batch,
                                   const PackShape &shape, double tolerance) {
  const int64_t B = shape.batch, S = shape.seq, R = shape.bins;
  if (!step.ints.count("trie_index_targets"))
    return fail("compression needs the vocabulary (the prediction index "
                "trie_index_targets)");
  for (const Sample &sample : batch.samples)
    if (!sample.advantage || sample.oldLogProbs.empty())
      return fail(llvm::formatv(
          "line {0}: the sample has no advantage or no old "
          "log-probabilities; compression is for PPO/GRPO batches",
          sample.line));
  auto &index = step.ints["trie_index_targets"];
  auto &weights = step.floats["weights"], &advantages = step.floats["advantages"],
       &oldLogProbs = step.floats["old_logprobs"];
  const int64_t slotsPerBin = B / R;
  for (int64_t r = 0; r < R; ++r) {
    // The bin's predictions by edge (node * vocab + label), in first-seen
    // order: the old log-probability and the sums of weight * advantage
    // above and below 0.
    struct Edge {
      int64_t index = 0;
      double old = 0, positive = 0, negative = 0;
      int64_t line = 0;
    };
    std::vector<Edge> edges;
    std::map<int64_t, size_t> edgeOf;
    for (int64_t k = 0; k < slotsPerBin; ++k) {
      int64_t b = r * slotsPerBin + k;
      int64_t line =
          k < static_cast<int64_t>(step.binSamples[r].size())
              ? batch.samples[step.binSamples[r][k]].line
              : 0;
      for (int64_t s = 0; s < S; ++s) {
        int64_t at = b * S + s;
        if (weights[at] == 0)
          continue;
        auto [it, fresh] = edgeOf.try_emplace(index[at], edges.size());
        if (fresh)
          edges.push_back({index[at], oldLogProbs[at], 0, 0, line});
        Edge &edge = edges[it->second];
        if (!(std::abs(oldLogProbs[at] - edge.old) <= tolerance))
          return fail(llvm::formatv(
              "lines {0} and {1} predict token {2} after the same prefix "
              "with old log-probabilities {3} and {4}, further apart than "
              "{5}: compression merges them into one",
              edge.line, line, index[at] % shape.vocab,
              llvm::format("%.9g", edge.old),
              llvm::format("%.9g", oldLogProbs[at]),
              llvm::format("%g", tolerance)));
        // (By the advantage's sign: it picks the clip bound.)
        double a = weights[at] * advantages[at];
        (advantages[at] > 0 ? edge.positive : edge.negative) += a;
      }
    }
    // The bin's slots again: per edge one entry of advantage +1 weighted
    // by the positive sum and one of -1 weighted by minus the negative
    // sum, where those are not 0.
    int64_t first = r * slotsPerBin * S, next = first;
    for (int64_t at = first; at < first + slotsPerBin * S; ++at) {
      index[at] = 0;
      weights[at] = advantages[at] = oldLogProbs[at] = 0;
    }
    for (const Edge &edge : edges)
      for (double sign : {1.0, -1.0}) {
        double sum = sign > 0 ? edge.positive : -edge.negative;
        if (sum == 0)
          continue;
        index[next] = edge.index;
        oldLogProbs[next] = edge.old;
        advantages[next] = sign;
        weights[next] = sum;
        ++next;
      }
  }
  // The per-sample arrays no longer follow the samples.
  for (const char *name : {"tokens", "targets", "trie_nodes"}) {
    step.ints.erase(name);
    step.shapes.erase(name);
  }
  return llvm::Error::success();
}
