//===- Switching.cpp - The run configuration's strategy switching ---------===//

#include "frontends/config/Switching.h"
#include "frontends/config/Config.h"

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/nn/IR/NNDialect.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace mlir;
using namespace loom;
using namespace loom::config;

namespace {

/// `text` as a union, or null with the parser's message in `why`.
hspmd::UnionAttr parseUnion(const std::string &text, MLIRContext *context,
                            std::string &why) {
  ScopedDiagnosticHandler handler(context, [&](Diagnostic &diagnostic) {
    if (why.empty())
      why = diagnostic.str();
    return success();
  });
  return dyn_cast_or_null<hspmd::UnionAttr>(parseAttribute(text, context));
}

std::string strategyWhere(const Strategy &strategy, int index) {
  return "switching.strategies[" + std::to_string(index) + "]" +
         (strategy.name().empty() ? "" : " ('" + strategy.name() + "')");
}

} // namespace

void loom::config::getPlannerProblem(
    const Switching &config, std::vector<switching::Strategy> &strategies,
    switching::PlannerOptions &options) {
  strategies.clear();
  for (const Strategy &strategy : config.strategies()) {
    switching::Strategy planned;
    planned.name = strategy.name();
    planned.switchSeconds = strategy.switch_seconds();
    for (const Replica &replica : strategy.replicas()) {
      switching::Replica r;
      r.cost = {replica.a(), replica.b(), replica.c()};
      r.maxLength = replica.max_length();
      r.maxTokens = replica.max_tokens();
      planned.replicas.push_back(r);
    }
    strategies.push_back(std::move(planned));
  }
  options.buckets.assign(config.buckets().begin(), config.buckets().end());
}

