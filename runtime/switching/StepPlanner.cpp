//===- StepPlanner.cpp - Choosing each step's strategy from its batch -----===//

#include "runtime/switching/StepPlanner.h"

#include <algorithm>
#include <functional>
#include <cmath>
#include <limits>
#include <numeric>

using namespace loom::switching;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

absl::Status invalid(const std::string &message) {
  return absl::InvalidArgumentError(message);
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

std::string quoted(const std::string &name) { return "\"" + name + "\""; }

/// The seconds of sequence `length` on `replica` (padded), or infinity
/// where it does not fit.
double costOn(const Replica &replica, int64_t padded) {
  return padded > replica.maxLength ? kInfinity : replica.cost(padded);
}

/// Whether `a` is below `b` by more than rounding.
bool clearlyBelow(double a, double b) {
  if (!std::isfinite(b))
    return a < b;
  return a < b - 1e-12 * std::max(std::fabs(b), 1e-300);
}

/// One strategy's assignment: LPT, then moves and swaps off the slowest
/// replica (StepPlanner.h). `cost[i][r]`: sequence i on replica r.
std::vector<int64_t> assign(const std::vector<std::vector<double>> &cost,
                            size_t replicas, std::vector<double> &load) {
  size_t n = cost.size();
  std::vector<int64_t> order(n), owner(n, -1);
  std::iota(order.begin(), order.end(), 0);
  auto cheapest = [&](int64_t i) {
    return *std::min_element(cost[i].begin(), cost[i].end());
  };
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
    return cheapest(x) > cheapest(y);
  });
  load.assign(replicas, 0);
  for (int64_t i : order) {
    size_t best = 0;
    double finish = kInfinity;
    for (size_t r = 0; r < replicas; ++r)
      if (load[r] + cost[i][r] < finish) {
        finish = load[r] + cost[i][r];
        best = r;
      }
    owner[i] = static_cast<int64_t>(best);
    load[best] = finish;
  }
  // Local search: the best move or swap that brings the slowest replica
  // and the one it trades with below the slowest's time. Each accepted one
  // lowers the sorted loads lexicographically, so it ends; bounded anyway.
  auto movesAndSwaps = [&]() {
    for (int iteration = 0; iteration < 100000; ++iteration) {
      size_t slowest = std::max_element(load.begin(), load.end()) - load.begin();
      double top = load[slowest];
      double bestPair = top;
      int64_t moveI = -1, swapJ = -1;
      size_t target = 0;
      for (size_t i = 0; i < n; ++i) {
        if (owner[i] != static_cast<int64_t>(slowest))
          continue;
        for (size_t r = 0; r < replicas; ++r) {
          if (r == slowest)
            continue;
          double moved = std::max(top - cost[i][slowest], load[r] + cost[i][r]);
          if (clearlyBelow(moved, bestPair)) {
            bestPair = moved;
            moveI = static_cast<int64_t>(i);
            swapJ = -1;
            target = r;
          }
          for (size_t j = 0; j < n; ++j) {
            if (owner[j] != static_cast<int64_t>(r))
              continue;
            double swapped =
                std::max(top - cost[i][slowest] + cost[j][slowest],
                         load[r] - cost[j][r] + cost[i][r]);
            if (clearlyBelow(swapped, bestPair)) {
              bestPair = swapped;
              moveI = static_cast<int64_t>(i);
              swapJ = static_cast<int64_t>(j);
              target = r;
            }
          }
        }
      }
      if (moveI < 0)
        break;
      load[slowest] -= cost[moveI][slowest];
      load[target] += cost[moveI][target];
      owner[moveI] = static_cast<int64_t>(target);
      if (swapJ >= 0) {
        load[target] -= cost[swapJ][target];
        load[slowest] += cost[swapJ][slowest];
        owner[swapJ] = static_cast<int64_t>(slowest);
      }
    }
  };
  // Then the slowest replica and one or two others repartition the
  // sequences they hold among them exactly (a depth-first search over the
  // sequences, most expensive first, pruned at the best split so far; up
  // to kRepartitionLimit sequences, fewer for three replicas), where that
  // brings all of them below the slowest's time: moves and swaps stop on
  // plateaus (one sequence off the slowest only makes another as slow)
  // that a split of the group crosses. Each accepted split lowers the
  // sorted loads lexicographically too.
  // (Bounded work: the searches of one assignment visit at most kBudget
  // nodes in all, and three-replica groups take the slowest with two of the
  // kTripleOthers least loaded others.)
  constexpr size_t kRepartitionLimit = 16, kTripleLimit = 12, kTripleOthers = 4;
  constexpr int64_t kBudget = 2000000;
  int64_t budget = kBudget;
  auto splitGroup = [&](const std::vector<size_t> &group, double top) {
    std::vector<size_t> pool;
    for (size_t i = 0; i < n; ++i)
      if (std::find(group.begin(), group.end(),
                    static_cast<size_t>(owner[i])) != group.end())
        pool.push_back(i);
    size_t limit = group.size() == 2 ? kRepartitionLimit : kTripleLimit;
    if (pool.size() > limit || pool.size() < 2)
      return false;
    std::stable_sort(pool.begin(), pool.end(), [&](size_t x, size_t y) {
      return cost[x][group[0]] > cost[y][group[0]];
    });
    double best = top;
    std::vector<size_t> current(pool.size()), chosen;
    std::vector<double> loads(group.size(), 0);
    // What the sequences from k on add at the least: a bound on the best
    // split below any partial one (the group's mean load).
    std::vector<double> rest(pool.size() + 1, 0);
    for (size_t k = pool.size(); k-- > 0;) {
      double least = kInfinity;
      for (size_t g : group)
        least = std::min(least, cost[pool[k]][g]);
      rest[k] = rest[k + 1] + least;
    }
    std::function<void(size_t)> place = [&](size_t k) {
      if (budget-- <= 0)
        return;
      double placed = 0;
      for (double l : loads)
        placed += l;
      if (!clearlyBelow((placed + rest[k]) / static_cast<double>(group.size()),
                        best))
        return;
      if (k == pool.size()) {
        double worstLoad = *std::max_element(loads.begin(), loads.end());
        if (clearlyBelow(worstLoad, best)) {
          best = worstLoad;
          chosen = current;
        }
        return;
      }
      for (size_t g = 0; g < group.size(); ++g) {
        double next = loads[g] + cost[pool[k]][group[g]];
        if (!clearlyBelow(next, best))
          continue;
        loads[g] = next;
        current[k] = g;
        place(k + 1);
        loads[g] -= cost[pool[k]][group[g]];
      }
    };
    place(0);
    if (chosen.empty())
      return false;
    for (size_t g : group)
      load[g] = 0;
    for (size_t k = 0; k < pool.size(); ++k) {
      size_t to = group[chosen[k]];
      owner[pool[k]] = static_cast<int64_t>(to);
      load[to] += cost[pool[k]][to];
    }
    return true;
  };
  auto repartition = [&]() -> bool {
    size_t slowest = std::max_element(load.begin(), load.end()) - load.begin();
    double top = load[slowest];
    std::vector<size_t> others;
    for (size_t r = 0; r < replicas; ++r)
      if (r != slowest)
        others.push_back(r);
    std::stable_sort(others.begin(), others.end(),
                     [&](size_t x, size_t y) { return load[x] < load[y]; });
    for (size_t r : others)
      if (splitGroup({slowest, r}, top))
        return true;
    size_t few = std::min(others.size(), kTripleOthers);
    for (size_t x = 0; x < few; ++x)
      for (size_t y = x + 1; y < few; ++y)
        if (splitGroup({slowest, others[x], others[y]}, top))
          return true;
    return false;
  };
  for (int round = 0; round < 1000; ++round) {
    movesAndSwaps();
    if (!repartition())
      break;
  }
  // Recompute the loads from scratch (no drift from the updates).
  load.assign(replicas, 0);
  for (size_t i = 0; i < n; ++i)
    load[owner[i]] += cost[i][owner[i]];
  return owner;
}

