//===- moe_placement.cpp - Expert placement latency and quality -----------===//
//
// Benchmark (not in CI): moe::planPlacement against moe::planEplb (DeepSeek
// EPLB) on skewed routing traces of 256 experts on 64 devices (8 nodes of 8,
// 32 expert groups; 6 slots a device, so 128 redundant replicas), and the
// planner's latency per layer (std::chrono, the median and the worst over
// the layers, after one warm-up layer).
//
// Traces: per layer, expert popularity drawn Zipf-like (weight 1 / rank^s,
// s uniform in [0.6, 1.2], ranks shuffled) or lognormal (sigma uniform in
// [0.6, 1.4]), scaled to 65536 routed tokens (tokens x top-k) and rounded;
// 200 layers a distribution (--quick: 40), seeded; an expert weighs 44 MB
// (7168 x 2048 x 3 bf16 matrices), a token 0.2 us. Each layer is planned
// under the hierarchical and
// the global policy, once afresh (no previous placement: max load against
// the baseline's, and the latency) and once from the previous layer's
// placement (each planner from its own previous plan: modelled times,
// moves included). Printed per distribution and policy: max load / lower
// bound (min, median, p90, max) for the planner and the baseline, the
// layers the planner is strictly below, equal to and above the baseline,
// and the latencies.
//
// Then the simulated MoE layer time over a run of micro-steps: per
// micro-step plans (the planner from its own previous plan, moves charged)
// against a static placement planned once on the run's mean load (the
// planner's and EPLB's), each micro-step's time the modelled one (largest
// device load x seconds a token, plus moved bytes over the bandwidth).
// Micro-steps: a layer's popularity (Zipf-like, as above) times lognormal
// noise per micro-step (sigma 0.5: micro-batches are small and the load
// swings), the routed entries drawn multinomially; 100 micro-steps (--quick:
// 20) at 65536, 524288 and 4194304 routed entries a micro-step, with moves
// charged and with moves hidden (free: an upper bound on overlapping them
// with the previous micro-step's compute). Printed: the sum of
// the static placements' times over the sum of the per-micro-step plans'
// (above 1: replanning is faster), and the replicas moved a micro-step.
//
// Build (from the repository root, with absl installed):
//   g++ -std=c++17 -O2 -I. runtime/moe/Placement.cpp test/bench/moe_placement.cpp \
//       -labsl_status -labsl_statusor ... -o moe_placement
//
//===----------------------------------------------------------------------===//

#include "runtime/moe/Placement.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace loom::moe;

