//===- loom-batch.cpp - What prefix sharing saves on an RL batch ----------===//
//
//   loom-batch stats BATCH       T, U, T/U, prediction edges and attention
//                                pairs before and after deduplication
//   loom-batch trie BATCH        the trie packed in depth-first order: a
//                                line per node (index, token, position,
//                                parent, subtree end), then each sample's
//                                nodes
//   loom-batch npy BATCH DIR     the batch and its trie as .npy arrays
//   loom-batch bins BATCH N [C_TOK C_ATT]
//                                its samples cut into N data-parallel bins
//                                (frontends/rl/Bins.h; costs per unique
//                                token and per attention pair, default 1
//                                and 0): each rank's samples and load, the
//                                reuse achieved against the ideal, max/mean
//   loom-batch pack DIR --batch B --seq S --capacity C [--bins R]
//            [--vocab V] [--float f64|f32|bf16] [--costs C_TOK C_ATT]
//            BATCH...
//                                the arrays of a training run over the
//                                batches, one step each (frontends/rl/
//                                Pack.h): DIR/<name>.npy for the plain
//                                step's and the deduplicated step's data
//                                arguments, the steps stacked along a
//                                leading dimension (loom-run --train
//                                --data DIR; float arrays in the model's
//                                type, default f64); with R > 1, each step's
//                                samples cut into R bins as `bins` does.
//                                Prints each step's bins and reuse
//   loom-batch pack DIR ... --buckets C1,C2,... BATCH...
//                                shape buckets (nn-prefix-dedup buckets=)
//                                instead of one capacity: each step packed
//                                at the smallest bucket that holds its
//                                largest bin, into DIR/step<n>/<name>.npy
//                                (one batch each, n from 1; loom-run
//                                --train picks the variant per step);
//                                prints each step's bucket and what
//                                padding costs against one capacity
//   loom-batch pack DIR ... --compress TOL BATCH...
//                                PPO/GRPO compression (Pack.h,
//                                compressStep): per shared prediction two
//                                loss entries, the sums of weight *
//                                advantage above and below 0; samples
//                                sharing one must agree on its old
//                                log-probability within TOL. For steps
//                                that divide by `normalizer`, not by the
//                                sum of the weights
//
// BATCH is a JSON Lines file (frontends/rl/Batch.h; README, "RL batches")
// or a folder of the .npy form (frontends/rl/BatchNpy.h).
//
//===----------------------------------------------------------------------===//

#include "frontends/rl/Batch.h"
#include "frontends/rl/BatchNpy.h"
#include "frontends/rl/Bins.h"
#include "frontends/rl/Pack.h"
#include "runtime/interpreter/Npy.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Format.h"

#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static llvm::Expected<loom::rl::Batch> readBatch(llvm::StringRef path) {
  return llvm::sys::fs::is_directory(path) ? loom::rl::readBatchNpy(path)
                                           : loom::rl::readBatchFile(path);
}