/// `strategy`'s cost table for the step, or empty when some sequence fits
/// none of its replicas.
std::vector<std::vector<double>> costTable(const Strategy &strategy,
                                           const std::vector<int64_t> &lengths,
                                           const PlannerOptions &options) {
  std::vector<std::vector<double>> cost(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) {
    int64_t padded = bucketOf(lengths[i], options);
    bool fits = false;
    for (const Replica &replica : strategy.replicas) {
      cost[i].push_back(costOn(replica, padded));
      fits |= std::isfinite(cost[i].back());
    }
    if (!fits)
      return {};
  }
  return cost;
}

} // namespace

absl::Status loom::switching::checkCostModel(const CostModel &model,
                                             const std::string &what) {
  for (auto [name, value] : {std::pair<const char *, double>{"a", model.a},
                             {"b", model.b},
                             {"c", model.c}})
    if (!std::isfinite(value) || value < 0)
      return invalid(what + ": coefficient " + name + " is " + number(value) +
                     "; a cost model T(s) = a s^2 + b s + c needs finite, "
                     "non-negative coefficients");
  if (model.a == 0 && model.b == 0 && model.c == 0)
    return invalid(what + ": the cost model is zero for every length");
  return absl::OkStatus();
}

absl::StatusOr<StepPlan>
loom::switching::planFixedStep(const std::vector<Strategy> &strategies,
                               const std::vector<std::vector<int64_t>> &rows,
                               int64_t length) {
  if (strategies.empty() || rows.size() != strategies.size())
    return invalid("rows for " + std::to_string(rows.size()) +
                   " strategies, but there are " +
                   std::to_string(strategies.size()));
  if (length <= 0)
    return invalid("a step of sequences of " + std::to_string(length) +
                   " tokens");
  StepPlan plan;
  plan.makespan = kInfinity;
  for (size_t s = 0; s < strategies.size(); ++s) {
    const Strategy &strategy = strategies[s];
    if (rows[s].size() != strategy.replicas.size())
      return invalid("strategy " + quoted(strategy.name) + " has " +
                     std::to_string(strategy.replicas.size()) +
                     " replicas, but rows for " +
                     std::to_string(rows[s].size()));
    int64_t total = 0;
    for (int64_t count : rows[s])
      total += std::max<int64_t>(count, 0);
    if (total == 0)
      return invalid("strategy " + quoted(strategy.name) +
                     ": no replica has rows");
    double slowest = 0;
    for (size_t r = 0; r < rows[s].size(); ++r) {
      const Replica &replica = strategy.replicas[r];
      int64_t count = rows[s][r];
      if (count < 0)
        return invalid("strategy " + quoted(strategy.name) + ", replica " +
                       std::to_string(r) + ": " + std::to_string(count) +
                       " rows");
      if (count == 0)
        continue;
      if (length > replica.maxLength ||
          (replica.maxTokens > 0 && count * length > replica.maxTokens)) {
        slowest = kInfinity;
        break;
      }
      slowest = std::max(slowest,
                         static_cast<double>(count) * replica.cost(length));
    }
    double makespan = slowest + strategy.switchSeconds;
    plan.makespans.push_back(makespan);
    if (clearlyBelow(makespan, plan.makespan)) {
      plan.makespan = makespan;
      plan.strategy = static_cast<int64_t>(s);
    }
  }
  if (!std::isfinite(plan.makespan))
    return invalid("no strategy runs a step of sequences of " +
                   std::to_string(length) +
                   " tokens: under each, a replica with rows holds shorter "
                   "sequences (or fewer tokens) than that");
  const Strategy &chosen = strategies[plan.strategy];
  for (size_t r = 0; r < chosen.replicas.size(); ++r) {
    ReplicaPlan replica;
    int64_t count = rows[plan.strategy][r];
    if (count > 0) {
      replica.microBatches.push_back({count, length});
      replica.seconds =
          static_cast<double>(count) * chosen.replicas[r].cost(length);
    }
    plan.replicas.push_back(std::move(replica));
  }
  return plan;
}