void loom::config::checkSwitching(
    const Switching &switching, const Cluster &cluster, MLIRContext *context,
    std::set<int64_t> &used,
    const std::function<void(const std::string &)> &reportProblem) {
  // (The batches are planned only where nothing else is wrong.)
  int problems = 0;
  auto report = [&](const std::string &message) {
    ++problems;
    reportProblem(message);
  };
  std::set<int> devices;
  for (const Device &device : cluster.devices())
    devices.insert(device.id());
  if (switching.strategies_size() < 2)
    report("switching: " + std::to_string(switching.strategies_size()) +
           " strategies; switching needs two or more");
  // (hspmd-specialize-strategies' default bound: each is a compiled step.)
  if (switching.strategies_size() > 16)
    report("switching: " + std::to_string(switching.strategies_size()) +
           " strategies; at most 16 (each is a step compiled on its own)");
  std::set<std::string> names;
  for (int s = 0; s < switching.strategies_size(); ++s) {
    const Strategy &strategy = switching.strategies(s);
    std::string where = strategyWhere(strategy, s);
    const std::string &name = strategy.name();
    if (name.empty() || !llvm::all_of(name, [](char c) {
          return llvm::isAlnum(c) || c == '_';
        }))
      report(where + ": the name must be letters, digits and '_' (it ends "
                     "the name of the strategy's step)");
    else if (!names.insert(name).second)
      report(where + ": the name is taken by another strategy");
    if (strategy.layouts_size() == 0)
      report(where + ": no layouts");
    for (const Layout &layout : strategy.layouts()) {
      std::string why;
      hspmd::UnionAttr parsed = parseUnion(layout.layout(), context, why);
      if (layout.match().empty())
        report(where + ": a layout has no 'match' pattern");
      if (!parsed) {
        report(where + ": layout for '" + layout.match() + "': '" +
               layout.layout() + "' is not an #hspmd.union" +
               (why.empty() ? "" : ": " + why));
        continue;
      }
      for (int64_t device : parsed.getAllDevices()) {
        used.insert(device);
        if (!devices.count(static_cast<int>(device)))
          report(where + ": layout for '" + layout.match() + "': device " +
                 std::to_string(device) + " is not in the cluster");
      }
    }
    if (strategy.replicas_size() == 0)
      report(where + ": no replicas (each with its cost model)");
    for (int r = 0; r < strategy.replicas_size(); ++r) {
      const Replica &replica = strategy.replicas(r);
      std::string at = where + ": replica " + std::to_string(r);
      std::string missing;
      if (!replica.has_a())
        missing += "'a'";
      if (!replica.has_b())
        missing += std::string(missing.empty() ? "" : ", ") + "'b'";
      if (!replica.has_c())
        missing += std::string(missing.empty() ? "" : ", ") + "'c'";
      if (!missing.empty()) {
        report(at + ": the cost model T(s) = a s^2 + b s + c lacks " +
               missing + " (give every coefficient, 0 where it has none)");
      } else if (absl::Status status = switching::checkCostModel(
                     {replica.a(), replica.b(), replica.c()}, at);
                 !status.ok()) {
        report(std::string(status.message()));
      }
      if (replica.max_length() <= 0)
        report(at + ": max_length must be positive (the longest sequence "
                    "the replica holds), got " +
               std::to_string(replica.max_length()));
      if (replica.max_tokens() < 0)
        report(at + ": max_tokens must not be negative, got " +
               std::to_string(replica.max_tokens()));
      else if (replica.max_tokens() > 0 &&
               replica.max_tokens() < replica.max_length())
        report(at + ": max_tokens (" + std::to_string(replica.max_tokens()) +
               ") must hold a sequence of max_length (" +
               std::to_string(replica.max_length()) + "), or be 0 (no limit)");
      if (replica.devices_size() == 0)
        report(at + ": no devices (the devices the replica runs on)");
      for (int32_t device : replica.devices())
        if (!devices.count(device))
          report(at + ": device " + std::to_string(device) +
                 " is not in the cluster");
    }
    if (!(strategy.switch_seconds() >= 0) ||
        !std::isfinite(strategy.switch_seconds()))
      report(where + ": switch_seconds must be a finite, non-negative time");
  }
  if (switching.optimizer().empty())
    report("switching: no optimizer strategy (the one whose layouts hold the "
           "optimizer state)");
  else if (!names.count(switching.optimizer()))
    report("switching: the optimizer strategy '" + switching.optimizer() +
           "' is not one of the strategies");
  // Buckets: sorted, distinct, positive, and each one some strategy holds.
  int64_t longest = 0;
  std::string holder;
  for (const Strategy &strategy : switching.strategies())
    for (const Replica &replica : strategy.replicas())
      if (replica.max_length() > longest) {
        longest = replica.max_length();
        holder = strategy.name();
      }
  for (int k = 0; k < switching.buckets_size(); ++k) {
    int64_t bucket = switching.buckets(k);
    std::string at = "switching.buckets[" + std::to_string(k) + "]";
    if (bucket <= 0)
      report(at + ": a bucket length must be positive, got " +
             std::to_string(bucket));
    else if (k > 0 && bucket <= switching.buckets(k - 1))
      report(at + ": buckets must be sorted and distinct (" +
             std::to_string(bucket) + " after " +
             std::to_string(switching.buckets(k - 1)) + ")");
    else if (longest > 0 && bucket > longest)
      report(at + ": no strategy holds a sequence of length " +
             std::to_string(bucket) + " (the longest any replica holds is " +
             std::to_string(longest) + ", on '" + holder + "')");
  }
  // Each batch, as the planner sees it (only where the rest is sound).
  if (switching.batches_size() == 0 && switching.strategies_size() >= 2)
    report("switching: no batches (the sequence lengths of each step, for "
           "the planner)");
  std::vector<switching::Strategy> strategies;
  switching::PlannerOptions options;
  getPlannerProblem(switching, strategies, options);
  bool sound = problems == 0;
  for (int b = 0; b < switching.batches_size() && sound; ++b) {
    const Batch &batch = switching.batches(b);
    std::vector<int64_t> lengths(batch.lengths().begin(),
                                 batch.lengths().end());
    if (absl::Status status =
            switching::checkProblem(strategies, lengths, options);
        !status.ok())
      report("switching.batches[" + std::to_string(b) +
             "]: " + std::string(status.message()));
  }
}

