//===- switch_plans.cpp - Strategy-switch plans of a 1.3B GPT -------------===//
//
// Benchmark (not in CI): layout::planSwitch on the parameter set of a GPT
// of 24 blocks, width 2048, MLP 8192, vocabulary 50304 (1.31e9 parameters
// in 194 tensors, bf16: 2 bytes an element, no optimizer state), laid out
// under the strategies below on 8, 16, 32 and 64 devices (8 devices a
// node, every device of kind "h200"). Per block: ln1 [2048], wq, wk, wv
// [2048, 2048], wo [2048, 2048], ln2 [2048], w1 [2048, 8192], w2 [8192,
// 2048]; the embedding [50304, 2048] (tied with the output head) and the
// final norm [2048]. Strategies (Megatron style: columns of wq/wk/wv/w1
// split, rows of wo/w2 split, rows of the embedding split by vocabulary,
// norms replicated; tensor-parallel groups are consecutive devices):
//
//   DP        every device holds everything;
//   TP8/4/2   TP k x DP N/k;
//   PP2.TP4   2 stages of N/2 devices (blocks 0-11 and the embedding on
//             the first, blocks 12-23 and the final norm on the second),
//             TP4 x DP inside a stage;
//   PP4.TP2   4 stages of N/4 devices (6 blocks each), TP2 x DP inside;
//   mix       heterogeneous: the first half of the devices TP8 x DP, the
//             second half TP4 x DP, each half holding the whole model (on
//             8 devices, a node: TP4 on 0-3 and TP2 x DP2 on 4-7);
//   TP8'      TP8 x DP with every node's devices taken in an interleaved
//             order (0, 2, 4, 6, 1, 3, 5, 7 of the node: the order another
//             compilation, or another enumeration of the node's sockets,
//             may give): the same shards on other devices, which only a
//             relabelling recovers.
//
// A relabelling permutes only interchangeable devices (Switch.h: those of
// one node and kind), so it never moves a role to another node.
//
// For a representative set of (from, to) pairs (--all: every ordered pair)
// and relabelling off and on, one line: the planning time (median of 5
// runs, std::chrono; --quick: 3 runs, 8 and 16 devices only); the volume in
// MiB and as ratios to the least volume under the identity mapping and
// under the best relabelling; the largest bytes one device sends and
// receives, the largest bytes on one link between nodes and the bytes
// crossing nodes, each as a ratio to the lower bound every plan obeys
// (Switch.h); "-" where a figure and its bound are both 0, "inf" where
// only the bound is. Per device count, a summary: the time ratio relabel
// on / off (planSwitch solves the assignment either way, to report both
// minima, so this is the cost of planning the relabelled target, not of
// the assignment), the pairs where relabelling moves less and the median
// of relabelled / identity minimum over the pairs that move anything.
//
//   test/bench/run.sh builds and runs it; switch-plans [--quick] [--all].
//
//===----------------------------------------------------------------------===//

#include "runtime/layout/Switch.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace layout = loom::layout;
using Ints = std::vector<int64_t>;

