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
//
// BATCH is a JSON Lines file (frontends/rl/Batch.h; README, "RL batches")
// or a folder of the .npy form (frontends/rl/BatchNpy.h).
//
//===----------------------------------------------------------------------===//

#include "frontends/rl/Batch.h"
#include "frontends/rl/BatchNpy.h"
#include "frontends/rl/Bins.h"

#include "llvm/Support/FileSystem.h"

#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>

int main(int argc, char **argv) {
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
                    "DIR, or loom-batch bins BATCH RANKS [C_TOK C_ATT] "
                    "(BATCH: a .jsonl file or a folder of .npy arrays)\n";
    return 1;
  }
  auto error = [](llvm::Error err) {
    llvm::WithColor::error(llvm::errs(), "loom-batch")
        << llvm::toString(std::move(err)) << "\n";
    return 1;
  };
  llvm::Expected<loom::rl::Batch> batch =
      llvm::sys::fs::is_directory(argv[2]) ? loom::rl::readBatchNpy(argv[2])
                                           : loom::rl::readBatchFile(argv[2]);
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
