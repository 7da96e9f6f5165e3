//===- RunConfig.cpp - Applying a run configuration to a model ------------===//

#include "lib/CAPI/RunConfig.h"
#include "frontends/config/Switching.h"

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/nn/IR/NNDialect.h"
#include "passes/Partitioning/Attributes.h"

#include "mlir/AsmParser/AsmParser.h"

#include <cmath>
#include <locale>
#include <sstream>

using namespace mlir;
using namespace loom;

FailureOr<func::FuncOp> loom::capi::applyRunConfig(ModuleOp module,
                                                   const config::Config &config,
                                                   std::string &error) {
  auto failWith = [&](const llvm::Twine &message) -> FailureOr<func::FuncOp> {
    error = message.str();
    return failure();
  };
  // The forward function: the one with parameters that is not a step.
  SmallVector<func::FuncOp> forwards;
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    bool hasParam = false, isStep = false;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      hasParam |= !!func.getArgAttr(i, nn::NNDialect::getParamAttrName());
    for (unsigned r = 0; r < func.getNumResults(); ++r)
      isStep |= !!func.getResultAttr(r, nn::NNDialect::getLossAttrName());
    if (hasParam && !isStep && !func.isExternal())
      forwards.push_back(func);
  }
  if (forwards.size() != 1)
    return failWith("a run configuration needs a model with one forward "
                    "function (nn.param arguments, returning the loss); "
                    "found " +
                    llvm::Twine(forwards.size()));
  func::FuncOp forward = forwards.front();

  // Strategy sets first (dynamic graph switching); the layouts below then
  // lay out what the strategies leave.
  if (config.has_switching()) {
    std::vector<std::string> shapes;
    if (failed(config::getBucketShapes(forward, config.switching(), shapes,
                                       error)) ||
        failed(config::applySwitching(forward, config.switching(), error)))
      return failure();
  }

  // Layouts by argument name: the first pattern that matches wins; a
  // pattern that matches nothing is an error (a typo, most likely). All are
  // checked before the module changes.
  SmallVector<std::pair<unsigned, hspmd::UnionAttr>> chosen;
  for (const config::Layout &layout : config.layouts()) {
    Attribute attr = parseAttribute(layout.layout(), module.getContext());
    auto unionAttr = dyn_cast_or_null<hspmd::UnionAttr>(attr);
    if (!unionAttr)
      return failWith("layout for '" + layout.match() + "' is not an " +
                      "#hspmd.union<...>: " + layout.layout());
    unsigned matched = 0;
    for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
      auto name = forward.getArgAttrOfType<StringAttr>(
          i, nn::NNDialect::getNameAttrName());
      if (!name || !config::matchGlob(layout.match(), name.getValue()))
        continue;
      ++matched;
      if (!getArgLayoutAttr(forward, i) &&
          llvm::none_of(chosen, [&](auto &entry) { return entry.first == i; }))
        chosen.push_back({i, unionAttr});
    }
    if (!matched)
      return failWith("layout pattern '" + layout.match() +
                      "' matches no argument of @" + forward.getSymName());
  }
  for (auto [index, layout] : chosen)
    setArgLayout(forward, index, layout);

  // The configuration's cluster, where the model has none: the cluster
  // target picks each group's target from its devices' kinds.
  if (!module->hasAttr(hspmd::HSPMDDialect::getClusterAttrName()) &&
      config.cluster().devices_size() > 0) {
    SmallVector<hspmd::DeviceAttr> devices;
    for (const config::Device &device : config.cluster().devices())
      devices.push_back(hspmd::DeviceAttr::get(
          module.getContext(), device.id(), device.kind(),
          llvm::APFloat(device.speed()),
          static_cast<int64_t>(std::ceil(device.memory_gib())), device.node()));
    module->setAttr(hspmd::HSPMDDialect::getClusterAttrName(),
                    hspmd::ClusterAttr::get(module.getContext(), devices));
  }
  return forward;
}

std::string loom::capi::getConfigPipeline(const config::Config &config,
                                          func::FuncOp forward) {
  const config::Run &run = config.run();
  // Switching buckets: one composition of one micro-batch per bucket
  // (checked by applyRunConfig).
  std::vector<std::string> bucketShapes;
  std::string unused;
  if (forward && config.has_switching())
    (void)config::getBucketShapes(forward, config.switching(), bucketShapes,
                                  unused);
  std::ostringstream text;
  text.imbue(std::locale::classic()); // "0.01", whatever the caller's locale
  text.precision(17);
  text << "loom-training-pipeline{optimizer="
       << (run.optimizer() == "sgd" ? "sgd" : "adamw")
       << " lr=" << (run.learning_rate() > 0 ? run.learning_rate() : 1e-2);
  if (run.weight_decay() > 0)
    text << " weight-decay=" << run.weight_decay();
  if (run.micro_batches() > 1)
    text << " micro-batches=" << run.micro_batches();
  if (run.micro_batch_shapes_size()) {
    // (Entries hold digits, 'x', '*' and ',' only, which the
    // configuration checks.)
    text << " micro-batch-shapes='";
    for (int c = 0; c < run.micro_batch_shapes_size(); ++c)
      text << (c ? ";" : "") << run.micro_batch_shapes(c);
    text << "'";
  } else if (!bucketShapes.empty()) {
    text << " micro-batch-shapes='";
    for (size_t c = 0; c < bucketShapes.size(); ++c)
      text << (c ? ";" : "") << bucketShapes[c];
    text << "'";
  }
  if (run.has_clip_norm())
    text << " clip-norm=" << run.clip_norm();
  if (run.has_schedule()) {
    const config::Schedule &schedule = run.schedule();
    text << " warmup-steps=" << schedule.warmup_steps() << " decay="
         << (schedule.decay().empty() ? "constant" : schedule.decay())
         << " decay-steps=" << schedule.decay_steps()
         << " min-lr=" << schedule.min_lr();
  }
  if (run.param_groups_size()) {
    // (Patterns hold none of ",;: '", which the configuration checks.)
    text << " param-groups='";
    for (int g = 0; g < run.param_groups_size(); ++g) {
      const config::ParamGroup &group = run.param_groups(g);
      text << (g ? ";" : "");
      for (int p = 0; p < group.match_size(); ++p)
        text << (p ? "," : "") << group.match(p);
      text << ":";
      if (group.has_learning_rate())
        text << "lr=" << group.learning_rate() << " ";
      if (group.has_weight_decay())
        text << "weight-decay=" << group.weight_decay();
    }
    text << "'";
  }
  text << "},loom-partition-pipeline";
  return text.str();
}
