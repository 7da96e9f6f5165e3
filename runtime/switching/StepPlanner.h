//===- StepPlanner.h - Choosing each step's strategy from its batch -*- C++ -*-===//
//
// Strategy selection for dynamic graph switching (docs/switching.md). A
// step's batch is a list of sequences of different lengths; the program
// was compiled under several strategies, each a set of replicas (a
// replica: one group of devices running its own copy of the compute, e.g.
// four replicas of one device under data parallel, one replica of four
// devices under TP4, or a heterogeneous mix of a TP2 replica and two
// single-device ones). Each replica has a cost model, the seconds one
// sequence of length s takes on it,
//
//     T(s) = a s^2 + b s + c        (a, b, c >= 0),
//
// and the longest sequence its memory holds. The planner picks the
// strategy and assigns the sequences to its replicas to minimise the step's
// makespan (its slowest replica, plus the strategy's switch time), then
// buckets each replica's sequences into micro-batches.
//
// Sequences run padded to their length bucket (the smallest bucket length
// at least as long; with no buckets, their own length), so a sequence's
// cost on a replica is T(bucket(s)).
//
// The assignment is longest-processing-time first (each sequence, most
// expensive first, to the replica where it finishes earliest), then a
// local search that moves one sequence off, or swaps a pair with, the
// slowest replica while that lowers the makespan, and where that stalls,
// splits the sequences of the slowest replica and one or two others among
// them exactly (a pruned depth-first search, for groups of up to 16 and
// 12 sequences). Tests hold it to within 5% of the optimum, computed
// exactly by optimalMakespan, on every seeded instance of up to 12
// sequences (two generators: four devices, eight devices).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_SWITCHING_STEPPLANNER_H
#define LOOM_RUNTIME_SWITCHING_STEPPLANNER_H

#include "absl/status/statusor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::switching {

/// T(s) = a s^2 + b s + c seconds for one sequence of length s.
struct CostModel {
  double a = 0, b = 0, c = 0;
  double operator()(int64_t length) const {
    double s = static_cast<double>(length);
    return (a * s + b) * s + c;
  }
};

/// InvalidArgument, naming `what`, for a negative or non-finite
/// coefficient or a model that is zero for every length.
absl::Status checkCostModel(const CostModel &model, const std::string &what);

/// One replica of a strategy.
struct Replica {
  CostModel cost;
  /// The longest sequence (after padding to its bucket) the replica holds.
  int64_t maxLength = 0;
  /// The most tokens one of its micro-batches holds (rows x bucket length);
  /// 0: no limit, a bucket's sequences in one micro-batch.
  int64_t maxTokens = 0;
};

struct Strategy {
  std::string name;
  std::vector<Replica> replicas;
  /// Seconds the switch into this strategy costs the step (moving the
  /// parameters from the optimizer strategy's layout and the gradients
  /// back); 0 for the optimizer strategy itself.
  double switchSeconds = 0;
};

struct PlannerOptions {
  /// Sorted, distinct, positive; empty: every sequence runs at its length.
  std::vector<int64_t> buckets;
};

/// `rows` sequences padded to `length`.
struct MicroBatch {
  int64_t rows = 0, length = 0;
};

struct ReplicaPlan {
  /// Indices into the step's lengths, in the order they run.
  std::vector<int64_t> sequences;
  std::vector<MicroBatch> microBatches;
  double seconds = 0;
};

struct StepPlan {
  int64_t strategy = 0;
  std::vector<ReplicaPlan> replicas;
  /// The slowest replica's seconds plus the strategy's switch seconds.
  double makespan = 0;
  /// The makespan under each strategy (infinity where it cannot hold some
  /// sequence), as the planner found it.
  std::vector<double> makespans;
};

/// InvalidArgument (naming what) for an empty strategy list, a strategy
/// without replicas, a bad cost model or length limit, bad buckets, an
/// empty batch, a non-positive length, a sequence longer than every bucket,
/// or a sequence no strategy can hold ("sequence 3 (length 300) is longer
/// than any strategy holds: the longest, 256, on \"tp4\"").
absl::Status checkProblem(const std::vector<Strategy> &strategies,
                          const std::vector<int64_t> &lengths,
                          const PlannerOptions &options);

/// The strategy, assignment and micro-batches of one step (checkProblem's
/// errors first).
absl::StatusOr<StepPlan> planStep(const std::vector<Strategy> &strategies,
                                  const std::vector<int64_t> &lengths,
                                  const PlannerOptions &options = {});

/// A step whose rows the strategies' compiled data layouts fix (a run
/// configuration's bucketed steps): under strategy s replica r runs
/// `rows[s][r]` sequences, each padded to `length`, as one micro-batch.
/// Replica r's seconds are rows x T_r(length); a replica with rows that
/// cannot hold `length` (or rows x length tokens in one micro-batch) makes
/// the strategy infinite. The plan has the strategy of least makespan (its
/// slowest replica plus its switch seconds), each replica's micro-batch
/// and seconds (no sequence indices: the layout places the rows).
/// InvalidArgument for rows that do not match the strategies, or where no
/// strategy can run the step.
absl::StatusOr<StepPlan>
planFixedStep(const std::vector<Strategy> &strategies,
              const std::vector<std::vector<int64_t>> &rows, int64_t length);

/// The padded length a sequence of `length` runs at.
int64_t bucketOf(int64_t length, const PlannerOptions &options);

/// The exact least makespan over every strategy and assignment (a dynamic
/// program over subsets of sequences, replica by replica: O(R 3^n)); for
/// tests and benchmarks, refused above 16 sequences.
absl::StatusOr<double> optimalMakespan(const std::vector<Strategy> &strategies,
                                       const std::vector<int64_t> &lengths,
                                       const PlannerOptions &options = {});

/// A least-squares fit of T(s) = a s^2 + b s + c to measured (length,
/// seconds) pairs, with every coefficient kept non-negative (the best fit
/// over the subsets of coefficients left free whose solution is
/// non-negative), and its error.
struct Fit {
  CostModel model;
  /// sqrt(mean of squared residuals), and the largest |residual| / seconds.
  double rmsSeconds = 0;
  double maxRelativeError = 0;
};
/// InvalidArgument for fewer than 3 distinct lengths, sizes that differ, or
/// a non-positive or non-finite length or time.
absl::StatusOr<Fit> fitCostModel(const std::vector<int64_t> &lengths,
                                 const std::vector<double> &seconds);

} // namespace loom::switching

#endif // LOOM_RUNTIME_SWITCHING_STEPPLANNER_H
