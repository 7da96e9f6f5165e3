//===- Sharding.cpp - Global tensors to shards and back -------------------===//

#include "runtime/simulator/Sharding.h"
#include "runtime/layout/Shards.h"

#include "dialects/hspmd/IR/HSPMDLayout.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace loom;
using namespace loom::sim;
using interp::Tensor;

layout::DType loom::sim::toLayoutType(interp::ElementKind kind) {
  switch (kind) {
  case interp::ElementKind::F32:
    return layout::DType::F32;
  case interp::ElementKind::F64:
    return layout::DType::F64;
  case interp::ElementKind::BF16:
    return layout::DType::BF16;
  case interp::ElementKind::I1:
    return layout::DType::I1;
  case interp::ElementKind::I32:
    return layout::DType::I32;
  case interp::ElementKind::I64:
    return layout::DType::I64;
  }
  llvm_unreachable("unknown element kind");
}

FailureOr<Tensor> loom::sim::extractShard(const Tensor &global,
                                          hspmd::UnionAttr layout,
                                          int64_t device, std::string &error) {
  std::vector<int64_t> shape(global.getShape().begin(),
                             global.getShape().end());
  absl::StatusOr<layout::Shard> shard =
      layout::getShard(hspmd::toLayoutCore(layout), shape, device);
  if (!shard.ok()) {
    llvm::raw_string_ostream(error)
        << "device " << device << " holds no shard of a "
        << global.getTypeString() << " laid out as " << layout << ": "
        << std::string(shard.status().message());
    return failure();
  }
  Tensor block(global.getKind(), shard->sizes);
  layout::cutShard(global.rawData(), shape, toLayoutType(global.getKind()),
                   *shard, block.rawData());
  return block;
}

