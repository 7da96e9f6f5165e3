//===- Config.cpp - The run configuration (protobuf text format) ----------===//

#include "frontends/config/Config.h"
#include "frontends/config/Switching.h"

#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cmath>
#include <set>

using namespace mlir;
using namespace loom;
using namespace loom::config;

namespace {

/// Keeps the first text-format error, with its position (1-based).
class FirstError : public google::protobuf::io::ErrorCollector {
public:
  explicit FirstError(std::string name) : name(std::move(name)) {}
  void AddError(int line, int column, const std::string &message) override {
    if (!error.empty())
      return;
    error = name + ":" + std::to_string(line + 1) + ":" +
            std::to_string(column + 1) + ": " + message;
  }
  std::string name, error;
};

} // namespace

FailureOr<Config> loom::config::parseConfig(const std::string &text,
                                            const std::string &name,
                                            std::string &error) {
  Config config;
  google::protobuf::TextFormat::Parser parser;
  FirstError errors(name);
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &config)) {
    error = errors.error.empty() ? name + ": does not parse" : errors.error;
    return failure();
  }
  return config;
}

FailureOr<Config> loom::config::loadConfig(const std::string &path,
                                           std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = path + ": cannot read: " + buffer.getError().message();
    return failure();
  }
  return parseConfig((*buffer)->getBuffer().str(), path, error);
}

bool loom::config::matchGlob(llvm::StringRef pattern, llvm::StringRef name) {
  // Iterative glob with one backtrack point for the last `*`.
  size_t p = 0, n = 0, star = llvm::StringRef::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != llvm::StringRef::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*')
    ++p;
  return p == pattern.size();
}

