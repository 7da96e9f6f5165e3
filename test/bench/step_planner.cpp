//===- step_planner.cpp - Per-step strategy choice against static ---------===//
//
// Benchmark (not in CI): switching::planStep, choosing each batch's
// strategy among five on 8 devices (one node of H200), against the best
// single static strategy, on batches of long-tailed sequence lengths.
//
// Cost model. T1(s), one sequence of s tokens through a step (forward and
// backward) on one device, is fitted (fitCostModel) to times measured on
// this machine, one thread of OpenBLAS: a proxy of one layer's forward, a
// GEMM [s, 512] x [512, 2048] (the MLP's first) plus an attention score
// GEMM [s, 128] x [128, s] (f32), median of 3 runs at s = 256 ... 8192
// (--quick: to 4096, 2 runs). Its quadratic term overtakes the linear one
// near s = 8192 by FLOPs (a 2048-wide GPT's attention, 4 s^2 w FLOP a
// layer against 24 s w^2, at s = 12288). T1 = 72 x the proxy (24 layers,
// backward about twice the forward). The fit's coefficients and errors are
// printed.
//
// Replicas and communication. The modelled network is a 1.31e9-parameter
// GPT (24 blocks, width 2048, bf16) on H200s: NVLink 450 GB/s per device
// and direction, 10 us a collective, and the per-token compute of one
// device t_tok = 6 P / (989 TFLOP/s x 40%) = 19.9 us, which T1's linear
// coefficient b1 stands for. Every communication time is converted into
// T1's seconds by b1 / t_tok. A TP-k replica (Megatron: 4 all-reduces of
// the [s, 2048] bf16 activations a layer, forward and backward, ring: each
// device sends 2 (k-1)/k of them) costs
//     T_k(s) = a1/k s^2 + (b1/k + beta_k) s + c1 + gamma_k,
//     beta_k = 96 x 2 (k-1)/k x 4096 B / 450 GB/s x b1/t_tok,
//     gamma_k = 96 x 10 us x b1/t_tok   (k > 1; 0 for k = 1).
// Memory: a device holds the activations of 4096 tokens of one sequence,
// a TP-k replica 4096 k (longer sequences need higher TP).
//
// Strategies: DP8 (8 single devices), TP2x4, TP4x2, TP8x1, and mix (one
// TP4 replica on devices 0-3, four single devices 4-7). The parameters
// (and optimizer state) live in the layout of the best static strategy of
// the distribution (the one of least total makespan among those that hold
// every batch); switching into another costs switchSeconds = 2 x (the
// bytes the busiest device sends or receives in layout::planSwitch of the
// 1.31e9 bf16 parameters from that layout to the other, relabelling on) /
// 450 GB/s, the 2 for the gradients going back, converted as above.
//
// Batches: 16-256 sequences (uniform), lengths from lognormal and Pareto
// distributions clipped to [64, 32768], seeded; 300 batches a distribution
// (--quick: 60). Static: planStep given that one strategy, no switch cost.
// Printed per distribution: the lengths, each strategy's static total
// against the planner's, the per-batch ratio best static / planner
// (min/median/p90/max), the oracle that picks every batch's best static
// strategy for free (a bound on what switching can gain), the strategies
// picked, the planner's latency a batch (std::chrono) and against the
// modelled H200 step; then planStep against optimalMakespan on 100 batches
// (--quick: 30) of 4-12 sequences a distribution: the worst ratio.
//
//   test/bench/run.sh builds and runs it;
//   OPENBLAS_NUM_THREADS=1 step-planner [--quick].
//
//===----------------------------------------------------------------------===//

#include "runtime/layout/Switch.h"
#include "runtime/switching/StepPlanner.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace layout = loom::layout;
namespace sw = loom::switching;
using Ints = std::vector<int64_t>;

namespace {

// The proxy measured here.
constexpr int kProxyWidth = 512, kScoreDim = 128;
constexpr double kProxyToStep = 3 * 24; // 24 layers, forward + backward

// The modelled network and machine (header).
constexpr int64_t kLayers = 24, kWidth = 2048, kVocab = 50304,
                  kElementBytes = 2, kDevices = 8;
constexpr double kLinkBytesPerSecond = 450e9, kCollectiveSeconds = 10e-6,
                 kPeakFlops = 989e12, kUtilisation = 0.4;
constexpr int64_t kTokensPerDevice = 4096;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// The q-quantile (nearest rank) of `v`.
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(q * v.size()));
  return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
}