namespace {

std::vector<double> trace(std::mt19937 &random, bool zipf, int64_t n,
                          double total) {
  std::vector<double> w(n);
  std::uniform_real_distribution<double> u(0, 1);
  if (zipf) {
    double s = 0.6 + 0.6 * u(random);
    std::vector<int64_t> rank(n);
    std::iota(rank.begin(), rank.end(), 1);
    std::shuffle(rank.begin(), rank.end(), random);
    for (int64_t e = 0; e < n; ++e)
      w[e] = 1 / std::pow(static_cast<double>(rank[e]), s);
  } else {
    std::lognormal_distribution<double> l(0, 0.6 + 0.8 * u(random));
    for (double &x : w)
      x = l(random);
  }
  double sum = std::accumulate(w.begin(), w.end(), 0.0);
  for (double &x : w)
    x = std::round(x / sum * total);
  return w;
}

std::string spread(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  auto at = [&](double q) {
    return values[std::min(values.size() - 1,
                           static_cast<size_t>(q * values.size()))];
  };
  char text[128];
  std::snprintf(text, sizeof(text), "min %.4f median %.4f p90 %.4f max %.4f",
                values.front(), at(0.5), at(0.9), values.back());
  return text;
}

/// Tokens per expert of `entries` routed entries drawn from `popularity`
/// (a multinomial, one binomial per expert).
std::vector<double> draw(std::mt19937 &random,
                         const std::vector<double> &popularity,
                         int64_t entries) {
  std::vector<double> tokens(popularity.size(), 0);
  double rest = std::accumulate(popularity.begin(), popularity.end(), 0.0);
  int64_t left = entries;
  for (size_t e = 0; e < popularity.size() && left > 0; ++e) {
    double p = rest > 0 ? std::min(1.0, popularity[e] / rest) : 1.0;
    std::binomial_distribution<int64_t> b(left, p);
    int64_t n = e + 1 == popularity.size() ? left : b(random);
    tokens[e] = static_cast<double>(n);
    left -= n;
    rest -= popularity[e];
  }
  return tokens;
}

/// Static against per-micro-step placement over one simulated run.
int layerTime(const Cluster &cluster, int steps, int64_t entries,
              bool hierarchical) {
  std::mt19937 random(303 + entries);
  PlacementOptions options;
  options.hierarchical = hierarchical;
  std::vector<double> base = trace(random, true, 256, 1e6);
  std::lognormal_distribution<double> noise(0, 0.5);
  std::vector<std::vector<double>> loads;
  std::vector<double> mean(256, 0);
  for (int m = 0; m < steps; ++m) {
    std::vector<double> popularity = base;
    for (double &p : popularity)
      p *= noise(random);
    loads.push_back(draw(random, popularity, entries));
    for (int e = 0; e < 256; ++e)
      mean[e] += loads.back()[e] / steps;
  }
  LayerInput average;
  average.tokens = mean;
  absl::StatusOr<Placement> ours = planPlacement(cluster, average, options);
  absl::StatusOr<Placement> eplb = planEplb(cluster, average, options);
  if (!ours.ok() || !eplb.ok()) {
    std::fprintf(stderr, "error: planning the static placement failed\n");
    return 1;
  }
  double staticOurs = 0, staticEplb = 0, dynamic = 0, balanced = 0;
  int64_t moved = 0;
  std::vector<Holding> previous =
      holdingsOf(ours->physicalToLogical, cluster.topology.slotsPerDevice);
  for (const std::vector<double> &tokens : loads) {
    LayerInput layer;
    layer.tokens = tokens;
    absl::StatusOr<Placement> a =
        evaluateMap(cluster, layer, ours->physicalToLogical);
    absl::StatusOr<Placement> b =
        evaluateMap(cluster, layer, eplb->physicalToLogical);
    layer.previous = previous;
    absl::StatusOr<Placement> plan = planPlacement(cluster, layer, options);
    if (!a.ok() || !b.ok() || !plan.ok()) {
      std::fprintf(stderr, "error: planning a micro-step failed\n");
      return 1;
    }
    staticOurs += a->modelledSeconds;
    staticEplb += b->modelledSeconds;
    dynamic += plan->modelledSeconds;
    balanced += plan->maxLoad * cluster.cost.secondsPerToken;
    moved += plan->replicasMoved;
    previous = residentAfter(previous, plan->physicalToLogical,
                             cluster.topology.slotsPerDevice);
  }
  std::printf("  %lld entries a micro-step, %s: static (planner on the mean) "
              "/ per micro-step %.3f, static (EPLB on the mean) / per "
              "micro-step %.3f; moves %.1f%% of the per-micro-step time, "
              "%.1f replicas moved a micro-step\n",
              static_cast<long long>(entries),
              hierarchical ? "hierarchical" : "global", staticOurs / dynamic,
              staticEplb / dynamic, 100 * (dynamic - balanced) / dynamic,
              static_cast<double>(moved) / steps);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  int layers = quick ? 40 : 200;
  Cluster cluster;
  cluster.topology = {8, 64, 6};
  cluster.groups = 32;
  cluster.cost.secondsPerToken = 2e-7;
  cluster.cost.expertBytes = 7168.0 * 2048 * 3 * 2;
  std::printf("256 experts, 64 devices (8 nodes of 8), 6 slots a device, "
              "%d layers a trace\n",
              layers);
  for (bool zipf : {true, false})
    for (bool hierarchical : {true, false}) {
      std::mt19937 random(zipf ? 101 : 202);
      PlacementOptions options;
      options.hierarchical = hierarchical;
      std::vector<double> ours, base, micros, timeRatio;
      int below = 0, equal = 0, above = 0, kept = 0;
      std::vector<Holding> basePrevious;
      std::vector<Holding> previous;
      for (int l = 0; l <= layers; ++l) {
        LayerInput layer;
        layer.tokens = trace(random, zipf, 256, 65536);
        auto start = std::chrono::steady_clock::now();
        absl::StatusOr<Placement> plan = planPlacement(cluster, layer, options);
        auto stop = std::chrono::steady_clock::now();
        absl::StatusOr<Placement> eplb = planEplb(cluster, layer, options);
        // The same layer again, planned from the previous layer's
        // placement (each planner from its own): modelled times.
        LayerInput moving = layer, baseMoving = layer;
        moving.previous = previous;
        baseMoving.previous = basePrevious;
        absl::StatusOr<Placement> moved = planPlacement(cluster, moving, options);
        absl::StatusOr<Placement> baseMoved = planEplb(cluster, baseMoving, options);
        if (!plan.ok() || !eplb.ok() || !moved.ok() || !baseMoved.ok()) {
          std::fprintf(stderr, "error: planning failed\n");
          return 1;
        }
        previous = holdingsOf(moved->physicalToLogical, 6);
        basePrevious = holdingsOf(baseMoved->physicalToLogical, 6);
        if (l == 0)
          continue; // warm-up
        kept += moved->keptPrevious;
        timeRatio.push_back(moved->modelledSeconds / baseMoved->modelledSeconds);
        micros.push_back(
            std::chrono::duration<double, std::micro>(stop - start).count());
        ours.push_back(plan->maxLoad / plan->lowerBound);
        base.push_back(eplb->maxLoad / eplb->lowerBound);
        double a = plan->maxLoad, b = eplb->maxLoad;
        if (a < b * (1 - 1e-12))
          ++below;
        else if (a > b * (1 + 1e-12))
          ++above;
        else
          ++equal;
      }
      std::printf("%s, %s:\n", zipf ? "zipf" : "lognormal",
                  hierarchical ? "hierarchical" : "global");
      std::printf("  planner  max load / bound: %s\n", spread(ours).c_str());
      std::printf("  baseline max load / bound: %s\n", spread(base).c_str());
      std::printf("  planner below the baseline on %d layers, equal on %d, "
                  "above on %d\n",
                  below, equal, above);
      std::printf("  with the previous layer's placement: modelled time planner "
                  "/ baseline: %s; kept the previous on %d layers\n",
                  spread(timeRatio).c_str(), kept);
      std::sort(micros.begin(), micros.end());
      std::printf("  planner latency per layer: median %.1f us, max %.1f us\n",
                  micros[micros.size() / 2], micros.back());
    }
  int steps = quick ? 20 : 100;
  std::printf("simulated layer time over %d micro-steps:\n", steps);
  for (bool hidden : {false, true}) {
    // Moves charged at the links' bandwidth, or hidden behind the previous
    // micro-step's compute (an upper bound on what overlap can give).
    Cluster moving = cluster;
    if (hidden)
      moving.cost.expertBytes = 0;
    std::printf(" %s:\n", hidden ? "moves hidden (free)" : "moves charged");
    for (int64_t entries : {int64_t{65536}, int64_t{524288}, int64_t{4194304}})
      for (bool hierarchical : {true, false})
        if (layerTime(moving, steps, entries, hierarchical))
          return 1;
  }
  return 0;
}
