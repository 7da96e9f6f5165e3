//===- Objective.h - PPO/GRPO's clipped objective on a trie ----*- C++ -*-===//
//
// PPO and GRPO weigh each predicted token t of sample s by
//
//   w_s m_s[t] min(r A_s, clip(r, 1 - eps, 1 + eps) A_s),
//   r = exp(logp(token) - old_logprobs_s[t]),
//
// with w the sample's weight, m its loss mask and A its advantage. On a
// prefix trie a shared token is predicted once, so the deduplicated step
// gathers each sample's term from its node. Where the samples through a
// node share the old log-probability (they share the prefix, and the old
// policy saw the same context), they share r too, and the node can keep
// only two numbers instead of one advantage per sample: the weighted sums
// of the positive and of the negative advantages,
//
//   sum_s w m min(r A_s, clip(r) A_s)
//     = (sum_{A>0} w m A) min(r, 1 + eps) + (sum_{A<0} w m A) max(r, 1 - eps).
//
// Clipping the summed advantage instead, sum(w m A) with one sign, is wrong
// whenever the signs differ and r is outside the clip range; the tests show
// it (RLObjectiveTest).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTENDS_RL_OBJECTIVE_H
#define LOOM_FRONTENDS_RL_OBJECTIVE_H

#include "frontends/rl/Batch.h"

namespace loom::rl {

/// min(r A, clip(r, 1 - eps, 1 + eps) A), and its derivative in r (where
/// the clip is flat, 0) into `dRatio` when given.
double clippedSurrogate(double ratio, double advantage, double eps,
                        double *dRatio = nullptr);

/// A node's advantages, merged: the weighted sums of the positive and the
/// negative ones of the samples whose token it predicts.
struct MergedAdvantage {
  double positive = 0, negative = 0;
};

/// positive min(r, 1 + eps) + negative max(r, 1 - eps), and its derivative.
double mergedSurrogate(double ratio, const MergedAdvantage &advantage,
                       double eps, double *dRatio = nullptr);

/// The shortcut that is wrong: clippedSurrogate on the summed advantage.
double summedAdvantageSurrogate(double ratio,
                                const MergedAdvantage &advantage, double eps,
                                double *dRatio = nullptr);

/// Per trie node, the merged advantages of the samples whose token it is
/// (weighted by w m; roots predict nothing and stay 0), and per node the
/// old log-probability they share. Fails, naming the node and two samples,
/// where samples through one node disagree on it (beyond `tolerance`,
/// absolute), or where the batch has no advantages.
struct MergedNodes {
  std::vector<MergedAdvantage> advantages;
  std::vector<double> oldLogProbs;
};
llvm::Expected<MergedNodes> mergeAdvantages(const Batch &batch,
                                            const Trie &trie,
                                            double tolerance = 0);

} // namespace loom::rl

#endif // LOOM_FRONTENDS_RL_OBJECTIVE_H