/// Seconds of the proxy at length s: median of `runs` after a warm-up.
double measureProxy(int64_t s, int runs) {
  const int64_t w = kProxyWidth, h = 4 * kProxyWidth, d = kScoreDim;
  std::mt19937 random(7);
  std::uniform_real_distribution<float> value(-1, 1);
  std::vector<float> x(s * w), w1(w * h), y(s * h), q(s * d), k(s * d),
      scores(s * s);
  for (std::vector<float> *v : {&x, &w1, &q, &k})
    for (float &e : *v)
      e = value(random);
  auto once = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s, h, w, 1.0f,
                x.data(), w, w1.data(), h, 0.0f, y.data(), h);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s, s, d, 1.0f,
                q.data(), d, k.data(), d, 0.0f, scores.data(), s);
  };
  once();
  std::vector<double> times;
  for (int r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    once();
    auto end = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double>(end - start).count());
  }
  return median(times);
}

// The 1.31e9 parameters for the switch costs: per block wq, wk, wv, w1
// (columns split under TP), wo, w2 (rows split), two norms; the embedding
// (rows split); the final norm.
struct Parameter {
  Ints shape;
  int64_t splitDim; // -1: replicated under TP
};

std::vector<Parameter> gptParameters() {
  std::vector<Parameter> p = {{{kVocab, kWidth}, 0}, {{kWidth}, -1}};
  for (int64_t b = 0; b < kLayers; ++b) {
    for (int i = 0; i < 3; ++i)
      p.push_back({{kWidth, kWidth}, 1});
    p.push_back({{kWidth, kWidth}, 0});
    p.push_back({{kWidth, 4 * kWidth}, 1});
    p.push_back({{4 * kWidth, kWidth}, 0});
    p.push_back({{kWidth}, -1});
    p.push_back({{kWidth}, -1});
  }
  return p;
}

/// A strategy's replicas as TP degrees, in device order from 0.
struct Shape {
  std::string name;
  Ints tp;
};

/// The parameter's layout under `shape`: each replica of TP k a group of k
/// consecutive devices holding the whole tensor (split k ways), the
/// replicas a replicated union (equal replicas: one group with a duplicate
/// axis).
layout::Layout layoutOf(const Parameter &p, const Shape &shape) {
  bool equal = std::all_of(shape.tp.begin(), shape.tp.end(),
                           [&](int64_t k) { return k == shape.tp[0]; });
  auto axes = [&](int64_t k) {
    std::vector<layout::Axis> a;
    if (k > 1)
      a.push_back(p.splitDim < 0 ? layout::Axis::duplicate(k)
                                 : layout::Axis::split(p.splitDim, k));
    return a;
  };
  if (equal) {
    int64_t k = shape.tp[0], replicas = static_cast<int64_t>(shape.tp.size());
    std::vector<layout::Axis> a;
    if (p.splitDim < 0 || k == 1) {
      a.push_back(layout::Axis::duplicate(k * replicas));
    } else {
      if (replicas > 1)
        a.push_back(layout::Axis::duplicate(replicas));
      a.push_back(layout::Axis::split(p.splitDim, k));
    }
    Ints devices;
    for (int64_t d = 0; d < k * replicas; ++d)
      devices.push_back(d);
    return layout::Layout::group(devices, a);
  }
  layout::Layout u;
  u.relation = layout::Relation::Replicated;
  int64_t next = 0;
  for (int64_t k : shape.tp) {
    Ints devices;
    for (int64_t i = 0; i < k; ++i)
      devices.push_back(next++);
    u.members.push_back({devices, {axes(k)}});
  }
  return u;
}

/// The bytes the busiest device sends or receives switching the parameters
/// from `from` to `to`.
int64_t switchBytes(const std::vector<Parameter> &parameters,
                    const Shape &from, const Shape &to) {
  std::vector<layout::SwitchTensor> tensors;
  for (size_t i = 0; i < parameters.size(); ++i)
    tensors.push_back({"p" + std::to_string(i), parameters[i].shape,
                       kElementBytes, layoutOf(parameters[i], from),
                       layoutOf(parameters[i], to)});
  layout::Topology topology;
  for (int64_t d = 0; d < kDevices; ++d)
    topology.kindOf[d] = "h200";
  layout::SwitchOptions options;
  options.relabel = true;
  absl::StatusOr<layout::SwitchPlan> plan =
      layout::planSwitch(tensors, topology, options);
  if (!plan.ok()) {
    std::fprintf(stderr, "switch %s -> %s: %s\n", from.name.c_str(),
                 to.name.c_str(), std::string(plan.status().message()).c_str());
    std::exit(1);
  }
  return std::max(plan->maxSent, plan->maxReceived);
}

