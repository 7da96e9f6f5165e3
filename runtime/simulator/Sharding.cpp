//===- Sharding.cpp - Global tensors to shards and back -------------------===//

#include "runtime/simulator/Sharding.h"
#include "runtime/simulator/Buffers.h"

#include "dialects/hspmd/IR/HSPMDLayout.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace loom;
using namespace loom::sim;
using interp::Tensor;

FailureOr<Tensor> loom::sim::extractShard(const Tensor &global,
                                          hspmd::UnionAttr layout,
                                          int64_t device, std::string &error) {
  std::optional<hspmd::Shard> shard =
      hspmd::getShard(layout, global.getShape(), device);
  if (!shard) {
    llvm::raw_string_ostream(error)
        << "device " << device << " holds no shard of a "
        << global.getTypeString() << " laid out as " << layout;
    return failure();
  }
  Tensor block = extractBlock(global, shard->offsets, shard->sizes);
  if (shard->reduction == hspmd::ReductionKind::Sum && shard->partialIndex != 0)
    return Tensor(block.getKind(), block.getShape());
  return block;
}

FailureOr<Tensor> loom::sim::assembleGlobal(ArrayRef<int64_t> devices,
                                            ArrayRef<Tensor> shards,
                                            hspmd::UnionAttr layout,
                                            ArrayRef<int64_t> shape,
                                            std::string &error) {
  llvm::raw_string_ostream os(error);
  if (shards.empty()) {
    os << "no shards to put together";
    return failure();
  }
  // Contributions per block: (offsets, partial index) -> the first shard
  // seen; replicas must equal it.
  struct Block {
    SmallVector<int64_t> offsets;
    int64_t partialIndex;
    int64_t source;
  };
  std::vector<Block> blocks;
  std::optional<hspmd::ReductionKind> reduction;
  int64_t numPartials = 1;
  for (auto [i, device] : llvm::enumerate(devices)) {
    std::optional<hspmd::Shard> shard = hspmd::getShard(layout, shape, device);
    if (!shard) {
      os << "device " << device << " is not in the layout " << layout;
      return failure();
    }
    const Tensor &piece = shards[i];
    if (piece.getShape() != ArrayRef<int64_t>(shard->sizes)) {
      os << "device " << device << " holds a " << piece.getTypeString()
         << " but its shard of " << layout << " has shape "
         << llvm::interleaved_array(shard->sizes);
      return failure();
    }
    reduction = shard->reduction;
    numPartials = shard->numPartials;
    auto it = llvm::find_if(blocks, [&](const Block &block) {
      return block.offsets == ArrayRef<int64_t>(shard->offsets) &&
             block.partialIndex == shard->partialIndex;
    });
    if (it == blocks.end()) {
      blocks.push_back(
          {shard->offsets, shard->partialIndex, static_cast<int64_t>(i)});
      continue;
    }
    if (!piece.bitwiseEqual(shards[it->source])) {
      os << "devices " << devices[it->source] << " and " << device
         << " should hold the same replica of the block at "
         << llvm::interleaved_array(shard->offsets) << " but differ";
      return failure();
    }
  }
  // Combine the contributions of every block in contribution order.
  Tensor result(shards.front().getKind(), shape);
  std::vector<bool> placed(blocks.size(), false);
  for (auto [b, block] : llvm::enumerate(blocks)) {
    if (placed[b])
      continue;
    SmallVector<const Tensor *> contributions(numPartials, nullptr);
    for (auto [c, other] : llvm::enumerate(blocks))
      if (other.offsets == block.offsets) {
        contributions[other.partialIndex] = &shards[other.source];
        placed[c] = true;
      }
    if (llvm::is_contained(contributions, nullptr)) {
      os << "the block at " << llvm::interleaved_array(block.offsets)
         << " misses some of its " << numPartials << " contributions";
      return failure();
    }
    Tensor value = *contributions.front();
    if (numPartials > 1) {
      FailureOr<Tensor> combined = reduce(contributions, *reduction, error);
      if (failed(combined))
        return failure();
      value = std::move(*combined);
    }
    insertBlock(result, value, block.offsets);
  }
  return result;
}