/// loom-batch pack DIR options BATCH...
static llvm::Error pack(llvm::ArrayRef<const char *> args) {
  if (args.empty())
    return fail("pack: give the output folder first");
  std::string dir = args.front();
  loom::rl::PackShape shape;
  loom::rl::BinCosts costs;
  std::vector<std::string> batches;
  std::vector<int64_t> buckets;
  std::optional<double> compress;
  loom::interp::ElementKind floatKind = loom::interp::ElementKind::F64;
  for (size_t i = 1; i < args.size(); ++i) {
    llvm::StringRef arg = args[i];
    auto number = [&](int64_t &out) -> llvm::Error {
      if (i + 1 >= args.size() ||
          llvm::StringRef(args[i + 1]).getAsInteger(10, out) || out <= 0 ||
          out > (int64_t{1} << 30))
        return fail("pack: " + arg + " needs a positive integer");
      ++i;
      return llvm::Error::success();
    };
    llvm::Error err = llvm::Error::success();
    if (arg == "--batch")
      err = number(shape.batch);
    else if (arg == "--seq")
      err = number(shape.seq);
    else if (arg == "--capacity")
      err = number(shape.capacity);
    else if (arg == "--buckets") {
      llvm::SmallVector<llvm::StringRef> words;
      llvm::StringRef(i + 1 < args.size() ? args[i + 1] : "")
          .split(words, ',');
      for (llvm::StringRef word : words) {
        int64_t c = 0;
        if (word.getAsInteger(10, c) || c <= 0 || c > (int64_t{1} << 30))
          return fail("pack: --buckets needs positive integers separated "
                      "by commas");
        buckets.push_back(c);
      }
      ++i;
      llvm::sort(buckets);
      if (std::adjacent_find(buckets.begin(), buckets.end()) != buckets.end())
        return fail("pack: --buckets lists a capacity twice");
    }
    else if (arg == "--bins")
      err = number(shape.bins);
    else if (arg == "--vocab")
      err = number(shape.vocab);
    else if (arg == "--float") {
      llvm::StringRef kind = i + 1 < args.size() ? args[i + 1] : "";
      if (kind == "f64")
        floatKind = loom::interp::ElementKind::F64;
      else if (kind == "f32")
        floatKind = loom::interp::ElementKind::F32;
      else if (kind == "bf16")
        floatKind = loom::interp::ElementKind::BF16;
      else
        return fail("pack: --float needs f64, f32 or bf16 (the model's "
                    "float type)");
      ++i;
    } else if (arg == "--compress") {
      double tolerance = -1;
      if (i + 1 >= args.size() ||
          llvm::StringRef(args[i + 1]).getAsDouble(tolerance) ||
          !(tolerance >= 0) || !std::isfinite(tolerance))
        return fail("pack: --compress needs the tolerance (>= 0) within "
                    "which samples sharing a prediction must agree on its "
                    "old log-probability");
      compress = tolerance;
      ++i;
    } else if (arg == "--costs") {
      if (i + 2 >= args.size() ||
          llvm::StringRef(args[i + 1]).getAsDouble(costs.perToken) ||
          llvm::StringRef(args[i + 2]).getAsDouble(costs.perPair) ||
          !(costs.perToken >= 0) || !(costs.perPair >= 0) ||
          !std::isfinite(costs.perToken + costs.perPair) ||
          costs.perToken + costs.perPair <= 0)
        return fail("pack: --costs needs two finite numbers >= 0, not both "
                    "0");
      i += 2;
    } else if (arg.starts_with("--"))
      return fail("pack: unknown option " + arg);
    else
      batches.push_back(arg.str());
    if (err)
      return err;
  }
  if (shape.capacity && !buckets.empty())
    return fail("pack: --capacity or --buckets, not both");
  if (!buckets.empty())
    shape.capacity = buckets.back();
  if (!shape.batch || !shape.seq || !shape.capacity)
    return fail("pack: --batch, --seq and --capacity (or --buckets) are "
                "required (the step's shapes: nn.prefix_dedup of the "
                "deduplicated function)");
  if (batches.empty())
    return fail("pack: no batch files");
  std::vector<loom::rl::PackedStep> steps;
  int64_t packedNodes = 0, realNodes = 0;
  std::map<int64_t, int64_t> stepsAt;
  llvm::raw_ostream &os = llvm::outs();
  for (auto [k, path] : llvm::enumerate(batches)) {
    llvm::Expected<loom::rl::Batch> batch = readBatch(path);
    if (!batch)
      return batch.takeError();
    std::vector<std::vector<int64_t>> bins;
    loom::rl::Statistics stats =
        loom::rl::getStatistics(*batch, loom::rl::buildTrie(*batch));
    if (shape.bins > 1) {
      loom::rl::BinPlan plan = loom::rl::planBins(*batch, shape.bins, costs,
                                                     shape.batch / shape.bins);
      bins = plan.samples;
      os << "step " << k << " (" << path << "): bins: max/mean load "
         << llvm::format("%.3f", plan.meanLoad > 0
                                     ? plan.maxLoad / plan.meanLoad
                                     : 1.0)
         << ", tokens computed " << plan.totalComputed << " (ideal "
         << plan.idealUnique << ", plain " << plan.totalTokens << ")\n";
    }
    llvm::Expected<loom::rl::PackedStep> step =
        loom::rl::packStep(*batch, shape, bins);
    if (!step)
      return fail(path + ": " + llvm::toString(step.takeError()));
    int64_t capacity = shape.capacity;
    if (!buckets.empty()) {
      // The smallest bucket that holds the largest bin.
      int64_t largest = *llvm::max_element(step->binNodes);
      capacity = *llvm::lower_bound(buckets, largest);
      loom::rl::PackShape at = shape;
      at.capacity = capacity;
      step = loom::rl::packStep(*batch, at, bins);
      if (!step)
        return fail(path + ": " + llvm::toString(step.takeError()));
    }
    if (compress) {
      auto entries = [&] {
        const auto &w = step->floats.at("weights");
        return std::count_if(w.begin(), w.end(),
                             [](double x) { return x != 0; });
      };
      int64_t before = entries();
      loom::rl::PackShape at = shape;
      at.capacity = capacity;
      if (llvm::Error err =
              loom::rl::compressStep(*step, *batch, at, *compress))
        return fail(path + ": " + llvm::toString(std::move(err)));
      os << "step " << k << " (" << path << "): compressed: loss entries "
         << before << " -> " << entries() << "\n";
    }
    int64_t nodes = 0;
    for (int64_t n : step->binNodes)
      nodes += n;
    packedNodes += capacity * shape.bins;
    realNodes += nodes;
    ++stepsAt[capacity];
    os << "step " << k << " (" << path << "): samples " << stats.samples
       << ", T " << stats.totalTokens << ", U " << stats.uniqueTokens
       << ", nodes per bin";
    for (int64_t n : step->binNodes)
      os << " " << n;
    os << " of " << capacity << "\n";
    steps.push_back(std::move(*step));
  }
  if (!buckets.empty()) {
    // Padding: what the buckets pack beyond the real nodes, against one
    // capacity (the largest bucket) for every step.
    int64_t single = buckets.back() * shape.bins *
                     static_cast<int64_t>(steps.size());
    os << "buckets:";
    for (int64_t c : buckets)
      os << " " << c << " (" << stepsAt[c] << " steps)";
    os << "; padding " << packedNodes - realNodes << " of " << packedNodes
       << " packed nodes ("
       << llvm::format("%.1f", 100.0 * (packedNodes - realNodes) / packedNodes)
       << "%), one capacity of " << buckets.back() << ": "
       << single - realNodes << " of " << single << " ("
       << llvm::format("%.1f", 100.0 * (single - realNodes) / single)
       << "%)\n";
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return fail("pack: cannot create " + dir + ": " + ec.message());
  // What an earlier pack left in DIR (of the other layout, of more steps,
  // arrays this one does not write) would be read with this one's: every
  // DIR/step<n> folder and every array a pack can write go first.
  {
    static const char *const kArrays[] = {
        "tokens",           "targets",        "trie_nodes",
        "trie_index_targets", "weights",      "advantages",
        "old_logprobs",     "trie_tokens",    "trie_positions",
        "trie_subtree_end", "normalizer"};
    std::error_code ec;
    std::vector<std::string> stale;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end;
         it != end && !ec; it.increment(ec)) {
      llvm::StringRef entry = llvm::sys::path::filename(it->path());
      int64_t n = 0;
      llvm::StringRef rest = entry;
      bool stepFolder = rest.consume_front("step") &&
                        !rest.getAsInteger(10, n);
      bool array = entry.ends_with(".npy") &&
                   llvm::is_contained(kArrays, entry.drop_back(4));
      if (stepFolder || array)
        stale.push_back(it->path());
    }
    if (ec)
      return fail("pack: cannot read " + dir + ": " + ec.message());
    for (const std::string &path : stale)
      if (std::error_code rm = llvm::sys::fs::is_directory(path)
                                   ? llvm::sys::fs::remove_directories(path)
                                   : llvm::sys::fs::remove(path))
        return fail("pack: cannot remove " + path + ": " + rm.message());
  }
  using loom::interp::Tensor;
  auto write = [&](const std::string &name, Tensor tensor) -> llvm::Error {
    std::string path = dir + "/" + name + ".npy";
    return loom::interp::writeNpyFile(path, tensor);
  };
  if (!buckets.empty()) {
    // One folder per step: the steps' shapes differ.
    for (auto [k, step] : llvm::enumerate(steps)) {
      std::string folder = dir + "/step" + std::to_string(k + 1);
      if (std::error_code ec = llvm::sys::fs::create_directories(folder))
        return fail("pack: cannot create " + folder + ": " + ec.message());
      for (const auto &[name, shapeOf] : step.shapes) {
        std::string file = folder + "/" + name + ".npy";
        Tensor tensor =
            step.ints.count(name)
                ? Tensor::fromValues<int64_t>(shapeOf, step.ints.at(name))
                : Tensor::fromDoubles(floatKind, shapeOf,
                                      step.floats.at(name));
        if (llvm::Error err = loom::interp::writeNpyFile(file, tensor))
          return err;
      }
    }
    return llvm::Error::success();
  }
  const loom::rl::PackedStep &first = steps.front();
  for (const auto &[name, shapeOf] : first.shapes) {
    llvm::SmallVector<int64_t> stacked = {
        static_cast<int64_t>(steps.size())};
    stacked.append(shapeOf.begin(), shapeOf.end());
    if (first.ints.count(name)) {
      std::vector<int64_t> all;
      for (const auto &step : steps)
        llvm::append_range(all, step.ints.at(name));
      if (llvm::Error err = write(name, Tensor::fromValues<int64_t>(
                                            stacked, all)))
        return err;
    } else {
      std::vector<double> all;
      for (const auto &step : steps)
        llvm::append_range(all, step.floats.at(name));
      if (llvm::Error err =
              write(name, Tensor::fromDoubles(floatKind, stacked, all)))
        return err;
    }
  }
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  if (argc >= 2 && !std::strcmp(argv[1], "pack")) {
    if (llvm::Error err = pack(llvm::ArrayRef<const char *>(argv + 2,
                                                            argc - 2))) {
      llvm::WithColor::error(llvm::errs(), "loom-batch")
          << llvm::toString(std::move(err)) << "\n";
      return 1;
    }
    return 0;
  }
  bool usage = argc < 3;
  if (!usage) {
    bool stats = !std::strcmp(argv[1], "stats"),
         trie = !std::strcmp(argv[1], "trie"),
         npy = !std::strcmp(argv[1], "npy"),
         bins = !std::strcmp(argv[1], "bins");
    usage = !(((stats || trie) && argc == 3) || (npy && argc == 4) ||
              (bins && (argc == 4 || argc == 6)));
  }
  if (usage) {
    llvm::errs() << "usage: loom-batch stats|trie BATCH, loom-batch npy BATCH "
                    "DIR, loom-batch bins BATCH RANKS [C_TOK C_ATT], or "
                    "loom-batch pack DIR --batch B --seq S --capacity C|--buckets C1,C2,... "
                    "[--bins R] [--vocab V] [--float f64|f32|bf16] [--costs C_TOK "
                    "C_ATT] [--compress TOL] BATCH... "
                    "(BATCH: a .jsonl file or a folder of .npy arrays)\n";
    return 1;
  }
  auto error = [](llvm::Error err) {
    llvm::WithColor::error(llvm::errs(), "loom-batch")
        << llvm::toString(std::move(err)) << "\n";
    return 1;
  };
  llvm::Expected<loom::rl::Batch> batch = readBatch(argv[2]);
  if (!batch)
    return error(batch.takeError());
  loom::rl::Trie trie = loom::rl::buildTrie(*batch);
  llvm::raw_ostream &os = llvm::outs();
  if (!std::strcmp(argv[1], "bins")) {
    int64_t ranks = 0;
    loom::rl::BinCosts costs;
    bool good = !llvm::StringRef(argv[3]).getAsInteger(10, ranks) &&
                ranks >= 1 && ranks <= 65536;
    if (good && argc == 6)
      good = !llvm::StringRef(argv[4]).getAsDouble(costs.perToken) &&
             !llvm::StringRef(argv[5]).getAsDouble(costs.perPair) &&
             costs.perToken >= 0 && costs.perPair >= 0 &&
             costs.perToken + costs.perPair > 0 &&
             std::isfinite(costs.perToken) && std::isfinite(costs.perPair);
    if (!good)
      return error(llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "bins: RANKS must be an integer in [1, 65536] and the costs "
          "finite numbers >= 0, not both 0"));
    os << loom::rl::formatBinPlan(loom::rl::planBins(*batch, ranks, costs));
    return 0;
  }
  if (!std::strcmp(argv[1], "npy")) {
    if (llvm::Error err = loom::rl::writeBatchNpy(*batch, trie, argv[3]))
      return error(std::move(err));
    return 0;
  }
  if (!std::strcmp(argv[1], "stats")) {
    os << loom::rl::formatStatistics(loom::rl::getStatistics(*batch, trie),
                                     argv[2]);
    return 0;
  }
  for (int64_t node = 0; node < trie.getNumNodes(); ++node)
    os << "node " << node << " token " << trie.tokens[node] << " position "
       << trie.positions[node] << " parent " << trie.parents[node]
       << " subtree_end " << trie.subtreeEnd[node] << "\n";
  for (size_t s = 0; s < trie.nodeOf.size(); ++s) {
    os << "sample " << s << ":";
    for (int64_t node : trie.nodeOf[s])
      os << " " << node;
    os << "\n";
  }
  return 0;
}
