//===- Objective.cpp - PPO/GRPO's clipped objective on a trie -------------===//

#include "frontends/rl/Objective.h"

#include <algorithm>
#include <cmath>

using namespace loom::rl;

double loom::rl::clippedSurrogate(double ratio, double advantage, double eps,
                                  double *dRatio) {
  double clipped = std::clamp(ratio, 1 - eps, 1 + eps);
  double plain = ratio * advantage, clip = clipped * advantage;
  // The smaller term; at a tie the unclipped one (its derivative is A).
  bool usePlain = plain <= clip;
  if (dRatio)
    *dRatio = usePlain ? advantage
                       : (ratio > 1 - eps && ratio < 1 + eps ? advantage : 0);
  return usePlain ? plain : clip;
}

double loom::rl::mergedSurrogate(double ratio,
                                 const MergedAdvantage &advantage, double eps,
                                 double *dRatio) {
  // For A > 0: A min(r, clip(r)) = A min(r, 1 + eps); for A < 0:
  // A max(r, clip(r)) = A max(r, 1 - eps).
  double high = std::min(ratio, 1 + eps), low = std::max(ratio, 1 - eps);
  if (dRatio)
    *dRatio = (ratio <= 1 + eps ? advantage.positive : 0) +
              (ratio >= 1 - eps ? advantage.negative : 0);
  return advantage.positive * high + advantage.negative * low;
}

double loom::rl::summedAdvantageSurrogate(double ratio,
                                          const MergedAdvantage &advantage,
                                          double eps, double *dRatio) {
  return clippedSurrogate(ratio, advantage.positive + advantage.negative, eps,
                          dRatio);
}

llvm::Expected<MergedNodes>
loom::rl::mergeAdvantages(const Batch &batch, const Trie &trie,
                          double tolerance) {
  MergedNodes merged;
  int64_t n = trie.getNumNodes();
  merged.advantages.assign(n, {});
  merged.oldLogProbs.assign(n, 0);
  std::vector<int64_t> firstSample(n, -1);
  for (size_t s = 0; s < batch.samples.size(); ++s) {
    const Sample &sample = batch.samples[s];
    if (!sample.advantage || sample.oldLogProbs.empty())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "line %lld: the sample has no advantage and old log-probabilities",
          static_cast<long long>(sample.line));
    for (size_t t = 1; t < sample.tokens.size(); ++t) {
      int64_t node = trie.nodeOf[s][t];
      double old = sample.oldLogProbs[t];
      if (firstSample[node] < 0) {
        firstSample[node] = static_cast<int64_t>(s);
        merged.oldLogProbs[node] = old;
      } else if (std::fabs(old - merged.oldLogProbs[node]) > tolerance) {
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "node %lld (token %lld at position %zu): the samples of lines "
            "%lld and %lld have old log-probabilities %g and %g; the "
            "advantages of samples that do not share r cannot be merged",
            static_cast<long long>(node),
            static_cast<long long>(sample.tokens[t]), t,
            static_cast<long long>(batch.samples[firstSample[node]].line),
            static_cast<long long>(sample.line), merged.oldLogProbs[node],
            old);
      }
      double weighted = sample.weight * sample.lossMask[t] * *sample.advantage;
      if (weighted > 0)
        merged.advantages[node].positive += weighted;
      else
        merged.advantages[node].negative += weighted;
    }
  }
  return merged;
}