int64_t loom::switching::bucketOf(int64_t length,
                                  const PlannerOptions &options) {
  auto it = std::lower_bound(options.buckets.begin(), options.buckets.end(),
                             length);
  return it == options.buckets.end() ? length : *it;
}

absl::Status
loom::switching::checkProblem(const std::vector<Strategy> &strategies,
                              const std::vector<int64_t> &lengths,
                              const PlannerOptions &options) {
  if (strategies.empty())
    return invalid("no strategies to choose from");
  // The longest sequence any replica holds, and where.
  int64_t longest = 0;
  std::string longestOn;
  for (const Strategy &strategy : strategies) {
    std::string name = "strategy " + quoted(strategy.name);
    if (strategy.replicas.empty())
      return invalid(name + " has no replicas");
    if (!std::isfinite(strategy.switchSeconds) || strategy.switchSeconds < 0)
      return invalid(name + ": a switch time of " +
                     number(strategy.switchSeconds) + " s");
    for (size_t r = 0; r < strategy.replicas.size(); ++r) {
      const Replica &replica = strategy.replicas[r];
      std::string what = "replica " + std::to_string(r) + " of " + name;
      if (absl::Status status = checkCostModel(replica.cost, what);
          !status.ok())
        return status;
      if (replica.maxLength <= 0)
        return invalid(what + " holds sequences of at most " +
                       std::to_string(replica.maxLength) +
                       " tokens; the limit must be positive");
      if (replica.maxTokens < 0 ||
          (replica.maxTokens > 0 && replica.maxTokens < replica.maxLength))
        return invalid(what + ": micro-batches of " +
                       std::to_string(replica.maxTokens) +
                       " tokens cannot hold its longest sequence (" +
                       std::to_string(replica.maxLength) + ")");
      if (replica.maxLength > longest) {
        longest = replica.maxLength;
        longestOn = strategy.name;
      }
    }
  }
  const std::vector<int64_t> &buckets = options.buckets;
  for (size_t b = 0; b < buckets.size(); ++b) {
    if (buckets[b] <= 0 || (b > 0 && buckets[b] <= buckets[b - 1]))
      return invalid("length buckets must be positive and increasing, got " +
                     std::to_string(buckets[b]) + " at position " +
                     std::to_string(b));
    if (buckets[b] > longest)
      return invalid("length bucket " + std::to_string(buckets[b]) +
                     " is longer than any strategy holds: the longest, " +
                     std::to_string(longest) + ", on " + quoted(longestOn));
  }
  if (lengths.empty())
    return invalid("an empty batch: nothing to plan");
  for (size_t i = 0; i < lengths.size(); ++i) {
    std::string which = "sequence " + std::to_string(i) + " (length " +
                        std::to_string(lengths[i]);
    if (lengths[i] <= 0)
      return invalid(which + "): lengths must be positive");
    if (!buckets.empty() && lengths[i] > buckets.back())
      return invalid(which + ") is longer than the longest length bucket (" +
                     std::to_string(buckets.back()) + ")");
    if (bucketOf(lengths[i], options) > longest)
      return invalid(which + ") is longer than any strategy holds: the "
                             "longest, " +
                     std::to_string(longest) + ", on " + quoted(longestOn));
  }
  return absl::OkStatus();
}