namespace {

hspmd::UnionAttr getOwnLayout(func::FuncOp func, unsigned index, bool isResult,
                              StringRef name) {
  return isResult ? func.getResultAttrOfType<hspmd::UnionAttr>(index, name)
                  : func.getArgAttrOfType<hspmd::UnionAttr>(index, name);
}

} // namespace

FailureOr<std::vector<Tensor>>
loom::sim::runSharded(Simulator &simulator, func::FuncOp local,
                      func::FuncOp global, ArrayRef<Tensor> globalArgs) {
  FunctionType localType = local.getFunctionType();
  FunctionType globalType = global.getFunctionType();
  // The global layout recorded on `local` (hspmd.global_layout, as
  // specialisation writes it), or else the layout on `global`.
  auto getLayout = [&](func::FuncOp, unsigned index, bool isResult) {
    if (hspmd::UnionAttr layout =
            getOwnLayout(local, index, isResult, "hspmd.global_layout"))
      return layout;
    return getOwnLayout(global, index, isResult, "hspmd.layout");
  };
  if (localType.getNumInputs() != globalType.getNumInputs() ||
      localType.getNumResults() != globalType.getNumResults())
    return local.emitError()
           << "@" << local.getSymName() << " is not a specialisation of @"
           << global.getSymName()
           << ": the numbers of arguments or results differ";
  // The group: every layout must be on the same single group.
  hspmd::DeviceGroupAttr group;
  auto checkLayout = [&](hspmd::UnionAttr layout, unsigned index,
                         bool isResult) -> LogicalResult {
    StringRef what = isResult ? "result" : "argument";
    if (!layout)
      return local.emitError()
             << what << " #" << index << " of @" << local.getSymName()
             << " has no hspmd.global_layout (nor has @" << global.getSymName()
             << " an hspmd.layout there); a sharded run needs the global "
                "layout of every argument and result";
    if (layout.getNumGroups() != 1)
      return local.emitError()
             << what << " #" << index << " of @" << local.getSymName()
             << " is laid out over several device groups; sharded runs "
                "cover one group";
    if (!group)
      group = layout.getGroups()[0];
    else if (group != layout.getGroups()[0])
      return local.emitError()
             << what << " #" << index << " of @" << local.getSymName()
             << " is on another device group than argument #0";
    return success();
  };
  for (unsigned i = 0; i < localType.getNumInputs(); ++i)
    if (failed(checkLayout(getLayout(local, i, false), i, false)))
      return failure();
  for (unsigned i = 0; i < localType.getNumResults(); ++i)
    if (failed(checkLayout(getLayout(local, i, true), i, true)))
      return failure();
  if (!group)
    return local.emitError() << "@" << local.getSymName()
                             << " has no arguments or results to lay out";
  ArrayRef<int64_t> devices = group.getDevices();
  if (static_cast<int64_t>(devices.size()) != simulator.getNumRanks())
    return local.emitError()
           << "@" << local.getSymName() << " runs on " << devices.size()
           << " devices but the simulator has " << simulator.getNumRanks()
           << " ranks";

  std::vector<std::vector<Tensor>> rankArgs(devices.size());
  for (auto [i, arg] : llvm::enumerate(globalArgs)) {
    hspmd::UnionAttr layout = getLayout(local, i, false);
    for (auto [r, device] : llvm::enumerate(devices)) {
      std::string error;
      FailureOr<Tensor> shard = extractShard(arg, layout, device, error);
      if (failed(shard))
        return local.emitError() << "argument #" << i << ": " << error;
      rankArgs[r].push_back(std::move(*shard));
    }
  }
  auto results = simulator.run(local.getSymName(), std::move(rankArgs));
  if (failed(results))
    return failure();
  std::vector<Tensor> out;
  for (unsigned i = 0; i < localType.getNumResults(); ++i) {
    auto type = dyn_cast<RankedTensorType>(globalType.getResult(i));
    if (!type || !type.hasStaticShape())
      return global.emitError()
             << "result #" << i << " of @" << global.getSymName()
             << " needs a static tensor type";
    std::vector<Tensor> shards;
    for (auto &perRank : *results)
      shards.push_back(perRank[i]);
    std::string error;
    FailureOr<Tensor> value = assembleGlobal(
        devices, shards, getLayout(local, i, true), type.getShape(), error);
    if (failed(value))
      return local.emitError() << "result #" << i << ": " << error;
    out.push_back(std::move(*value));
  }
  return out;
}
