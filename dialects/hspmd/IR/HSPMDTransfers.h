//===- HSPMDTransfers.h - Send/recv plans between layouts -------*- C++ -*-===//
//
// The layout core's planner (runtime/layout/Transfers.h, which states what
// the plans are: one implementation for the compiler and the runtime) over
// the compiler's attributes and containers.
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

/// layout::BoxReduction: a ring all-reduce of one box among `devices`.
struct Reduction {
  llvm::SmallVector<int64_t> offsets, sizes;
  llvm::SmallVector<int64_t> devices;
};

/// The bytes member `position` of a ring all-reduce over `k` members sends
/// (and receives) for a box of `elements` elements of `elementBytes` bytes.
int64_t getRingAllReduceBytes(int64_t elements, int64_t k, int64_t position,
                              int64_t elementBytes);

/// layout::ExchangePlan: the reductions, then the transfers.
struct ExchangePlan {
  llvm::SmallVector<Reduction> reductions;
  llvm::SmallVector<Transfer> transfers;
  /// Per device: bytes sent and received in all (reductions included).
  std::map<int64_t, int64_t> sent, received;
  int64_t totalBytes = 0;
};

/// layout::planExchange over attributes; failure with `why` set.
mlir::FailureOr<ExchangePlan> planExchange(UnionAttr from, UnionAttr to,
                                           llvm::ArrayRef<int64_t> shape,
                                           int64_t elementBytes,
                                           std::string &why,
                                           int64_t maxCells = 1 << 20);

} // namespace loom::hspmd

#endif // LOOM_DIALECTS_HSPMD_IR_HSPMDTRANSFERS_H