absl::StatusOr<StepPlan>
loom::switching::planStep(const std::vector<Strategy> &strategies,
                          const std::vector<int64_t> &lengths,
                          const PlannerOptions &options) {
  if (absl::Status status = checkProblem(strategies, lengths, options);
      !status.ok())
    return status;
  StepPlan plan;
  plan.makespan = kInfinity;
  std::vector<int64_t> bestOwner;
  for (size_t s = 0; s < strategies.size(); ++s) {
    const Strategy &strategy = strategies[s];
    std::vector<std::vector<double>> cost = costTable(strategy, lengths, options);
    if (cost.empty()) {
      plan.makespans.push_back(kInfinity);
      continue;
    }
    std::vector<double> load;
    std::vector<int64_t> owner = assign(cost, strategy.replicas.size(), load);
    double makespan =
        *std::max_element(load.begin(), load.end()) + strategy.switchSeconds;
    plan.makespans.push_back(makespan);
    if (clearlyBelow(makespan, plan.makespan)) {
      plan.makespan = makespan;
      plan.strategy = static_cast<int64_t>(s);
      bestOwner = std::move(owner);
    }
  }
  // (checkProblem saw every sequence fit the longest replica, whose
  // strategy holds them all.)
  if (bestOwner.empty())
    return absl::InternalError("no strategy holds every sequence");
  const Strategy &chosen = strategies[plan.strategy];
  plan.replicas.resize(chosen.replicas.size());
  for (size_t i = 0; i < lengths.size(); ++i)
    plan.replicas[bestOwner[i]].sequences.push_back(static_cast<int64_t>(i));
  for (size_t r = 0; r < chosen.replicas.size(); ++r) {
    ReplicaPlan &replica = plan.replicas[r];
    const Replica &model = chosen.replicas[r];
    // Shortest buckets first, then by index: each bucket's sequences in
    // micro-batches of as many rows as the replica's token limit allows.
    std::stable_sort(replica.sequences.begin(), replica.sequences.end(),
                     [&](int64_t x, int64_t y) {
                       return bucketOf(lengths[x], options) <
                              bucketOf(lengths[y], options);
                     });
    for (size_t k = 0; k < replica.sequences.size();) {
      int64_t padded = bucketOf(lengths[replica.sequences[k]], options);
      size_t end = k;
      while (end < replica.sequences.size() &&
             bucketOf(lengths[replica.sequences[end]], options) == padded)
        ++end;
      int64_t count = static_cast<int64_t>(end - k);
      int64_t rows = model.maxTokens > 0 ? model.maxTokens / padded : count;
      for (int64_t left = count; left > 0; left -= rows)
        replica.microBatches.push_back({std::min(rows, left), padded});
      for (; k < end; ++k)
        replica.seconds += model.cost(padded);
    }
  }
  return plan;
}