struct Distribution {
  std::string name;
  std::function<double(std::mt19937_64 &)> draw;
};

Ints drawBatch(const Distribution &dist, std::mt19937_64 &random,
               int64_t size) {
  Ints lengths;
  for (int64_t i = 0; i < size; ++i) {
    double s = dist.draw(random);
    lengths.push_back(std::clamp<int64_t>(std::llround(s), 64, 32768));
  }
  return lengths;
}

int64_t longestOf(const sw::Strategy &strategy) {
  int64_t longest = 0;
  for (const sw::Replica &r : strategy.replicas)
    longest = std::max(longest, r.maxLength);
  return longest;
}

/// The makespan of `lengths` on `strategy` alone, no switch cost; infinity
/// where some sequence does not fit.
double staticMakespan(sw::Strategy strategy, const Ints &lengths) {
  if (*std::max_element(lengths.begin(), lengths.end()) > longestOf(strategy))
    return std::numeric_limits<double>::infinity();
  strategy.switchSeconds = 0;
  absl::StatusOr<sw::StepPlan> plan = sw::planStep({strategy}, lengths);
  if (!plan.ok()) {
    std::fprintf(stderr, "%s\n", std::string(plan.status().message()).c_str());
    std::exit(1);
  }
  return plan->makespan;
}

} // namespace

