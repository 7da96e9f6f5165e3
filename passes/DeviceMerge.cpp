//===- DeviceMerge.cpp - One program per device of overlapping groups -----===//
//
// Pipeline stages on groups that overlap (a TP2 stage on devices {0, 1}, a
// TP4 stage on {0, 1, 2, 3}) give a device the programs of several groups.
// After specialisation they are merged: the devices are cut into cells
// (devices that belong to the same groups), and each cell gets one program
// that runs, in program order, the ops of every group it belongs to. See
// docs/rationale/heterogeneous.md, "Pipeline stages".
//
// The interleaving is the one the groups' programs would take if they ran
// side by side and met at their exchanges: a group's program runs until it
// reaches the half of an exchange whose other half (in another group of the
// cell) has not been reached yet; the two halves become one exchange that
// takes the sending group's operand and gives the receiving group's result.
// Every other op keeps its place in its own group's order; collectives and
// rank queries are tagged with the group they run over (`hspmd.group`),
// since the program's own group is the cell.
//
//===----------------------------------------------------------------------===//

#include "passes/PartitionSteps.h"
#include "passes/Partitioning/Utils.h"

#include "dialects/hspmd/IR/HSPMDOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

#include <map>

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

namespace {

DeviceGroupAttr groupOf(func::FuncOp func) { return getGroup(func); }

/// The group a whole layout lives on (one-group layouts: pipeline stages).
DeviceGroupAttr ownerOf(UnionAttr layout) {
  if (!layout || layout.getNumGroups() != 1)
    return {};
  return layout.getGroups().front();
}

bool runsOverGroup(Operation *op) {
  return isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, PermuteOp,
             LocalSliceOp, MakePartialOp, AxisIndexOp, SparseReduceScatterOp,
             SparseAllGatherOp, SparseAllGatherStartOp>(op);
}

class DeviceMerger {
public:
  DeviceMerger(func::FuncOp original, ArrayRef<func::FuncOp> locals)
      : original(original), locals(locals.begin(), locals.end()) {}
  LogicalResult run();

private:
  /// Builds the program of the devices `cell`, which belong to the groups
  /// of `members` (indices into `locals`).
  LogicalResult buildCell(ArrayRef<int64_t> cell, ArrayRef<size_t> members,
                          int64_t index, Operation *&after);

