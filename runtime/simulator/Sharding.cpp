//===- Sharding.cpp - Global tensors to shards and back -------------------===//

#include "runtime/simulator/Sharding.h"
#include "runtime/simulator/Buffers.h"

#include "dialects/hspmd/IR/HSPMDLayout.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>

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

namespace {

/// assembleGlobal for layouts over several groups that hold complete
/// values: paints every shard into the result, checking overlaps against
/// what is there. Replicas inside a group must be bitwise equal; replicas
/// in different groups may have been computed redundantly with different
/// partitionings (a sum in another order), so floating-point ones must
/// agree to a tolerance relative to the larger magnitude: 1e-12 in f64; in
/// f32 and bf16, 1e-4 (or 1e-7 absolute, near zero), a few roundings of
/// their precision accumulated over a step.
double getCrossGroupTolerance(interp::ElementKind kind, double &absolute) {
  absolute = kind == interp::ElementKind::F64 ? 0.0 : 1e-7;
  return kind == interp::ElementKind::F64 ? 1e-12 : 1e-4;
}

FailureOr<Tensor> paintGlobal(ArrayRef<int64_t> devices,
                              ArrayRef<Tensor> shards, hspmd::UnionAttr layout,
                              ArrayRef<int64_t> shape, llvm::raw_ostream &os) {
  Tensor result(shards.front().getKind(), shape);
  size_t elementSize = interp::getElementSize(result.getKind());
  bool isFloat = result.getKind() == interp::ElementKind::F32 ||
                 result.getKind() == interp::ElementKind::F64;
  // Per element: 1 + the member that wrote it first, or 0.
  std::vector<int64_t> written(result.getNumElements(), 0);
  int64_t rank = shape.size();
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
    if (piece.getNumElements() == 0)
      continue;
    SmallVector<int64_t> index(rank, 0);
    for (int64_t local = 0; local < piece.getNumElements(); ++local) {
      int64_t flat = 0;
      for (int64_t d = 0; d < rank; ++d)
        flat = flat * shape[d] + shard->offsets[d] + index[d];
      const std::byte *from = piece.rawData() + local * elementSize;
      std::byte *to = result.rawData() + flat * elementSize;
      int64_t member = layout.getMemberOf(device) + 1;
      if (!written[flat]) {
        std::memcpy(to, from, elementSize);
        written[flat] = member;
      } else if (std::memcmp(to, from, elementSize) != 0) {
        double a = piece.getDouble(local), b = result.getDouble(flat);
        double absolute = 0;
        double relative = getCrossGroupTolerance(piece.getKind(), absolute);
        bool close =
            isFloat && written[flat] != member &&
            (std::abs(a - b) <= relative * std::max(std::abs(a), std::abs(b)) ||
             std::abs(a - b) <= absolute);
        if (!close) {
          os << "device " << device << " holds element "
             << llvm::interleaved_array(index) << " of its block as " << a
             << " but a device of "
             << (written[flat] == member ? "its own" : "another")
             << " group holds it as " << b;
          return failure();
        }
      }
      for (int64_t d = rank - 1; d >= 0 && ++index[d] == shard->sizes[d]; --d)
        index[d] = 0;
    }
  }
  if (llvm::is_contained(written, false)) {
    os << "the devices do not cover the whole tensor under " << layout;
    return failure();
  }
  return result;
}

} // namespace

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
  // Layouts without pending reductions: every element comes from the first
  // shard that holds it, and every other shard holding it must agree (over
  // several groups, blocks of different groups need not line up).
  bool complete = llvm::all_of(devices, [&](int64_t device) {
    std::optional<hspmd::Shard> shard = hspmd::getShard(layout, shape, device);
    return shard && shard->numPartials == 1;
  });
  if (complete && layout.getNumGroups() > 1)
    return paintGlobal(devices, shards, layout, shape, os);
  // Partial across groups: each group's own contribution, put together
  // from its devices under its states, then combined in group order.
  if (layout.getNumGroups() > 1 &&
      layout.getRelation() == hspmd::UnionRelation::Partial) {
    std::vector<Tensor> terms;
    for (auto [member, group] : llvm::enumerate(layout.getGroups())) {
      auto part = hspmd::UnionAttr::get(layout.getContext(), group,
                                        layout.getStates()[member]);
      SmallVector<int64_t> memberDevices;
      std::vector<Tensor> memberShards;
      for (auto [i, device] : llvm::enumerate(devices))
        if (layout.getMemberOf(device) == static_cast<int64_t>(member)) {
          memberDevices.push_back(device);
          memberShards.push_back(shards[i]);
        }
      std::string inner;
      FailureOr<Tensor> term =
          assembleGlobal(memberDevices, memberShards, part, shape, inner);
      if (failed(term)) {
        os << "group " << member << ": " << inner;
        return failure();
      }
      terms.push_back(std::move(*term));
    }
    SmallVector<const Tensor *> pointers;
    for (const Tensor &term : terms)
      pointers.push_back(&term);
    std::string inner;
    FailureOr<Tensor> value = reduce(pointers, layout.getReduction(), inner);
    if (failed(value))
      os << inner;
    return value;
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
    for (int64_t device : group.getDevices()) {
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