namespace {

constexpr int64_t kBlocks = 24, kWidth = 2048, kHidden = 4 * kWidth,
                  kVocab = 50304, kElementBytes = 2, kPerNode = 8;

/// How a parameter is cut under tensor parallelism.
enum class Cut { Columns, Rows, Whole };

struct Parameter {
  std::string name;
  Ints shape;
  Cut cut;
  /// Its block, -1 for the embedding (first stage), kBlocks for the final
  /// norm (last stage).
  int64_t block;
};

std::vector<Parameter> gptParameters() {
  std::vector<Parameter> parameters;
  parameters.push_back({"embedding", {kVocab, kWidth}, Cut::Rows, -1});
  for (int64_t b = 0; b < kBlocks; ++b) {
    std::string p = "block" + std::to_string(b) + ".";
    parameters.push_back({p + "ln1", {kWidth}, Cut::Whole, b});
    for (const char *w : {"wq", "wk", "wv"})
      parameters.push_back({p + w, {kWidth, kWidth}, Cut::Columns, b});
    parameters.push_back({p + "wo", {kWidth, kWidth}, Cut::Rows, b});
    parameters.push_back({p + "ln2", {kWidth}, Cut::Whole, b});
    parameters.push_back({p + "w1", {kWidth, kHidden}, Cut::Columns, b});
    parameters.push_back({p + "w2", {kHidden, kWidth}, Cut::Rows, b});
  }
  parameters.push_back({"final_norm", {kWidth}, Cut::Whole, kBlocks});
  return parameters;
}

/// A group of devices running TP `tp` x DP (size / tp) on one stage.
struct Group {
  Ints devices;
  int64_t tp = 1;
  int64_t stage = 0;
};

struct Strategy {
  std::string name;
  int64_t stages = 1;
  std::vector<Group> groups;
};

Ints range(int64_t begin, int64_t end) {
  Ints devices;
  for (int64_t d = begin; d < end; ++d)
    devices.push_back(d);
  return devices;
}

std::vector<Strategy> strategiesOn(int64_t n) {
  std::vector<Strategy> s;
  s.push_back({"DP", 1, {{range(0, n), 1, 0}}});
  for (int64_t tp : {8, 4, 2})
    s.push_back({"TP" + std::to_string(tp), 1, {{range(0, n), tp, 0}}});
  s.push_back({"PP2.TP4", 2,
               {{range(0, n / 2), 4, 0}, {range(n / 2, n), 4, 1}}});
  s.push_back({"PP4.TP2", 4, {}});
  for (int64_t stage = 0; stage < 4; ++stage)
    s.back().groups.push_back(
        {range(stage * n / 4, (stage + 1) * n / 4), 2, stage});
  int64_t big = n >= 16 ? 8 : 4;
  s.push_back({"mix", 1,
               {{range(0, n / 2), big, 0}, {range(n / 2, n), big / 2, 0}}});
  Ints interleaved;
  for (int64_t node = 0; node < n / kPerNode; ++node)
    for (int64_t i : {0, 2, 4, 6, 1, 3, 5, 7})
      interleaved.push_back(node * kPerNode + i);
  s.push_back({"TP8'", 1, {{interleaved, 8, 0}}});
  return s;
}

int64_t stageOf(const Parameter &p, int64_t stages) {
  if (p.block < 0)
    return 0;
  if (p.block >= kBlocks)
    return stages - 1;
  return p.block * stages / kBlocks;
}

/// The parameter's layout under the strategy: a replicated union of the
/// groups of its stage (one group: that group).
layout::Layout layoutOf(const Parameter &p, const Strategy &strategy) {
  std::vector<layout::Member> members;
  for (const Group &g : strategy.groups) {
    if (g.stage != stageOf(p, strategy.stages))
      continue;
    int64_t size = static_cast<int64_t>(g.devices.size());
    std::vector<layout::Axis> axes;
    if (p.cut == Cut::Whole || g.tp == 1) {
      if (size > 1)
        axes.push_back(layout::Axis::duplicate(size));
    } else {
      if (size / g.tp > 1)
        axes.push_back(layout::Axis::duplicate(size / g.tp));
      axes.push_back(
          layout::Axis::split(p.cut == Cut::Columns ? 1 : 0, g.tp));
    }
    members.push_back({g.devices, {axes}});
  }
  if (members.size() == 1)
    return layout::Layout::group(members[0].devices, members[0].states.axes);
  layout::Layout u;
  u.relation = layout::Relation::Replicated;
  u.members = std::move(members);
  return u;
}

std::vector<layout::SwitchTensor>
switchOf(const std::vector<Parameter> &parameters, const Strategy &from,
         const Strategy &to) {
  std::vector<layout::SwitchTensor> tensors;
  for (const Parameter &p : parameters)
    tensors.push_back({p.name, p.shape, kElementBytes, layoutOf(p, from),
                       layoutOf(p, to)});
  return tensors;
}

/// "value / bound" as text: "-" where both are 0, "inf" where only the
/// bound is.
std::string ratio(int64_t value, int64_t bound) {
  char text[32];
  if (bound == 0)
    return value == 0 ? "-" : "inf";
  std::snprintf(text, sizeof(text), "%.3f",
                static_cast<double>(value) / static_cast<double>(bound));
  return text;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

} // namespace

int main(int argc, char **argv) {
  bool quick = false, all = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick"))
      quick = true;
    else if (!std::strcmp(argv[i], "--all"))
      all = true;
    else {
      std::fprintf(stderr, "usage: %s [--quick] [--all]\n", argv[0]);
      return 2;
    }
  }
  const int repeats = quick ? 3 : 5;
  std::vector<int64_t> deviceCounts =
      quick ? std::vector<int64_t>{8, 16} : std::vector<int64_t>{8, 16, 32, 64};
  std::vector<Parameter> parameters = gptParameters();
  int64_t elements = 0;
  for (const Parameter &p : parameters) {
    int64_t e = 1;
    for (int64_t size : p.shape)
      e *= size;
    elements += e;
  }
  const double mib = 1024.0 * 1024.0;
  std::printf("GPT: %lld blocks, width %lld, MLP %lld, vocabulary %lld: %zu "
              "tensors, %.3fe9 parameters, bf16: %.1f MiB\n",
              (long long)kBlocks, (long long)kWidth, (long long)kHidden,
              (long long)kVocab, parameters.size(), elements / 1e9,
              elements * kElementBytes / mib);
  std::printf("planning time: median of %d runs; ratios: figure / its "
              "minimum or lower bound\n\n",
              repeats);

