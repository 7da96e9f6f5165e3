//===- HSPMDTransfers.cpp - Send/recv plans between layouts ---------------===//
//
// The compiler's view of the layout core's planner (runtime/layout/
// Transfers.h): the attributes convert to the core's layouts, the plans
// come back in the compiler's containers. One planner for the compiler and
// everything that moves data at run time.
//
//===----------------------------------------------------------------------===//

#include "dialects/hspmd/IR/HSPMDTransfers.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "runtime/layout/Transfers.h"

using namespace mlir;
using namespace loom::hspmd;

FailureOr<TransferPlan> loom::hspmd::planTransfers(UnionAttr from, UnionAttr to,
                                                   ArrayRef<int64_t> shape,
                                                   int64_t elementBytes,
                                                   std::string &why,
                                                   int64_t maxCells) {
  absl::StatusOr<layout::TransferPlan> core = layout::planTransfers(
      toLayoutCore(from), toLayoutCore(to),
      std::vector<int64_t>(shape.begin(), shape.end()), elementBytes, maxCells);
  if (!core.ok()) {
    why = std::string(core.status().message());
    return failure();
  }
  return *std::move(core);
}

FailureOr<ExchangePlan> loom::hspmd::planExchange(UnionAttr from, UnionAttr to,
                                                  ArrayRef<int64_t> shape,
                                                  int64_t elementBytes,
                                                  std::string &why,
                                                  int64_t maxCells) {
  absl::StatusOr<layout::ExchangePlan> core = layout::planExchange(
      toLayoutCore(from), toLayoutCore(to),
      std::vector<int64_t>(shape.begin(), shape.end()), elementBytes, maxCells);
  if (!core.ok()) {
    why = std::string(core.status().message());
    return failure();
  }
  return *std::move(core);
}
