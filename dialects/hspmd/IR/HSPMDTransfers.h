//===- HSPMDTransfers.h - Send/recv plans between layouts -------*- C++ -*-===//
//
// The general reshard (../shared/DESIGN.md item 2): where no chain of
// collectives applies, because the layouts live on different device groups
// or split with unequal shares, every destination device receives the
// pieces of its block it does not hold already. Pieces are the cells of
// the common refinement of every source and destination block's cut points
// (per dimension); a cell a destination device holds itself in the source
// stays put, any other goes from one of the source devices that hold it,
// chosen to balance the bytes each source sends (the least loaded first,
// then the lowest device id). Adjacent cells with the same sender and
// receiver are merged into larger boxes, so a message is one box.
//
// The plan moves exactly the bytes each destination lacks: nothing is sent
// twice, nothing a device holds is sent to it. Both layouts must hold
// complete values (partial sums are reduced first, by collectives).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_HSPMD_IR_HSPMDTRANSFERS_H
#define LOOM_DIALECTS_HSPMD_IR_HSPMDTRANSFERS_H

#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <map>
#include <string>

namespace loom::hspmd {

/// One message: a box of the global tensor from one device to another.
struct Transfer {
  int64_t source = 0, destination = 0;
  llvm::SmallVector<int64_t> offsets, sizes;
  int64_t bytes = 0;
};

struct TransferPlan {
  /// In a deterministic order: by destination, then source, then offsets.
  llvm::SmallVector<Transfer> transfers;
  /// Per device: bytes sent and received in all.
  std::map<int64_t, int64_t> sent, received;
  int64_t totalBytes = 0;
};

/// The send/recv plan that turns a tensor of static `shape`, laid out as
/// `from`, into `to`, for elements of `elementBytes` bytes. Failure with
/// `why` set when a layout does not fit the shape, holds partial sums, or
/// the refinement would have more than `maxCells` cells.
mlir::FailureOr<TransferPlan> planTransfers(UnionAttr from, UnionAttr to,
                                            llvm::ArrayRef<int64_t> shape,
                                            int64_t elementBytes,
                                            std::string &why,
                                            int64_t maxCells = 1 << 20);

} // namespace loom::hspmd

#endif // LOOM_DIALECTS_HSPMD_IR_HSPMDTRANSFERS_H
