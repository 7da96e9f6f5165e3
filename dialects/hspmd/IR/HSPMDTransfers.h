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
#include "runtime/layout/Transfers.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <map>
#include <string>

namespace loom::hspmd {

/// The plans are the layout core's own types.
using Transfer = layout::Transfer;
using TransferPlan = layout::TransferPlan;
using Reduction = layout::BoxReduction;
using ExchangePlan = layout::ExchangePlan;
using layout::getRingAllReduceBytes;

/// The send/recv plan that turns a tensor of static `shape`, laid out as
/// `from`, into `to`, for elements of `elementBytes` bytes. Failure with
/// `why` set when a layout does not fit the shape, holds partial sums, or
/// the refinement would have more than `maxCells` cells.
mlir::FailureOr<TransferPlan> planTransfers(UnionAttr from, UnionAttr to,
                                            llvm::ArrayRef<int64_t> shape,
                                            int64_t elementBytes,
                                            std::string &why,
                                            int64_t maxCells = 1 << 20);

/// layout::planExchange over attributes; failure with `why` set.
mlir::FailureOr<ExchangePlan> planExchange(UnionAttr from, UnionAttr to,
                                           llvm::ArrayRef<int64_t> shape,
                                           int64_t elementBytes,
                                           std::string &why,
                                           int64_t maxCells = 1 << 20);

} // namespace loom::hspmd

#endif // LOOM_DIALECTS_HSPMD_IR_HSPMDTRANSFERS_H
