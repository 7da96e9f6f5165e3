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

namespace {

Transfer fromCore(const loom::layout::Transfer &core) {
  Transfer transfer;
  transfer.source = core.source;
  transfer.destination = core.destination;
  transfer.offsets.assign(core.offsets.begin(), core.offsets.end());
  transfer.sizes.assign(core.sizes.begin(), core.sizes.end());
  transfer.bytes = core.bytes;
  return transfer;
}

} // namespace

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
  TransferPlan plan;
  for (const layout::Transfer &transfer : core->transfers)
    plan.transfers.push_back(fromCore(transfer));
  plan.sent = std::move(core->sent);
  plan.received = std::move(core->received);
  plan.totalBytes = core->totalBytes;
  return plan;
}

int64_t loom::hspmd::getRingAllReduceBytes(int64_t elements, int64_t k,
                                           int64_t position,
                                           int64_t elementBytes) {
  return layout::getRingAllReduceBytes(elements, k, position, elementBytes);
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
  ExchangePlan plan;
  for (const layout::BoxReduction &reduction : core->reductions) {
    Reduction box;
    box.offsets.assign(reduction.offsets.begin(), reduction.offsets.end());
    box.sizes.assign(reduction.sizes.begin(), reduction.sizes.end());
    box.devices.assign(reduction.devices.begin(), reduction.devices.end());
    plan.reductions.push_back(std::move(box));
  }
  for (const layout::Transfer &transfer : core->transfers)
    plan.transfers.push_back(fromCore(transfer));
  plan.sent = std::move(core->sent);
  plan.received = std::move(core->received);
  plan.totalBytes = core->totalBytes;
  return plan;
}
