//===- BatchNpy.h - RL batches as .npy arrays -------------------*- C++ -*-===//
//
// The .npy form of a batch, for tools that produce or consume arrays (B
// samples, S the longest one's length; past a sample's length its rows are
// padding, ignored on reading and written as 0, or -1 in node_of):
//
//   tokens.npy        i64 [B, S]
//   lengths.npy       i64 [B]
//   loss_mask.npy     f64 [B, S]
//   weights.npy       f64 [B]
//   advantages.npy    f64 [B]      (PPO/GRPO batches only)
//   old_logprobs.npy  f64 [B, S]   (PPO/GRPO batches only)
//
// Written with the batch, and not read back (they follow from it): its
// trie packed depth first (Batch.h),
//
//   trie_tokens.npy, trie_positions.npy, trie_parents.npy,
//   trie_subtree_end.npy   i64 [U]
//   node_of.npy            i64 [B, S]   the node of each sample's token
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTENDS_RL_BATCHNPY_H
#define LOOM_FRONTENDS_RL_BATCHNPY_H

#include "frontends/rl/Batch.h"

namespace loom::rl {

llvm::Error writeBatchNpy(const Batch &batch, const Trie &trie,
                          llvm::StringRef dir);
llvm::Expected<Batch> readBatchNpy(llvm::StringRef dir);

} // namespace loom::rl

#endif // LOOM_FRONTENDS_RL_BATCHNPY_H