  func::FuncOp original;
  SmallVector<func::FuncOp> locals;
  SmallVector<func::FuncOp> cells;
};

LogicalResult DeviceMerger::run() {
  // Cells: devices grouped by the set of groups they belong to.
  std::map<SmallVector<size_t>, SmallVector<int64_t>> byMembership;
  std::map<int64_t, SmallVector<size_t>> membership;
  for (auto [index, local] : llvm::enumerate(locals))
    for (int64_t device : groupOf(local).getDevices())
      membership[device].push_back(index);
  for (auto &[device, members] : membership)
    byMembership[members].push_back(device);
  SmallVector<std::pair<SmallVector<int64_t>, SmallVector<size_t>>> order;
  for (auto &[members, devices] : byMembership)
    order.push_back({devices, members});
  llvm::sort(order, [](const auto &a, const auto &b) {
    return a.first.front() < b.first.front();
  });
  Operation *after = locals.back();
  for (auto [index, cell] : llvm::enumerate(order))
    if (failed(buildCell(cell.first, cell.second, index, after))) {
      for (func::FuncOp built : cells)
        built.erase();
      return failure();
    }
  for (func::FuncOp local : locals)
    local.erase();
  return success();
}

LogicalResult DeviceMerger::buildCell(ArrayRef<int64_t> cell,
                                      ArrayRef<size_t> members, int64_t index,
                                      Operation *&after) {
  MLIRContext *context = original.getContext();
  OpBuilder builder(context);
  std::string name = (original.getSymName() + "_cell" + Twine(index)).str();
  if (SymbolTable::lookupNearestSymbolFrom(original,
                                           StringAttr::get(context, name)))
    return original.emitError() << "cannot merge the programs of overlapping "
                                   "groups: a symbol @"
                                << name << " exists already";

  // Arguments and results: those of the group that owns them where the
  // cell belongs to it, else the (empty) ones of any member group.
  auto pick = [&](unsigned i, bool isResult) -> std::pair<Type, size_t> {
    size_t chosen = members.front();
    for (size_t member : members) {
      func::FuncOp local = locals[member];
      UnionAttr layout = isResult ? getResultGlobalLayout(local, i)
                                  : getArgGlobalLayout(local, i);
      if (ownerOf(layout) == groupOf(local))
        chosen = member;
    }
    FunctionType type = locals[chosen].getFunctionType();
    return {isResult ? type.getResult(i) : type.getInput(i), chosen};
  };
  FunctionType first = locals[members.front()].getFunctionType();
  SmallVector<Type> inputs, results;
  SmallVector<size_t> argOwners, resultOwners;
  for (unsigned i = 0; i < first.getNumInputs(); ++i) {
    auto [type, owner] = pick(i, false);
    inputs.push_back(type);
    argOwners.push_back(owner);
  }
  for (unsigned i = 0; i < first.getNumResults(); ++i) {
    auto [type, owner] = pick(i, true);
    results.push_back(type);
    resultOwners.push_back(owner);
  }
  builder.setInsertionPointAfter(after);
  auto merged = func::FuncOp::create(builder, original.getLoc(), name,
                                     builder.getFunctionType(inputs, results));
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  for (unsigned i = 0; i < first.getNumInputs(); ++i)
    argAttrs.push_back(locals[argOwners[i]].getArgAttrDict(i));
  for (unsigned i = 0; i < first.getNumResults(); ++i)
    resultAttrs.push_back(locals[resultOwners[i]].getResultAttrDict(i));
  merged.setAllArgAttrs(argAttrs);
  merged.setAllResultAttrs(resultAttrs);
  setGroup(merged, DeviceGroupAttr::get(context, cell));
  setSpecializes(merged, original);
  Block *body = merged.addEntryBlock();
  builder.setInsertionPointToStart(body);
  cells.push_back(merged);
  after = merged;

  // Each member group's arguments: the cell's where the group owns them,
  // else an empty tensor.
  SmallVector<IRMapping> mappings(locals.size());
  for (size_t member : members) {
    func::FuncOp local = locals[member];
    for (auto [i, arg] : llvm::enumerate(local.getArguments())) {
      if (argOwners[i] == member && arg.getType() == inputs[i])
        mappings[member].map(arg, body->getArgument(i));
      else if (isa<RankedTensorType>(arg.getType()))
        mappings[member].map(
            arg, createEmptyTensor(builder, arg.getLoc(), arg.getType()));
      else
        return local.emitError()
               << "argument #" << i << " of type " << arg.getType()
               << " cannot be merged across overlapping groups";
    }
  }

  // Run the member groups' programs side by side, meeting at exchanges.
  SmallVector<Operation *> cursor;
  for (size_t member : members)
    cursor.push_back(&locals[member].getBody().front().front());
  auto pairOf = [](Operation *op) { return getExchangePair(op); };
  // The groups holding each pair's halves.
  DenseMap<int64_t, SmallVector<size_t, 2>> halves;
  for (size_t position = 0; position < members.size(); ++position)
    locals[members[position]].walk([&](ExchangeOp op) {
      if (std::optional<int64_t> pair = pairOf(op))
        halves[*pair].push_back(position);
    });
  auto clone = [&](Operation *op, size_t member) {
    Operation *copy = builder.clone(*op, mappings[member]);
    removeMergeTags(copy);
    if (runsOverGroup(copy))
      setGroup(copy, groupOf(locals[member]));
  };
  SmallVector<Value> returned(results.size());
  size_t done = 0;
  while (done < members.size()) {
    bool progress = false;
    for (size_t position = 0; position < members.size(); ++position) {
      size_t member = members[position];
      while (Operation *op = cursor[position]) {
        if (auto ret = dyn_cast<func::ReturnOp>(op)) {
          for (auto [i, value] : llvm::enumerate(ret.getOperands()))
            if (resultOwners[i] == member)
              returned[i] = mappings[member].lookup(value);
          cursor[position] = nullptr;
          ++done;
          progress = true;
          break;
        }
        std::optional<int64_t> pair = pairOf(op);
        if (pair && halves[*pair].size() == 2) {
          // Both halves run here: wait for the other group to reach its
          // half, then make them one exchange.
          size_t other = halves[*pair][0] == position ? halves[*pair][1]
                                                      : halves[*pair][0];
          Operation *partner = cursor[other];
          if (!partner || pairOf(partner) != pair)
            break;
          auto mine = cast<ExchangeOp>(op);
          auto theirs = cast<ExchangeOp>(partner);
          // The sending half is the one on the source's group.
          bool mineSends = ownerOf(mine.getSource()) == groupOf(locals[member]);
          ExchangeOp send = mineSends ? mine : theirs;
          ExchangeOp receive = mineSends ? theirs : mine;
          size_t sendMember = mineSends ? member : members[other];
          size_t receiveMember = mineSends ? members[other] : member;
          auto combined = ExchangeOp::create(
              builder, receive.getLoc(), receive.getType(),
              mappings[sendMember].lookup(send.getInput()), send.getShapeAttr(),
              send.getSource(), send.getTarget());
          mappings[receiveMember].map(receive.getResult(),
                                      combined.getResult());
          mappings[sendMember].map(
              send.getResult(),
              createEmptyTensor(builder, send.getLoc(), send.getType()));
          cursor[position] = op->getNextNode();
          cursor[other] = partner->getNextNode();
          progress = true;
          continue;
        }
        clone(op, member);
        cursor[position] = op->getNextNode();
        progress = true;
      }
    }
    if (!progress)
      return original.emitError()
             << "the programs of the overlapping groups of devices "
             << DeviceGroupAttr::get(context, cell)
             << " wait for each other at their exchanges (a bug in the stage "
                "partitioning)";
  }
  SmallVector<Value> values;
  for (auto [i, value] : llvm::enumerate(returned))
    values.push_back(
        value ? value
              : createEmptyTensor(builder, original.getLoc(), results[i]));
  func::ReturnOp::create(builder, original.getLoc(), values);
  // Empty tensors nothing reads.
  SmallVector<Operation *> unused;
  merged.walk([&](arith::ConstantOp op) {
    if (op->use_empty())
      unused.push_back(op);
  });
  for (Operation *op : unused)
    op->erase();
  return success();
}

} // namespace

LogicalResult loom::mergeOverlappingGroups(func::FuncOp original,
                                           ArrayRef<func::FuncOp> locals) {
  bool overlap = false;
  for (size_t i = 0; i < locals.size() && !overlap; ++i)
    for (size_t j = 0; j < i && !overlap; ++j)
      for (int64_t device : groupOf(locals[i]).getDevices())
        overlap |= llvm::is_contained(groupOf(locals[j]).getDevices(), device);
  if (!overlap) {
    // Disjoint groups: every device runs its group's program as it is.
    for (func::FuncOp local : locals)
      local.walk([](Operation *op) { removeMergeTags(op); });
    return success();
  }
  return DeviceMerger(original, locals).run();
}
