//===- loom-switch.cpp - Cost models and step plans for graph switching ---===//
//
//   loom-switch fit FILE
//       fits T(s) = a s^2 + b s + c (non-negative coefficients) to measured
//       step times: FILE holds one "LENGTH SECONDS" pair per line (or
//       "LENGTH,SECONDS"; '#' starts a comment). Prints the coefficients in
//       the run configuration's replica syntax and the fit's error (root
//       mean square, and the largest residual relative to its time).
//   loom-switch plan CONFIG [--lengths L,L,...] [--exact]
//       the run configuration's switching section (checked as loom-run
//       --check-config does): for each of its batches (or the one given),
//       the strategy the planner picks, the makespan under every strategy,
//       and each replica's sequences, micro-batches and seconds; --exact
//       also computes the optimum (a dynamic program over subsets; batches
//       of up to 16 sequences) and the plan's ratio to it.
//
// Errors go to stderr as `loom-switch: error: ...` with exit status 1.
//
//===----------------------------------------------------------------------===//

#include "frontends/config/Config.h"
#include "frontends/config/Switching.h"
#include "runtime/switching/StepPlanner.h"

#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/IR/MLIRContext.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace loom;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "loom-switch: error: %s\n", message.c_str());
  return 1;
}

int usage() {
  return fail("usage: loom-switch fit FILE | loom-switch plan CONFIG "
              "[--lengths L,L,...] [--exact]");
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

int fit(const std::string &path) {
  std::ifstream file(path);
  if (!file)
    return fail("cannot read '" + path + "'");
  std::vector<int64_t> lengths;
  std::vector<double> seconds;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    if (size_t hash = line.find('#'); hash != std::string::npos)
      line.resize(hash);
    for (char &c : line)
      if (c == ',')
        c = ' ';
    std::istringstream fields(line);
    std::string first;
    if (!(fields >> first))
      continue;
    char *end = nullptr;
    long long length = std::strtoll(first.c_str(), &end, 10);
    double time = 0;
    std::string extra;
    if (!end || *end || !(fields >> time) || (fields >> extra))
      return fail(path + ":" + std::to_string(number) +
                  ": expected 'LENGTH SECONDS', got '" + line + "'");
    lengths.push_back(length);
    seconds.push_back(time);
  }
  absl::StatusOr<switching::Fit> fitted =
      switching::fitCostModel(lengths, seconds);
  if (!fitted.ok())
    return fail(path + ": " + std::string(fitted.status().message()));
  std::printf("fit of %zu measurements: a: %s b: %s c: %s\n", lengths.size(),
              number(fitted->model.a).c_str(), number(fitted->model.b).c_str(),
              number(fitted->model.c).c_str());
  std::printf("error: rms %s s, largest relative %s\n",
              number(fitted->rmsSeconds).c_str(),
              number(fitted->maxRelativeError).c_str());
  return 0;
}

int plan(const std::string &path, const std::string &lengthsText,
         bool exact) {
  std::string error;
  mlir::FailureOr<config::Config> loaded = config::loadConfig(path, error);
  if (mlir::failed(loaded))
    return fail(error);
  if (!loaded->has_switching())
    return fail(path + ": no switching section to plan");
  mlir::MLIRContext context;
  context.loadDialect<hspmd::HSPMDDialect>();
  std::vector<std::string> problems;
  // (Only the switching section matters here; the run's other checks too,
  // as loom-run would make them.)
  if (mlir::failed(config::checkConfig(*loaded, &context, problems))) {
    for (const std::string &problem : problems)
      std::fprintf(stderr, "%s: %s\n", path.c_str(), problem.c_str());
    return fail(path + ": " + std::to_string(problems.size()) +
                " problem(s)");
  }
  std::vector<switching::Strategy> strategies;
  switching::PlannerOptions options;
  config::getPlannerProblem(loaded->switching(), strategies, options);
  std::vector<std::vector<int64_t>> batches;
  if (!lengthsText.empty()) {
    std::vector<int64_t> lengths;
    std::stringstream items(lengthsText);
    std::string item;
    while (std::getline(items, item, ',')) {
      char *end = nullptr;
      long long value = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || !end || *end)
        return fail("--lengths: '" + item + "' is not a length");
      lengths.push_back(value);
    }
    batches.push_back(std::move(lengths));
  } else {
    for (const config::Batch &batch : loaded->switching().batches())
      batches.emplace_back(batch.lengths().begin(), batch.lengths().end());
  }
  for (size_t b = 0; b < batches.size(); ++b) {
    const std::vector<int64_t> &lengths = batches[b];
    absl::StatusOr<switching::StepPlan> chosen =
        switching::planStep(strategies, lengths, options);
    if (!chosen.ok())
      return fail("batch " + std::to_string(b) + ": " +
                  std::string(chosen.status().message()));
    std::printf("batch %zu: %zu sequences, strategy %s, makespan %s s\n", b,
                lengths.size(), strategies[chosen->strategy].name.c_str(),
                number(chosen->makespan).c_str());
    std::printf("  makespans:");
    for (size_t s = 0; s < strategies.size(); ++s)
      std::printf("%s %s %s", s ? "," : "", strategies[s].name.c_str(),
                  std::isfinite(chosen->makespans[s])
                      ? number(chosen->makespans[s]).c_str()
                      : "(cannot hold the batch)");
    std::printf("\n");
    for (size_t r = 0; r < chosen->replicas.size(); ++r) {
      const switching::ReplicaPlan &replica = chosen->replicas[r];
      std::string sequences, micro;
      for (int64_t index : replica.sequences)
        sequences += (sequences.empty() ? "" : " ") + std::to_string(index) +
                     ":" + std::to_string(lengths[index]);
      for (const switching::MicroBatch &m : replica.microBatches)
        micro += (micro.empty() ? "" : ", ") + std::to_string(m.rows) + "x" +
                 std::to_string(m.length);
      std::printf("  replica %zu: %s s, sequences [%s], micro-batches [%s]\n",
                  r, number(replica.seconds).c_str(), sequences.c_str(),
                  micro.c_str());
    }
    if (exact) {
      absl::StatusOr<double> best =
          switching::optimalMakespan(strategies, lengths, options);
      if (!best.ok())
        return fail("batch " + std::to_string(b) + ": --exact: " +
                    std::string(best.status().message()));
      std::printf("  optimum %s s, plan / optimum %s\n", number(*best).c_str(),
                  number(chosen->makespan / *best).c_str());
    }
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3)
    return usage();
  std::string command = argv[1];
  if (command == "fit" && argc == 3)
    return fit(argv[2]);
  if (command != "plan")
    return usage();
  std::string lengths;
  bool exact = false;
  for (int i = 3; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--lengths" && i + 1 < argc)
      lengths = argv[++i];
    else if (arg == "--exact")
      exact = true;
    else
      return usage();
  }
  return plan(argv[2], lengths, exact);
}