LogicalResult loom::config::checkConfig(const Config &config,
                                        MLIRContext *context,
                                        std::vector<std::string> &errors) {
  auto report = [&](const std::string &message) { errors.push_back(message); };
  std::set<int> devices;
  for (const Device &device : config.cluster().devices()) {
    if (!devices.insert(device.id()).second)
      report("cluster: device " + std::to_string(device.id()) +
             " is listed twice");
    if (device.id() < 0)
      report("cluster: device id " + std::to_string(device.id()) +
             " is negative");
    if (device.speed() < 0 || device.memory_gib() < 0)
      report("cluster: device " + std::to_string(device.id()) +
             " has a negative speed or memory");
  }
  if (devices.empty())
    report("cluster: no devices");
  std::set<std::string> names;
  for (const Group &group : config.groups()) {
    if (!names.insert(group.name()).second)
      report("group '" + group.name() + "' is defined twice");
    if (group.devices().empty())
      report("group '" + group.name() + "' has no devices");
    std::set<int> seen;
    for (int device : group.devices()) {
      if (!devices.count(device))
        report("group '" + group.name() + "' names device " +
               std::to_string(device) + ", which the cluster does not have");
      if (!seen.insert(device).second)
        report("group '" + group.name() + "' lists device " +
               std::to_string(device) + " twice");
    }
  }
  // Layouts parse as hspmd layouts, on devices of the cluster.
  std::set<int64_t> used;
  for (const Layout &layout : config.layouts()) {
    std::string where = "layout for '" + layout.match() + "'";
    if (layout.match().empty())
      report("a layout has no 'match' pattern");
    // The parser's own message says what is wrong with the layout.
    std::string why;
    Attribute attr;
    {
      ScopedDiagnosticHandler handler(context, [&](Diagnostic &diagnostic) {
        if (why.empty())
          why = diagnostic.str();
        return success();
      });
      attr = parseAttribute(layout.layout(), context);
    }
    if (!attr || !isa<hspmd::UnionAttr, hspmd::StrategySetAttr>(attr)) {
      report(where + ": '" + layout.layout() +
             "' is not an #hspmd.union or #hspmd.strategies" +
             (why.empty() ? "" : ": " + why));
      continue;
    }
    SmallVector<hspmd::UnionAttr> unions;
    if (auto single = dyn_cast<hspmd::UnionAttr>(attr))
      unions.push_back(single);
    else
      for (Attribute strategy : cast<hspmd::StrategySetAttr>(attr).getLayouts())
        if (auto union_ = dyn_cast<hspmd::UnionAttr>(strategy))
          unions.push_back(union_);
    for (hspmd::UnionAttr union_ : unions)
      for (int64_t device : union_.getAllDevices()) {
        used.insert(device);
        if (!devices.count(static_cast<int>(device)))
          report(where + ": device " + std::to_string(device) +
                 " is not in the cluster");
      }
  }
  const Run &run = config.run();
  if (!run.target().empty() && run.target() != "host" &&
      run.target() != "cuda" && run.target() != "ascend" &&
      run.target() != "cluster")
    report("run: unknown target '" + run.target() + "' (host, cuda, ascend or cluster)");
  if (run.steps() < 0)
    report("run: steps must be positive, got " + std::to_string(run.steps()));
  if (!run.optimizer().empty() && run.optimizer() != "adamw" &&
      run.optimizer() != "sgd")
    report("run: unknown optimizer '" + run.optimizer() + "' (adamw or sgd)");
  if (run.learning_rate() < 0)
    report("run: learning_rate must not be negative, got " +
           std::to_string(run.learning_rate()));
  for (const Device &device : config.cluster().devices())
    if (device.peak_tflops() < 0 || !std::isfinite(device.peak_tflops()))
      report("cluster: device " + std::to_string(device.id()) +
             ": peak_tflops must not be negative, got " +
             std::to_string(device.peak_tflops()));
  if (run.weight_decay() < 0)
    report("run: weight_decay must not be negative, got " +
           std::to_string(run.weight_decay()));
  if (run.micro_batches() < 0)
    report("run: micro_batches must be positive, got " +
           std::to_string(run.micro_batches()));
  for (int c = 0; c < run.micro_batch_shapes_size(); ++c) {
    const std::string &entry = run.micro_batch_shapes(c);
    if (entry.empty() ||
        entry.find_first_not_of("0123456789x*,") != std::string::npos)
      report("run.micro_batch_shapes[" + std::to_string(c) + "]: '" + entry +
             "' is not ROWSxLENGTH[*COUNT],... (digits, 'x', '*' and ',' "
             "only; one entry per composition)");
  }
  if (run.micro_batch_shapes_size() && run.micro_batches() > 1)
    report("run: micro_batches and micro_batch_shapes are exclusive (the "
           "shapes give the micro-batches)");
  if (run.micro_batch_shapes_size() > 1 &&
      (run.data().empty() || run.data() == "synthetic"))
    report("run: micro_batch_shapes gives " +
           std::to_string(run.micro_batch_shapes_size()) +
           " compositions, whose steps read per-step data folders (data: "
           "DIR with DIR/step<n>), not synthetic data");
  if (run.has_clip_norm() &&
      !(run.clip_norm() > 0 && std::isfinite(run.clip_norm())))
    report("run: clip_norm must be a positive, finite norm, got " +
           std::to_string(run.clip_norm()) + " (leave it out: no clipping)");
  if (run.has_schedule()) {
    const Schedule &schedule = run.schedule();
    const std::string &decay = schedule.decay();
    bool decays = decay == "linear" || decay == "cosine";
    if (!decay.empty() && decay != "constant" && !decays)
      report("run.schedule: unknown decay '" + decay +
             "' (constant, linear or cosine)");
    if (schedule.warmup_steps() < 0 || schedule.decay_steps() < 0)
      report("run.schedule: warmup_steps and decay_steps must not be "
             "negative");
    if (decays && schedule.decay_steps() <= 0)
      report("run.schedule: decay '" + decay + "' needs decay_steps > 0");
    if (!decays && (schedule.decay_steps() != 0 || schedule.min_lr() != 0))
      report("run.schedule: decay_steps and min_lr need a decay (linear or "
             "cosine)");
    double lr = run.learning_rate() > 0 ? run.learning_rate() : 1e-2;
    if (decays && !(schedule.min_lr() >= 0 && schedule.min_lr() <= lr))
      report("run.schedule: min_lr must lie in [0, learning_rate = " +
             std::to_string(lr) + "], got " +
             std::to_string(schedule.min_lr()));
    int64_t phases = schedule.warmup_steps() + schedule.decay_steps();
    if (run.steps() > 0 && phases > run.steps())
      report("run.schedule: warmup_steps + decay_steps = " +
             std::to_string(phases) + " do not fit the run's " +
             std::to_string(run.steps()) + " steps");
  }
  for (int g = 0; g < run.param_groups_size(); ++g) {
    const ParamGroup &group = run.param_groups(g);
    std::string where = "run.param_groups[" + std::to_string(g) + "]";
    if (group.match().empty())
      report(where + ": no match pattern");
    for (const std::string &pattern : group.match())
      if (pattern.empty() || pattern.find_first_of(",;: '") != std::string::npos)
        report(where + ": pattern '" + pattern +
               "' is empty or holds one of ',;: '' (comma, semicolon, "
               "colon, space, quote)");
    if (!group.has_learning_rate() && !group.has_weight_decay())
      report(where + ": sets neither learning_rate nor weight_decay");
    if (group.has_learning_rate() && !(group.learning_rate() >= 0))
      report(where + ": learning_rate must not be negative");
    if (group.has_weight_decay() && !(group.weight_decay() >= 0))
      report(where + ": weight_decay must not be negative");
  }
  if (config.has_switching()) {
    checkSwitching(config.switching(), config.cluster(), context, used,
                   report);
    if (config.switching().buckets_size() && run.micro_batch_shapes_size())
      report("run.micro_batch_shapes: the switching section's buckets give "
             "the step's shapes (one per bucket); leave micro_batch_shapes "
             "out");
    if (config.switching().buckets_size() && run.micro_batches() > 1)
      report("run.micro_batches: the switching section's buckets give the "
             "step's shapes (one micro-batch each); leave micro_batches out");
  }
  if (run.ranks() != 0 && !used.empty() &&
      run.ranks() != static_cast<int>(used.size()))
    report("run: " + std::to_string(run.ranks()) +
           " ranks, but the layouts "
           "use " +
           std::to_string(used.size()) + " devices (one rank each)");
  return failure(!errors.empty());
}

std::string loom::config::summarize(const Config &config) {
  std::set<int> nodes;
  for (const Device &device : config.cluster().devices())
    nodes.insert(device.node());
  const Run &run = config.run();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << config.cluster().devices_size() << " devices on " << nodes.size()
     << " node(s), " << config.groups_size() << " group(s), "
     << config.layouts_size()
     << " layout(s); run: " << (run.target().empty() ? "host" : run.target())
     << ", " << run.ranks() << " ranks, " << run.steps() << " steps, data "
     << (run.data().empty() ? "synthetic" : run.data()) << ", seed "
     << run.seed();
  if (!run.trace().empty())
    os << ", trace " << run.trace();
  if (config.has_switching())
    os << "; switching: " << config.switching().strategies_size()
       << " strategies (optimizer " << config.switching().optimizer() << "), "
       << config.switching().buckets_size() << " bucket(s), "
       << config.switching().batches_size() << " batch(es)";
  return text;
}