absl::StatusOr<double>
loom::switching::optimalMakespan(const std::vector<Strategy> &strategies,
                                 const std::vector<int64_t> &lengths,
                                 const PlannerOptions &options) {
  if (absl::Status status = checkProblem(strategies, lengths, options);
      !status.ok())
    return status;
  size_t n = lengths.size();
  if (n > 16)
    return invalid("an exact makespan of " + std::to_string(n) +
                   " sequences (at most 16)");
  size_t full = (size_t{1} << n) - 1;
  double best = kInfinity;
  for (const Strategy &strategy : strategies) {
    std::vector<std::vector<double>> cost = costTable(strategy, lengths, options);
    if (cost.empty())
      continue;
    // f[mask]: the least makespan of the sequences in `mask` on the
    // replicas so far; each new replica takes a subset of every mask.
    std::vector<double> f(full + 1), sum(full + 1);
    for (size_t r = 0; r < strategy.replicas.size(); ++r) {
      sum[0] = 0;
      for (size_t mask = 1; mask <= full; ++mask) {
        size_t low = static_cast<size_t>(__builtin_ctzll(mask));
        sum[mask] = sum[mask & (mask - 1)] + cost[low][r];
      }
      if (r == 0) {
        f = sum;
        continue;
      }
      std::vector<double> g(full + 1);
      for (size_t mask = 0; mask <= full; ++mask) {
        double least = f[mask]; // this replica takes nothing
        for (size_t sub = mask; sub; sub = (sub - 1) & mask)
          least = std::min(least, std::max(f[mask ^ sub], sum[sub]));
        g[mask] = least;
      }
      f = std::move(g);
    }
    best = std::min(best, f[full] + strategy.switchSeconds);
  }
  if (!std::isfinite(best))
    return absl::InternalError("no strategy holds every sequence");
  return best;
}