int main(int argc, char **argv) {
  bool quick = argc > 1 && !std::strcmp(argv[1], "--quick");
  if (argc > 2 || (argc == 2 && !quick)) {
    std::fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
    return 2;
  }

  // 1. T1 from measurements.
  Ints measured = quick ? Ints{256, 512, 1024, 2048, 4096}
                        : Ints{256, 512, 1024, 2048, 4096, 8192};
  std::vector<double> seconds;
  std::printf("proxy (GEMM [s,%d]x[%d,%d] + scores [s,%d]x[%d,s], f32, one "
              "thread):\n",
              kProxyWidth, kProxyWidth, 4 * kProxyWidth, kScoreDim, kScoreDim);
  for (int64_t s : measured) {
    double t = measureProxy(s, quick ? 2 : 3);
    double flops = 2.0 * s * kProxyWidth * 4 * kProxyWidth +
                   2.0 * s * s * kScoreDim;
    std::printf("  s = %5lld: %9.3f ms (%.1f GFLOP/s)\n", (long long)s, 1e3 * t,
                flops / t / 1e9);
    seconds.push_back(t);
  }
  absl::StatusOr<sw::Fit> fit = sw::fitCostModel(measured, seconds);
  if (!fit.ok()) {
    std::fprintf(stderr, "%s\n", std::string(fit.status().message()).c_str());
    return 1;
  }
  std::printf("fit of the proxy: a = %.4g s/token^2, b = %.4g s/token, c = "
              "%.4g s; rms %.3g s, largest relative error %.2f%%\n",
              fit->model.a, fit->model.b, fit->model.c, fit->rmsSeconds,
              100 * fit->maxRelativeError);
  if (fit->model.b <= 0) {
    std::fprintf(stderr, "the fit has no linear term to scale by\n");
    return 1;
  }
  sw::CostModel t1{kProxyToStep * fit->model.a, kProxyToStep * fit->model.b,
                   kProxyToStep * fit->model.c};
  std::printf("T1(s) = %.4g s^2 + %.4g s + %.4g (x%.0f the proxy); a/b "
              "crossover at s = %.0f\n",
              t1.a, t1.b, t1.c, kProxyToStep,
              t1.a > 0 ? t1.b / t1.a : std::numeric_limits<double>::infinity());

  // 2. The TP-k models, in T1's seconds.
  std::vector<Parameter> parameters = gptParameters();
  double parameterCount = 0;
  for (const Parameter &p : parameters) {
    double e = 1;
    for (int64_t size : p.shape)
      e *= static_cast<double>(size);
    parameterCount += e;
  }
  const double tokenSeconds =
      6 * parameterCount / (kPeakFlops * kUtilisation); // t_tok, on an H200
  const double scale = t1.b / tokenSeconds;             // H200 s -> T1's s
  std::printf("modelled: %.3fe9 parameters, t_tok = %.2f us on an H200 = "
              "b1; 1 H200 second = %.4g T1 seconds\n",
              parameterCount / 1e9, 1e6 * tokenSeconds, scale);
  auto modelOf = [&](int64_t k) {
    sw::CostModel m{t1.a / k, t1.b / k, t1.c};
    if (k > 1) {
      double perToken = 4.0 * kLayers * 2.0 * (k - 1) / k * kWidth *
                        kElementBytes / kLinkBytesPerSecond;
      m.b += perToken * scale;
      m.c += 4.0 * kLayers * kCollectiveSeconds * scale;
    }
    return m;
  };
  for (int64_t k : {1, 2, 4, 8}) {
    sw::CostModel m = modelOf(k);
    std::printf("  T%lld(s) = %.4g s^2 + %.4g s + %.4g, up to %lld tokens; "
                "T1/T%lld at s = 512: %.2f, 4096: %.2f\n",
                (long long)k, m.a, m.b, m.c, (long long)(kTokensPerDevice * k),
                (long long)k, t1(512) / m(512), t1(4096) / m(4096));
  }

  // 3. The strategies, and the switch bytes between their layouts.
  std::vector<Shape> shapes = {{"DP8", {1, 1, 1, 1, 1, 1, 1, 1}},
                               {"TP2x4", {2, 2, 2, 2}},
                               {"TP4x2", {4, 4}},
                               {"TP8x1", {8}},
                               {"mix", {4, 1, 1, 1, 1}}};
  const size_t count = shapes.size();
  std::vector<sw::Strategy> strategies;
  for (const Shape &shape : shapes) {
    sw::Strategy s{shape.name, {}, 0};
    for (int64_t k : shape.tp)
      s.replicas.push_back({modelOf(k), kTokensPerDevice * k, 0});
    strategies.push_back(s);
  }
  std::vector<std::vector<double>> switchSeconds(count,
                                                 std::vector<double>(count));
  std::printf("switch seconds (T1's), from (rows) to (columns); busiest "
              "device's bytes x 2 / %.0f GB/s:\n%8s",
              kLinkBytesPerSecond / 1e9, "");
  for (const Shape &s : shapes)
    std::printf(" %9s", s.name.c_str());
  std::printf("\n");
  for (size_t a = 0; a < count; ++a) {
    std::printf("%8s", shapes[a].name.c_str());
    for (size_t b = 0; b < count; ++b) {
      switchSeconds[a][b] =
          a == b ? 0
                 : 2.0 * switchBytes(parameters, shapes[a], shapes[b]) /
                       kLinkBytesPerSecond * scale;
      std::printf(" %9.4f", switchSeconds[a][b]);
    }
    std::printf("\n");
  }

  // 4. The distributions.
  std::vector<Distribution> distributions = {
      {"lognormal(median 512, sigma 1.0)",
       [](std::mt19937_64 &r) {
         return std::lognormal_distribution<double>(std::log(512.0), 1.0)(r);
       }},
      {"lognormal(median 1024, sigma 1.5)",
       [](std::mt19937_64 &r) {
         return std::lognormal_distribution<double>(std::log(1024.0), 1.5)(r);
       }},
      {"Pareto(min 128, alpha 1.1)", [](std::mt19937_64 &r) {
         double u = std::uniform_real_distribution<double>(0, 1)(r);
         return 128.0 * std::pow(1.0 - u, -1.0 / 1.1);
       }}};
  const int batches = quick ? 60 : 300, small = quick ? 30 : 100;
  uint64_t seed = 2024;
  for (const Distribution &dist : distributions) {
    std::mt19937_64 random(seed++);
    std::uniform_int_distribution<int64_t> batchSize(16, 256);
    std::vector<Ints> steps;
    std::vector<double> all;
    for (int i = 0; i < batches; ++i) {
      steps.push_back(drawBatch(dist, random, batchSize(random)));
      for (int64_t s : steps.back())
        all.push_back(static_cast<double>(s));
    }
    std::printf("\n%s: %d batches, %zu sequences; length min %.0f median %.0f "
                "p90 %.0f p99 %.0f max %.0f\n",
                dist.name.c_str(), batches, all.size(), quantile(all, 0),
                median(all), quantile(all, 0.9), quantile(all, 0.99),
                quantile(all, 1));

    // Static: each strategy alone.
    std::vector<std::vector<double>> statics(count);
    std::vector<double> totals(count, 0);
    std::vector<int> holds(count, 0);
    for (size_t s = 0; s < count; ++s)
      for (const Ints &lengths : steps) {
        double m = staticMakespan(strategies[s], lengths);
        statics[s].push_back(m);
        holds[s] += std::isfinite(m);
        totals[s] += m;
      }
    size_t home = count;
    for (size_t s = 0; s < count; ++s)
      if (holds[s] == batches && (home == count || totals[s] < totals[home]))
        home = s;
    if (home == count) {
      std::fprintf(stderr, "no strategy holds every batch\n");
      return 1;
    }

    // The planner, parameters in the home strategy's layout.
    std::vector<sw::Strategy> choice = strategies;
    for (size_t s = 0; s < count; ++s)
      choice[s].switchSeconds = switchSeconds[home][s];
    std::vector<double> planned, latency, ratio, oracle, vsStep;
    std::vector<int> picked(count, 0);
    for (size_t i = 0; i < steps.size(); ++i) {
      auto start = std::chrono::steady_clock::now();
      absl::StatusOr<sw::StepPlan> plan = sw::planStep(choice, steps[i]);
      auto end = std::chrono::steady_clock::now();
      if (!plan.ok()) {
        std::fprintf(stderr, "%s\n",
                     std::string(plan.status().message()).c_str());
        return 1;
      }
      double took = std::chrono::duration<double>(end - start).count();
      latency.push_back(took);
      planned.push_back(plan->makespan);
      picked[plan->strategy]++;
      ratio.push_back(statics[home][i] / plan->makespan);
      double best = std::numeric_limits<double>::infinity();
      for (size_t s = 0; s < count; ++s)
        best = std::min(best, statics[s][i]);
      oracle.push_back(best / plan->makespan);
      // The modelled step on H200s: T1's seconds / scale.
      vsStep.push_back(took / (plan->makespan / scale));
    }
    double plannedTotal = 0;
    for (double m : planned)
      plannedTotal += m;
    std::printf("  static strategies (total makespan / planner's, batches "
                "held):");
    for (size_t s = 0; s < count; ++s) {
      if (holds[s] == batches)
        std::printf(" %s %.3f", shapes[s].name.c_str(),
                    totals[s] / plannedTotal);
      else
        std::printf(" %s -", shapes[s].name.c_str());
      std::printf(" (%d)", holds[s]);
    }
    std::printf("\n  best static (the parameters' home): %s\n",
                shapes[home].name.c_str());
    std::printf("  best static / planner per batch: min %.3f median %.3f p90 "
                "%.3f max %.3f; in total %.3f\n",
                quantile(ratio, 0), median(ratio), quantile(ratio, 0.9),
                quantile(ratio, 1), totals[home] / plannedTotal);
    std::printf("  free per-batch oracle / planner: min %.3f median %.3f "
                "max %.3f\n",
                quantile(oracle, 0), median(oracle), quantile(oracle, 1));
    std::printf("  planner picked:");
    for (size_t s = 0; s < count; ++s)
      std::printf(" %s %d", shapes[s].name.c_str(), picked[s]);
    std::printf("\n  planner latency per batch: median %.1f us p90 %.1f us "
                "max %.1f us; against the modelled H200 step: median %.2e "
                "max %.2e\n",
                1e6 * median(latency), 1e6 * quantile(latency, 0.9),
                1e6 * quantile(latency, 1), median(vsStep),
                quantile(vsStep, 1));

    // Against the exact optimum on small batches.
    std::uniform_int_distribution<int64_t> smallSize(4, 12);
    double worst = 1;
    int exact = 0;
    double dpSeconds = 0;
    for (int i = 0; i < small; ++i) {
      Ints lengths = drawBatch(dist, random, smallSize(random));
      absl::StatusOr<sw::StepPlan> plan = sw::planStep(choice, lengths);
      auto start = std::chrono::steady_clock::now();
      absl::StatusOr<double> best = sw::optimalMakespan(choice, lengths);
      dpSeconds += std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
      if (!plan.ok() || !best.ok()) {
        std::fprintf(stderr, "small batch %d failed\n", i);
        return 1;
      }
      double r = plan->makespan / *best;
      worst = std::max(worst, r);
      exact += r <= 1 + 1e-9;
    }
    std::printf("  against optimalMakespan on %d batches of 4-12: worst "
                "planner / optimum %.4f, optimal on %d (exact search %.1f ms "
                "a batch)\n",
                small, worst, exact, 1e3 * dpSeconds / small);
  }
  return 0;
}