  // The representative pairs, by strategy name.
  const std::vector<std::pair<std::string, std::string>> representative = {
      {"DP", "TP8"},          {"TP8", "DP"},      {"TP8", "TP4"},
      {"TP4", "TP8"},         {"TP4", "TP2"},     {"TP2", "TP4"},
      {"TP8", "PP2.TP4"},     {"PP2.TP4", "TP8"}, {"PP4.TP2", "PP2.TP4"},
      {"PP2.TP4", "DP"},      {"TP8", "mix"},     {"mix", "DP"},
      {"mix", "TP4"},         {"TP8", "TP8'"}};

  std::printf("%4s %-8s %-8s %3s %9s %10s %7s %7s %7s %7s %7s %7s\n", "dev",
              "from", "to", "rel", "plan ms", "MiB", "/idmin", "/relmin",
              "sent/b", "recv/b", "link/b", "cross/b");
  for (int64_t n : deviceCounts) {
    std::vector<Strategy> strategies = strategiesOn(n);
    layout::Topology topology;
    for (int64_t d = 0; d < n; ++d) {
      topology.nodeOf[d] = d / kPerNode;
      topology.kindOf[d] = "h200";
    }
    std::vector<std::pair<size_t, size_t>> pairs;
    auto index = [&](const std::string &name) {
      for (size_t i = 0; i < strategies.size(); ++i)
        if (strategies[i].name == name)
          return i;
      std::fprintf(stderr, "no strategy %s\n", name.c_str());
      std::exit(1);
    };
    if (all) {
      for (size_t a = 0; a < strategies.size(); ++a)
        for (size_t b = 0; b < strategies.size(); ++b)
          if (a != b)
            pairs.push_back({a, b});
    } else {
      for (auto &[a, b] : representative)
        pairs.push_back({index(a), index(b)});
    }
    std::vector<double> timeRatios, volumeRatios;
    int helped = 0;
    double bestSaving = 0;
    std::string bestPair;
    for (auto [a, b] : pairs) {
      std::vector<layout::SwitchTensor> tensors =
          switchOf(parameters, strategies[a], strategies[b]);
      double ms[2] = {0, 0};
      for (int relabel = 0; relabel < 2; ++relabel) {
        layout::SwitchOptions options;
        options.relabel = relabel == 1;
        std::vector<double> times;
        layout::SwitchPlan plan;
        for (int r = 0; r < repeats; ++r) {
          auto start = std::chrono::steady_clock::now();
          absl::StatusOr<layout::SwitchPlan> result =
              layout::planSwitch(tensors, topology, options);
          auto end = std::chrono::steady_clock::now();
          if (!result.ok()) {
            std::fprintf(stderr, "%s -> %s: %s\n", strategies[a].name.c_str(),
                         strategies[b].name.c_str(),
                         std::string(result.status().message()).c_str());
            return 1;
          }
          times.push_back(
              std::chrono::duration<double, std::milli>(end - start).count());
          plan = *std::move(result);
        }
        ms[relabel] = median(times);
        std::printf(
            "%4lld %-8s %-8s %3s %9.2f %10.1f %7s %7s %7s %7s %7s %7s\n",
            (long long)n, strategies[a].name.c_str(),
            strategies[b].name.c_str(), relabel ? "on" : "off", ms[relabel],
            plan.totalBytes / mib,
            ratio(plan.totalBytes, plan.identityMinimum).c_str(),
            ratio(plan.totalBytes, plan.relabelledMinimum).c_str(),
            ratio(plan.maxSent, plan.maxSentBound).c_str(),
            ratio(plan.maxReceived, plan.maxReceivedBound).c_str(),
            ratio(plan.maxLink, plan.maxLinkBound).c_str(),
            ratio(plan.crossNodeBytes, plan.crossNodeBound).c_str());
        if (relabel && plan.identityMinimum > 0)
          volumeRatios.push_back(static_cast<double>(plan.relabelledMinimum) /
                                 static_cast<double>(plan.identityMinimum));
        if (relabel && plan.relabelledMinimum < plan.identityMinimum) {
          ++helped;
          double saving = 1.0 - static_cast<double>(plan.relabelledMinimum) /
                                    static_cast<double>(plan.identityMinimum);
          if (saving > bestSaving) {
            bestSaving = saving;
            bestPair = strategies[a].name + " -> " + strategies[b].name;
          }
        }
      }
      timeRatios.push_back(ms[1] / ms[0]);
    }
    std::printf("%4lld summary: plan time relabel on/off median %.3f (range "
                "%.3f-%.3f); relabelling moves less on %d of %zu pairs",
                (long long)n, median(timeRatios),
                *std::min_element(timeRatios.begin(), timeRatios.end()),
                *std::max_element(timeRatios.begin(), timeRatios.end()),
                helped, pairs.size());
    if (helped)
      std::printf(", at most %.1f%% less (first: %s)", 100 * bestSaving,
                  bestPair.c_str());
    if (!volumeRatios.empty())
      std::printf("; relabelled / identity minimum over the %zu pairs that "
                  "move anything: median %.3f",
                  volumeRatios.size(), median(volumeRatios));
    std::printf("\n\n");
  }
  return 0;
}
