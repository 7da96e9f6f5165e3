//===- step_planner.cpp - Per-step strategy choice against static ---------===//
//
// Benchmark (not in CI): switching::planStep choosing each batch's strategy
// among five on 8 devices (one node of H200), against the best single
// static strategy, on batches of long-tailed sequence lengths.
//
// Cost model. T1(s), one sequence of s tokens through a step (forward and
// backward) on one device, is fitted (fitCostModel) to times measured on
// this machine with one thread of OpenBLAS: a proxy of one layer's forward,
// a GEMM [s, 512] x [512, 2048] (the MLP's first) plus an attention score
// GEMM [s, 128] x [128, s], f32, at s = 256, 384, 512, 768, ..., 3072,
// 4096: the least time of each over rounds that run every length once,
// for 5 s (at least 3 rounds; --quick: 1.5 s, 2), so that interference on
// a shared machine, which only adds time, spreads over all lengths. In
// full runs s = 8192 is measured too, outside the fit, to check its
// extrapolation. By FLOPs the proxy's quadratic term overtakes its linear
// one at s = 8192 (for a 2048-wide GPT's layer, 4 s^2 w FLOP of attention
// against 24 s w^2, at 12288). T1 = 72 x the proxy (24 layers, backward
// about twice the forward). The fit's coefficients and errors are printed.
//
// Replicas and communication. The modelled network is a 1.31e9-parameter
// GPT (24 blocks, width 2048, MLP 8192, vocabulary 50304, bf16) on H200s:
// NVLink 450 GB/s per device and direction, 10 us a collective, and the
// per-token compute of one device t_tok = 6 P / (989 TFLOP/s x 40%) =
// 19.9 us, which T1's linear coefficient b1 stands for: every
// communication time is converted into T1's seconds by b1 / t_tok. A TP-k
// replica (Megatron: 4 all-reduces a layer, forward and backward, of the
// [s, 2048] bf16 activations; ring: each device sends 2 (k-1)/k of them)
// costs
//     T_k(s) = a1/k s^2 + (b1/k + beta_k) s + c1 + gamma_k,
//     beta_k  = 96 x 2 (k-1)/k x 4096 B / 450 GB/s x b1/t_tok,
//     gamma_k = 96 x 10 us x b1/t_tok            (k > 1; 0 for k = 1),
// c1 (T1's constant) not divided. Memory: a device holds the activations of
// 4096 tokens of one sequence, a TP-k replica 4096 k (longer sequences
// need higher TP). Gradient all-reduces among replicas, which every
// strategy pays, static or not, are not modelled.
//
// Strategies: DP8 (8 single devices), TP2x4, TP4x2, TP8x1, and mix (one
// TP4 replica on devices 0-3, four single devices 4-7). The parameters
// (and optimizer state) live in the layout of the distribution's best
// static strategy (the least total makespan among those that hold every
// batch). Switching into another strategy costs the time of two switches
// of the 1.31e9 bf16 parameters planned by layout::planSwitch, each the
// busiest device's bytes (sent or received) / 450 GB/s: the parameters
// out (relabelling on), the gradients back from there to the home layout
// (no relabelling: the optimizer state stays put).
//
// Batches: 16-256 sequences (uniform), lengths drawn from lognormal and
// Pareto distributions, rounded and clipped to [64, 32768], seeded; 300
// batches a distribution (--quick: 60). A strategy's static makespan is
// planStep given that one strategy, no switch cost. Printed per
// distribution: the lengths; each strategy's static total against the
// planner's over the batches it holds; the per-batch ratio best static /
// planner (min/median/p90/max) and the ratio of totals; a free oracle
// (every batch's best static strategy, no switch cost: what switching
// could gain at most) against the planner; the strategies picked; the
// planner's latency a batch (std::chrono) and against the modelled H200
// step (the makespan / (b1 / t_tok)). Then planStep against
// optimalMakespan on 100 batches (--quick: 30) of 4-12 sequences a
// distribution: the worst ratio, and that batch.
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