LogicalResult loom::config::applySwitching(func::FuncOp forward,
                                           const Switching &switching,
                                           std::string &error) {
  MLIRContext *context = forward.getContext();
  size_t count = static_cast<size_t>(switching.strategies_size());
  // Per argument, its layout under each strategy that names it.
  std::map<unsigned, std::vector<hspmd::UnionAttr>> chosen;
  std::set<int64_t> all;
  for (size_t s = 0; s < count; ++s) {
    const Strategy &strategy = switching.strategies(static_cast<int>(s));
    for (const Layout &layout : strategy.layouts()) {
      std::string why;
      hspmd::UnionAttr parsed = parseUnion(layout.layout(), context, why);
      if (!parsed) {
        error = "strategy '" + strategy.name() + "': layout for '" +
                layout.match() + "' is not an #hspmd.union: " + why;
        return failure();
      }
      for (int64_t device : parsed.getAllDevices())
        all.insert(device);
      unsigned matched = 0;
      for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
        auto name = forward.getArgAttrOfType<StringAttr>(
            i, nn::NNDialect::getNameAttrName());
        if (!name || !matchGlob(layout.match(), name.getValue()))
          continue;
        ++matched;
        std::vector<hspmd::UnionAttr> &layouts = chosen[i];
        layouts.resize(count);
        if (!layouts[s])
          layouts[s] = parsed;
      }
      if (!matched) {
        error = "strategy '" + strategy.name() + "': layout pattern '" +
                layout.match() + "' matches no argument of @" +
                forward.getSymName().str();
        return failure();
      }
    }
  }
  // Where a strategy does not name an argument others name: replicated on
  // every device the strategies use.
  std::string everything = "#hspmd.union<{[";
  for (int64_t device : all)
    everything += (everything.back() == '[' ? "" : ", ") +
                  std::to_string(device);
  everything += "]: [" +
                (all.size() > 1 ? "D:" + std::to_string(all.size()) : "") +
                "]}>";
  std::string why;
  hspmd::UnionAttr replicated = parseUnion(everything, context, why);
  if (!replicated) {
    error = "cannot replicate over the strategies' devices: " + why;
    return failure();
  }
  SmallVector<StringAttr> names;
  int64_t optimizer = 0;
  for (size_t s = 0; s < count; ++s) {
    names.push_back(StringAttr::get(
        context, switching.strategies(static_cast<int>(s)).name()));
    if (switching.strategies(static_cast<int>(s)).name() ==
        switching.optimizer())
      optimizer = static_cast<int64_t>(s);
  }
  for (auto &[index, layouts] : chosen) {
    for (hspmd::UnionAttr &layout : layouts)
      if (!layout)
        layout = replicated;
    forward.setArgAttr(index, hspmd::HSPMDDialect::getLayoutAttrName(),
                       hspmd::StrategySetAttr::get(context, names, layouts,
                                                   optimizer));
  }
  return success();
}

LogicalResult loom::config::getBucketShapes(func::FuncOp forward,
                                            const Switching &switching,
                                            std::vector<std::string> &shapes,
                                            std::string &error) {
  shapes.clear();
  if (switching.buckets_size() == 0)
    return success();
  int64_t rows = -1, length = -1;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    if (!forward.getArgAttr(i, nn::NNDialect::getDataAttrName()))
      continue;
    auto type = dyn_cast<RankedTensorType>(forward.getArgumentTypes()[i]);
    if (!type || type.getRank() < 2)
      continue;
    if (!type.hasStaticShape() || type.getDimSize(0) <= 0 ||
        type.getDimSize(1) <= 0) {
      error = "switching.buckets: data argument #" + std::to_string(i) +
              " of @" + forward.getSymName().str() +
              " has no static rows and length to bucket";
      return failure();
    }
    if (rows >= 0 &&
        (type.getDimSize(0) != rows || type.getDimSize(1) != length)) {
      error = "switching.buckets: the data arguments of @" +
              forward.getSymName().str() +
              " differ in rows or length (" + std::to_string(rows) + "x" +
              std::to_string(length) + " and " +
              std::to_string(type.getDimSize(0)) + "x" +
              std::to_string(type.getDimSize(1)) +
              "); a bucket retypes them all alike";
      return failure();
    }
    rows = type.getDimSize(0);
    length = type.getDimSize(1);
  }
  if (rows < 0) {
    error = "switching.buckets: @" + forward.getSymName().str() +
            " has no data argument of rows x length (rank 2 or more) to "
            "bucket";
    return failure();
  }
  int64_t tokens = rows * length;
  for (int64_t bucket : switching.buckets()) {
    if (bucket <= 0 || tokens % bucket != 0) {
      error = "switching.buckets: a bucket of " + std::to_string(bucket) +
              " does not divide the step's " + std::to_string(tokens) +
              " tokens (" + std::to_string(rows) + "x" +
              std::to_string(length) + " in @" +
              forward.getSymName().str() +
              "); every bucket runs the same tokens per step";
      return failure();
    }
    shapes.push_back(std::to_string(tokens / bucket) + "x" +
                     std::to_string(bucket));
  }
  return success();
}

int64_t loom::config::getBatchBucket(const Switching &switching,
                                     const std::vector<int64_t> &lengths) {
  int64_t longest = 0;
  for (int64_t length : lengths)
    longest = std::max(longest, length);
  for (int64_t bucket : switching.buckets())
    if (bucket >= longest)
      return bucket;
  return -1;
}