absl::StatusOr<Fit>
loom::switching::fitCostModel(const std::vector<int64_t> &lengths,
                              const std::vector<double> &seconds) {
  if (lengths.size() != seconds.size())
    return invalid("a fit of " + std::to_string(lengths.size()) +
                   " lengths to " + std::to_string(seconds.size()) + " times");
  std::vector<int64_t> distinct(lengths);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (distinct.size() < 3)
    return invalid("a fit of T(s) = a s^2 + b s + c needs measurements at 3 "
                   "or more lengths, got " +
                   std::to_string(distinct.size()));
  for (size_t i = 0; i < lengths.size(); ++i)
    if (lengths[i] <= 0 || !std::isfinite(seconds[i]) || seconds[i] <= 0)
      return invalid("measurement " + std::to_string(i) + " (length " +
                     std::to_string(lengths[i]) + ", " + number(seconds[i]) +
                     " s): lengths and times must be positive");
  // In x = s / longest (conditioning), every subset of the basis
  // {x^2, x, 1} solved by its normal equations; the best non-negative one.
  double scale = static_cast<double>(distinct.back());
  auto basis = [&](size_t k, double x) { return k == 0 ? x * x : k == 1 ? x : 1; };
  Fit best;
  double bestSquares = kInfinity;
  for (unsigned support = 1; support < 8; ++support) {
    std::vector<size_t> free;
    for (size_t k = 0; k < 3; ++k)
      if (support & (1u << k))
        free.push_back(k);
    size_t m = free.size();
    std::vector<std::vector<double>> normal(m, std::vector<double>(m + 1, 0));
    for (size_t i = 0; i < lengths.size(); ++i) {
      double x = lengths[i] / scale;
      for (size_t p = 0; p < m; ++p) {
        for (size_t q = 0; q < m; ++q)
          normal[p][q] += basis(free[p], x) * basis(free[q], x);
        normal[p][m] += basis(free[p], x) * seconds[i];
      }
    }
    // Gaussian elimination with partial pivoting.
    bool singular = false;
    for (size_t col = 0; col < m && !singular; ++col) {
      size_t pivot = col;
      for (size_t row = col + 1; row < m; ++row)
        if (std::fabs(normal[row][col]) > std::fabs(normal[pivot][col]))
          pivot = row;
      std::swap(normal[col], normal[pivot]);
      if (std::fabs(normal[col][col]) < 1e-300) {
        singular = true;
        break;
      }
      for (size_t row = 0; row < m; ++row) {
        if (row == col)
          continue;
        double factor = normal[row][col] / normal[col][col];
        for (size_t k = col; k <= m; ++k)
          normal[row][k] -= factor * normal[col][k];
      }
    }
    if (singular)
      continue;
    double coefficient[3] = {0, 0, 0};
    bool negative = false;
    for (size_t p = 0; p < m; ++p) {
      coefficient[free[p]] = normal[p][m] / normal[p][p];
      negative |= coefficient[free[p]] < 0;
    }
    if (negative)
      continue;
    CostModel model{coefficient[0] / (scale * scale), coefficient[1] / scale,
                    coefficient[2]};
    double squares = 0, worst = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      double residual = model(lengths[i]) - seconds[i];
      squares += residual * residual;
      worst = std::max(worst, std::fabs(residual) / seconds[i]);
    }
    if (squares < bestSquares) {
      bestSquares = squares;
      best.model = model;
      best.rmsSeconds = std::sqrt(squares / static_cast<double>(lengths.size()));
      best.maxRelativeError = worst;
    }
  }
  // (The constant alone is never singular with positive times.)
  return best;
}