FailureOr<Tensor> loom::sim::assembleGlobal(ArrayRef<int64_t> devices,
                                            ArrayRef<Tensor> shards,
                                            hspmd::UnionAttr layout,
                                            ArrayRef<int64_t> shape,
                                            std::string &error) {
  if (shards.empty()) {
    error = "no shards to put together";
    return failure();
  }
  std::vector<layout::ShardData> data;
  for (auto [device, shard] : llvm::zip_equal(devices, shards))
    data.push_back({device, shard.rawData(),
                    std::vector<int64_t>(shard.getShape().begin(),
                                         shard.getShape().end())});
  Tensor result(shards.front().getKind(), shape);
  absl::Status status = layout::assemble(
      hspmd::toLayoutCore(layout), std::vector<int64_t>(shape.begin(), shape.end()),
      toLayoutType(result.getKind()), data, result.rawData());
  if (!status.ok()) {
    error = std::string(status.message());
    return failure();
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
            getOwnLayout(local, index, isResult,
                         hspmd::HSPMDDialect::getGlobalLayoutAttrName()))
      return layout;
    return getOwnLayout(global, index, isResult,
                        hspmd::HSPMDDialect::getLayoutAttrName());
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
  if (auto subset = local->getAttrOfType<DenseI64ArrayAttr>(
          hspmd::HSPMDDialect::getDevicesAttrName());
      subset && subset.size() != static_cast<int64_t>(devices.size()))
    return local.emitError()
           << "@" << local.getSymName() << " runs on devices ["
           << subset.asArrayRef() << "] of its group only (the others hold "
           << "blocks of other shapes); run every specialisation of @"
           << global.getSymName() << " together (leave out --entry)";
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

FailureOr<std::vector<Tensor>>
loom::sim::runSharded(Simulator &simulator, ArrayRef<func::FuncOp> locals,
                      func::FuncOp global, ArrayRef<Tensor> globalArgs) {
  if (locals.size() == 1)
    return runSharded(simulator, locals.front(), global, globalArgs);
  // Several groups' functions: rank r is device r and runs the function of
  // the group that holds it.
  int64_t numRanks = simulator.getNumRanks();
  std::vector<std::string> names(numRanks);
  std::vector<func::FuncOp> byRank(numRanks);
  for (func::FuncOp local : locals) {
    auto group = local->getAttrOfType<hspmd::DeviceGroupAttr>(
        hspmd::HSPMDDialect::getGroupAttrName());
    if (!group)
      return local.emitError() << "@" << local.getSymName()
                               << " has no hspmd.group; run it after "
                                  "--hspmd-specialize";
    if (local.getNumArguments() != globalArgs.size() ||
        local.getNumResults() != global.getNumResults())
      return local.emitError()
             << "@" << local.getSymName() << " is not a specialisation of @"
             << global.getSymName()
             << ": the numbers of arguments or results differ";
    // The devices that run it: all of its group, or the class of them that
    // holds blocks of its shapes (uneven splits inside the group).
    ArrayRef<int64_t> devices = group.getDevices();
    if (auto subset = local->getAttrOfType<DenseI64ArrayAttr>(
            hspmd::HSPMDDialect::getDevicesAttrName()))
      devices = subset.asArrayRef();
    for (int64_t device : devices) {
      if (device < 0 || device >= numRanks)
        return local.emitError()
               << "@" << local.getSymName() << " runs on device " << device
               << " but the simulator has " << numRanks
               << " ranks (rank d is device d)";
      if (byRank[device])
        return local.emitError()
               << "device " << device << " runs both @"
               << byRank[device].getSymName() << " and @" << local.getSymName();
      byRank[device] = local;
      names[device] = local.getSymName().str();
    }
  }
  for (int64_t r = 0; r < numRanks; ++r)
    if (!byRank[r])
      return global.emitError()
             << "no specialisation of @" << global.getSymName()
             << " runs on device " << r << " of the " << numRanks
             << " simulated ranks";
  auto layoutOf = [&](func::FuncOp local, unsigned index,
                      bool isResult) -> FailureOr<hspmd::UnionAttr> {
    hspmd::UnionAttr layout =
        getOwnLayout(local, index, isResult,
                     hspmd::HSPMDDialect::getGlobalLayoutAttrName());
    if (!layout)
      return local.emitError()
             << (isResult ? "result" : "argument") << " #" << index << " of @"
             << local.getSymName() << " has no hspmd.global_layout";
    return layout;
  };
  std::vector<std::vector<Tensor>> rankArgs(numRanks);
  for (auto [i, arg] : llvm::enumerate(globalArgs))
    for (int64_t r = 0; r < numRanks; ++r) {
      FailureOr<hspmd::UnionAttr> layout = layoutOf(byRank[r], i, false);
      if (failed(layout))
        return failure();
      // A device outside the layout (another pipeline stage's argument)
      // gets the empty buffer its function takes (a zero for a 0-d one).
      if (layout->getMemberOf(r) < 0) {
        auto type =
            dyn_cast<RankedTensorType>(byRank[r].getFunctionType().getInput(i));
        if (!type || !type.hasStaticShape() ||
            (type.getRank() != 0 && type.getNumElements() != 0))
          return byRank[r].emitError()
                 << "argument #" << i << " of @" << byRank[r].getSymName()
                 << " is laid out on other devices but is not empty";
        rankArgs[r].push_back(Tensor(arg.getKind(), type.getShape()));
        continue;
      }
      std::string error;
      FailureOr<Tensor> shard = extractShard(arg, *layout, r, error);
      if (failed(shard))
        return byRank[r].emitError() << "argument #" << i << ": " << error;
      rankArgs[r].push_back(std::move(*shard));
    }
  auto results = simulator.run(names, std::move(rankArgs));
  if (failed(results))
    return failure();
  std::vector<Tensor> out;
  FunctionType globalType = global.getFunctionType();
  for (unsigned i = 0; i < globalType.getNumResults(); ++i) {
    auto type = dyn_cast<RankedTensorType>(globalType.getResult(i));
    if (!type || !type.hasStaticShape())
      return global.emitError()
             << "result #" << i << " of @" << global.getSymName()
             << " needs a static tensor type";
    FailureOr<hspmd::UnionAttr> layout = layoutOf(byRank[0], i, true);
    if (failed(layout))
      return failure();
    SmallVector<int64_t> devices = layout->getAllDevices();
    std::vector<Tensor> shards;
    for (int64_t device : devices)
      shards.push_back((*results)[device][i]);
    std::string error;
    FailureOr<Tensor> value =
        assembleGlobal(devices, shards, *layout, type.getShape(), error);
    if (failed(value))
      return global.emitError() << "result #" << i << ": " << error;
    out.push_back(std::move(*value));
  }
  return out;
}
