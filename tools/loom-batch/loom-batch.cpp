//===- loom-batch.cpp - What prefix sharing saves on an RL batch ----------===//
//
//   loom-batch stats FILE.jsonl   T, U, T/U, prediction edges and attention
//                                 pairs before and after deduplication
//   loom-batch trie FILE.jsonl    the trie packed in depth-first order: a
//                                 line per node (index, token, position,
//                                 parent, subtree end), then each sample's
//                                 nodes
//
// The batch format is frontends/rl/Batch.h's (README, "RL batches").
//
//===----------------------------------------------------------------------===//

#include "frontends/rl/Batch.h"

#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

int main(int argc, char **argv) {
  if (argc != 3 || (std::strcmp(argv[1], "stats") && std::strcmp(argv[1], "trie"))) {
    llvm::errs() << "usage: loom-batch stats|trie FILE.jsonl\n";
    return 1;
  }
  llvm::Expected<loom::rl::Batch> batch = loom::rl::readBatchFile(argv[2]);
  if (!batch) {
    llvm::WithColor::error(llvm::errs(), "loom-batch")
        << llvm::toString(batch.takeError()) << "\n";
    return 1;
  }
  loom::rl::Trie trie = loom::rl::buildTrie(*batch);
  llvm::raw_ostream &os = llvm::outs();
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