/// The proxy at one length: its operands, and one timed run.
class Proxy {
public:
  explicit Proxy(int64_t s)
      : s_(s), x_(s * kProxyWidth), w1_(kProxyWidth * 4 * kProxyWidth),
        y_(s * 4 * kProxyWidth), q_(s * kScoreDim), k_(s * kScoreDim),
        scores_(s * s) {
    std::mt19937 random(7);
    std::uniform_real_distribution<float> value(-1, 1);
    for (std::vector<float> *v : {&x_, &w1_, &q_, &k_})
      for (float &e : *v)
        e = value(random);
    run(); // warm-up
  }
  /// Seconds of one run.
  double run() {
    const int64_t w = kProxyWidth, h = 4 * kProxyWidth, d = kScoreDim;
    auto start = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s_, h, w, 1.0f,
                x_.data(), w, w1_.data(), h, 0.0f, y_.data(), h);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s_, s_, d, 1.0f,
                q_.data(), d, k_.data(), d, 0.0f, scores_.data(), s_);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  }

private:
  int64_t s_;
  std::vector<float> x_, w1_, y_, q_, k_, scores_;
};

/// The least seconds of the proxy at each of `lengths`, over rounds that
/// each run every length once, until `budget` seconds have passed (at
/// least `fewest` rounds, at most 100). Rounds spread each length's runs
/// over the whole measurement, and the least is kept: on a shared machine
/// interference only adds time.
std::vector<double> measureProxy(const Ints &lengths, double budget,
                                 int fewest) {
  std::vector<Proxy> proxies;
  for (int64_t s : lengths)
    proxies.emplace_back(s);
  std::vector<double> least(lengths.size(),
                            std::numeric_limits<double>::infinity());
  auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < 100; ++round) {
    double elapsed = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    if (round >= fewest && elapsed > budget)
      break;
    for (size_t i = 0; i < proxies.size(); ++i)
      least[i] = std::min(least[i], proxies[i].run());
  }
  return least;
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

int64_t busiest(const layout::SwitchPlan &plan) {
  return std::max(plan.maxSent, plan.maxReceived);
}

layout::SwitchPlan planOrExit(const std::vector<layout::SwitchTensor> &tensors,
                              bool relabel, const std::string &what) {
  layout::Topology topology;
  for (int64_t d = 0; d < kDevices; ++d)
    topology.kindOf[d] = "h200";
  layout::SwitchOptions options;
  options.relabel = relabel;
  absl::StatusOr<layout::SwitchPlan> plan =
      layout::planSwitch(tensors, topology, options);
  if (!plan.ok()) {
    std::fprintf(stderr, "switch %s: %s\n", what.c_str(),
                 std::string(plan.status().message()).c_str());
    std::exit(1);
  }
  return *std::move(plan);
}

/// The bytes of a switch from the home layout to `to` and back: the
/// busiest device's bytes (sent or received) moving the parameters out
/// (relabelling on), plus those moving the gradients from where the
/// relabelled target left them back to the home layout (not relabelled:
/// the optimizer state stays put).
int64_t switchBytes(const std::vector<Parameter> &parameters,
                    const Shape &home, const Shape &to) {
  std::vector<layout::SwitchTensor> out;
  for (size_t i = 0; i < parameters.size(); ++i)
    out.push_back({"p" + std::to_string(i), parameters[i].shape,
                   kElementBytes, layoutOf(parameters[i], home),
                   layoutOf(parameters[i], to)});
  layout::SwitchPlan there =
      planOrExit(out, true, home.name + " -> " + to.name);
  std::vector<layout::SwitchTensor> back = out;
  for (size_t i = 0; i < back.size(); ++i) {
    back[i].from = there.targets[i];
    back[i].to = out[i].from;
  }
  layout::SwitchPlan again =
      planOrExit(back, false, to.name + " -> " + home.name);
  return busiest(there) + busiest(again);
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

  // 1. T1 from measurements; in full runs, 8192 measured too, outside the
  // fit, as a check of its extrapolation.
  Ints measured = {256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096};
  std::vector<double> seconds;
  auto flopsOf = [](int64_t s) {
    return 2.0 * s * kProxyWidth * 4 * kProxyWidth + 2.0 * s * s * kScoreDim;
  };
  std::printf("proxy (GEMM [s,%d]x[%d,%d] + scores [s,%d]x[%d,s], f32, one "
              "thread), least time:\n",
              kProxyWidth, kProxyWidth, 4 * kProxyWidth, kScoreDim, kScoreDim);
  seconds = measureProxy(measured, quick ? 1.5 : 5.0, quick ? 2 : 3);
  for (size_t i = 0; i < measured.size(); ++i)
    std::printf("  s = %5lld: %9.3f ms (%.1f GFLOP/s)\n",
                (long long)measured[i], 1e3 * seconds[i],
                flopsOf(measured[i]) / seconds[i] / 1e9);
  absl::StatusOr<sw::Fit> fit = sw::fitCostModel(measured, seconds);
  if (!fit.ok()) {
    std::fprintf(stderr, "%s\n", std::string(fit.status().message()).c_str());
    return 1;
  }
  std::printf("fit of the proxy: a = %.4g s/token^2, b = %.4g s/token, c = "
              "%.4g s; rms %.3g s, largest relative error %.2f%%\n",
              fit->model.a, fit->model.b, fit->model.c, fit->rmsSeconds,
              100 * fit->maxRelativeError);
  std::printf("  fitted / measured:");
  for (size_t i = 0; i < measured.size(); ++i)
    std::printf(" %lld: %.3f", (long long)measured[i],
                fit->model(measured[i]) / seconds[i]);
  std::printf("\n");
  if (!quick) {
    double t = measureProxy({8192}, 1.5, 3)[0];
    std::printf("  s =  8192 (not fitted): %.3f ms (%.1f GFLOP/s), fitted / "
                "measured %.3f\n",
                1e3 * t, flopsOf(8192) / t / 1e9, fit->model(8192) / t);
  }
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
  std::printf("switch seconds (T1's) from the home (rows) to a strategy "
              "(columns) and back; busiest device's bytes / %.0f GB/s:\n%8s",
              kLinkBytesPerSecond / 1e9, "");
  for (const Shape &s : shapes)
    std::printf(" %9s", s.name.c_str());
  std::printf("\n");
  for (size_t a = 0; a < count; ++a) {
    std::printf("%8s", shapes[a].name.c_str());
    for (size_t b = 0; b < count; ++b) {
      switchSeconds[a][b] =
          a == b ? 0
                 : static_cast<double>(
                       switchBytes(parameters, shapes[a], shapes[b])) /
                       kLinkBytesPerSecond * scale;
      std::printf(" %9.4f", switchSeconds[a][b]);
    }
    std::printf("\n");
  }

  // 4. The distributions.
  std::vector<Distribution> distributions = {
      {"lognormal(median 256, sigma 0.8)",
       [](std::mt19937_64 &r) {
         return std::lognormal_distribution<double>(std::log(256.0), 0.8)(r);
       }},
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
    // Each strategy's total over the batches it holds, against the
    // planner's over the same batches.
    std::printf("  static total / planner's over the batches it holds:");
    for (size_t s = 0; s < count; ++s) {
      double mine = 0, theirs = 0;
      for (size_t i = 0; i < steps.size(); ++i)
        if (std::isfinite(statics[s][i])) {
          mine += statics[s][i];
          theirs += planned[i];
        }
      std::printf(" %s ", shapes[s].name.c_str());
      if (holds[s])
        std::printf("%.3f", mine / theirs);
      else
        std::printf("-");
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
    Ints worstLengths;
    int64_t worstStrategy = -1;
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
      if (r > worst) {
        worst = r;
        worstLengths = lengths;
        worstStrategy = plan->strategy;
      }
      exact += r <= 1 + 1e-9;
    }
    std::printf("  against optimalMakespan on %d batches of 4-12: worst "
                "planner / optimum %.4f, optimal on %d (exact search %.1f ms "
                "a batch)\n",
                small, worst, exact, 1e3 * dpSeconds / small);
    if (!worstLengths.empty()) {
      // The worst instance: the planner's strategy against each strategy's
      // own optimum.
      std::printf("    worst: lengths");
      for (int64_t length : worstLengths)
        std::printf(" %lld", (long long)length);
      std::printf("; planner %s; optimum by strategy:",
                  shapes[worstStrategy].name.c_str());
      for (size_t s = 0; s < count; ++s) {
        absl::StatusOr<double> mine =
            sw::optimalMakespan({choice[s]}, worstLengths);
        if (mine.ok())
          std::printf(" %s %.4g", shapes[s].name.c_str(), *mine);
      }
      absl::StatusOr<sw::StepPlan> again = sw::planStep(choice, worstLengths);
      std::printf("; planner's makespans:");
      for (size_t s = 0; s < count; ++s)
        if (std::isfinite(again->makespans[s]))
          std::printf(" %s %.4g", shapes[s].name.c_str(), again->makespans[s]);
      std::printf("\n");
    }
  }
  return 0;
}
