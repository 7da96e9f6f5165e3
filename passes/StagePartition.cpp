//===- StagePartition.cpp - Split a function into pipeline stages ---------===//
//
// A function whose layouts lie on several device groups, each
// tensor on one of them (layers placed on different groups, each with its
// own strategy: pipeline stages), is split into one function per group.
// See docs/rationale/heterogeneous.md, "Pipeline stages".
//
// 1. Placement. Every op runs on one group. Annotations and reshards run
//    on their layout's group (a reshard between groups on its target's),
//    arguments with a layout live on its group. Any other op runs where
//    most of its operand bytes already are (ties to the earlier group), so
//    the backward of a stage stays on the stage: a weight gradient reads
//    the stage's activations and weights and only the incoming gradient
//    crosses. Ops without placed operands (fills, iotas, arguments without
//    layouts) run where their first consumer does; optimizer state and
//    updates live with their parameter. Placement repeats until
//    nothing changes; what is left runs on the first group.
// 2. Parts. Group g's part has every argument and result of the original:
//    those that live on g with their type, the others as empty tensors
//    (every dimension 0: the group holds nothing of them). It has the ops
//    placed on g, in program order. Where an op reads a value of another
//    group (other than one an op without operands makes: that is made
//    again), both parts get an `hspmd.exchange` at that point of the program
//    (so every pair of groups meets in the same order): the sending group's
//    takes the value and yields an empty tensor, the receiving group's
//    takes an empty tensor and yields the value. A reshard the user writes
//    between groups is such an exchange between the two layouts as written.
// 3. Each part is laid out inside its group; an exchange's `from` and `to`
//    are then the layouts its two sides chose.
//
//===----------------------------------------------------------------------===//

#include "passes/PartitionSteps.h"
#include "passes/Partitioning/Utils.h"

#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/nn/IR/NNDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/ScopeExit.h"

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

namespace {

/// `type` with every dimension 0: what a group holds of a tensor that lives
/// on another group (a 0-d tensor stays 0-d: a zero stands in for it).
Type emptyType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return type;
  return tensor.clone(SmallVector<int64_t>(tensor.getRank(), 0));
}

int64_t bytesOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return tensor.getNumElements() *
         ((tensor.getElementType().getIntOrFloatBitWidth() + 7) / 8);
}

class StagePartitioner {
public:
  StagePartitioner(func::FuncOp func, const PropagationCostModel &model)
      : func(func), context(func.getContext()), model(model) {}

  LogicalResult run(int64_t &numParts, int64_t &numReshards);

private:
  LogicalResult collect();
  LogicalResult place();
  LogicalResult buildParts();
  LogicalResult compose();

  /// The group index of `layout`'s group.
  int64_t groupOf(Attribute layout) const {
    auto group = cast<UnionAttr>(layout).getGroups().front();
    return llvm::find(groups, group) - groups.begin();
  }

  func::FuncOp func;
  MLIRContext *context;
  /// How propagation lays out each stage.
  const PropagationCostModel &model;
  SmallVector<DeviceGroupAttr> groups;
  /// Where every tensor value lives and every op runs (group indices).
  DenseMap<Value, int64_t> placement;
  DenseMap<Operation *, int64_t> opPlacement;
  /// The group each function result lives on.
  SmallVector<int64_t> resultGroups;

  SmallVector<func::FuncOp> parts;
  /// The exchanges, as (sending op, receiving op); user reshards between
  /// groups keep their layouts.
  SmallVector<std::pair<ExchangeOp, ExchangeOp>> exchanges;
};

LogicalResult StagePartitioner::collect() {
  SmallVector<UserUnion> users;
  if (failed(collectUserUnions(func, users)))
    return failure();
  for (const UserUnion &user : users) {
    DeviceGroupAttr group = user.layout.getGroups().front();
    if (!llvm::is_contained(groups, group))
      groups.push_back(group);
  }
  if (!func.getBody().hasOneBlock())
    return func.emitError("has several blocks; pipeline stages handle "
                          "straight-line functions so far");
  return success();
}

LogicalResult StagePartitioner::place() {
  Block &body = func.getBody().front();
  for (BlockArgument arg : body.getArguments())
    if (Attribute layout = getArgLayoutAttr(func, arg.getArgNumber()))
      placement[arg] = groupOf(layout);

  auto placeOp = [&](Operation &op, int64_t group) {
    opPlacement[&op] = group;
    for (Value result : op.getResults())
      placement[result] = group;
  };
  // An optimizer update runs with the parameter it updates (its result
  // must have the parameter's type in every part).
  DenseMap<Operation *, Value> updates;
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  for (auto [index, value] : llvm::enumerate(returnOp.getOperands()))
    if (auto arg = func.getResultAttrOfType<IntegerAttr>(
            index, nn::NNDialect::getUpdatesAttrName()))
      if (Operation *producer = value.getDefiningOp();
          producer && arg.getInt() >= 0 &&
          arg.getInt() < func.getNumArguments())
        updates[producer] = func.getArgument(arg.getInt());

  bool changed = true;
  while (changed) {
    changed = false;
    // Forward: by the operands' bytes.
    for (Operation &op : body) {
      if (opPlacement.count(&op) || isa<func::ReturnOp>(op))
        continue;
      if (Value param = updates.lookup(&op)) {
        if (placement.count(param)) {
          placeOp(op, placement.lookup(param));
          changed = true;
        }
        continue;
      }
      if (auto annotate = dyn_cast<AnnotateOp>(op)) {
        placeOp(op, groupOf(annotate.getLayout()));
        changed = true;
        continue;
      }
      if (auto reshard = dyn_cast<ReshardOp>(op)) {
        placeOp(op, groupOf(reshard.getTarget()));
        changed = true;
        continue;
      }
      SmallVector<int64_t> bytes(groups.size(), 0);
      bool any = false;
      for (Value operand : op.getOperands()) {
        auto it = placement.find(operand);
        if (it == placement.end())
          continue;
        bytes[it->second] += std::max<int64_t>(bytesOf(operand.getType()), 1);
        any = true;
      }
      if (!any)
        continue;
      placeOp(op, llvm::max_element(bytes) - bytes.begin());
      changed = true;
    }
    // Backward: what has no placed operands runs where its first consumer
    // does; arguments without layouts live there.
    auto firstUser = [&](Value value) -> std::optional<int64_t> {
      Operation *first = nullptr;
      for (Operation *user : value.getUsers()) {
        if (isa<func::ReturnOp>(user) || !opPlacement.count(user))
          continue;
        if (!first || user->isBeforeInBlock(first))
          first = user;
      }
      if (!first)
        return std::nullopt;
      return opPlacement.lookup(first);
    };
    for (BlockArgument arg : body.getArguments()) {
      if (placement.count(arg) || !isa<RankedTensorType>(arg.getType()))
        continue;
      // Optimizer state lives with its parameter.
      if (auto state = func.getArgAttrOfType<IntegerAttr>(
              arg.getArgNumber(), nn::NNDialect::getStateAttrName())) {
        int64_t param = state.getInt();
        if (param >= 0 && param < func.getNumArguments() &&
            placement.count(func.getArgument(param))) {
          placement[arg] = placement.lookup(func.getArgument(param));
          changed = true;
        }
        continue;
      }
      if (std::optional<int64_t> group = firstUser(arg)) {
        placement[arg] = *group;
        changed = true;
      }
    }
    for (Operation &op : llvm::reverse(body)) {
      if (opPlacement.count(&op) || isa<func::ReturnOp>(op))
        continue;
      for (Value result : op.getResults())
        if (std::optional<int64_t> group = firstUser(result)) {
          placeOp(op, *group);
          changed = true;
          break;
        }
    }
  }
  for (BlockArgument arg : body.getArguments())
    if (!placement.count(arg))
      placement[arg] = 0;
  for (Operation &op : body)
    if (!opPlacement.count(&op) && !isa<func::ReturnOp>(op))
      placeOp(op, 0);
  return success();
}

LogicalResult StagePartitioner::buildParts() {
  OpBuilder builder(context);
  Operation *after = func;
  Block &body = func.getBody().front();
  FunctionType type = func.getFunctionType();
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  // A result lives where its layout says, or where it is computed.
  for (auto [index, value] : llvm::enumerate(returnOp.getOperands())) {
    Attribute layout = getResultLayoutAttr(func, index);
    resultGroups.push_back(layout ? groupOf(layout) : placement.lookup(value));
  }

  SmallVector<IRMapping> mappings(groups.size());
  SmallVector<OpBuilder> builders;
  for (int64_t g = 0, e = groups.size(); g < e; ++g) {
    SmallVector<Type> inputs, results;
    for (BlockArgument arg : body.getArguments())
      inputs.push_back(placement.lookup(arg) == g ? arg.getType()
                                                  : emptyType(arg.getType()));
    for (auto [index, resultType] : llvm::enumerate(type.getResults()))
      results.push_back(resultGroups[index] == g ? resultType
                                                 : emptyType(resultType));
    // Layouts stay on the arguments and results of their own group.
    SmallVector<DictionaryAttr> argAttrs, resultAttrs;
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
      NamedAttrList list(func.getArgAttrDict(i));
      if (placement.lookup(func.getArgument(i)) != g)
        eraseLayout(list);
      argAttrs.push_back(list.getDictionary(context));
    }
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
      NamedAttrList list(func.getResultAttrDict(i));
      if (resultGroups[i] != g)
        eraseLayout(list);
      resultAttrs.push_back(list.getDictionary(context));
    }
    FailureOr<func::FuncOp> created = createPart(
        builder, func, g, builder.getFunctionType(inputs, results), argAttrs,
        resultAttrs, after, "cannot split into stages");
    if (failed(created))
      return failure();
    func::FuncOp part = *created;
    mappings[g].map(body.getArguments(), part.getArguments());
    builders.emplace_back(OpBuilder::atBlockEnd(&part.getBody().front()));
    parts.push_back(part);
    after = part;
  }

  auto markPair = [&](ExchangeOp send, ExchangeOp receive) {
    int64_t id = static_cast<int64_t>(exchanges.size());
    setExchangePair(send, id);
    setExchangePair(receive, id);
  };
  // Group `g`'s value of `value`: its own, or received from the group that
  // holds it, once per value and group.
  DenseMap<std::pair<Value, int64_t>, Value> received;
  auto valueIn = [&](Value value, int64_t g, Location loc) -> Value {
    int64_t from = placement.lookup(value);
    if (from == g)
      return mappings[g].lookup(value);
    auto key = std::make_pair(value, g);
    if (Value done = received.lookup(key))
      return done;
    auto tensor = dyn_cast<RankedTensorType>(value.getType());
    // What an op without operands makes (a constant, a fill, an iota) is
    // made again where it is used rather than sent.
    Operation *producer = value.getDefiningOp();
    bool remake = producer && producer->getNumOperands() == 0 &&
                  producer->getNumRegions() == 0;
    if (remake || !tensor || !tensor.hasStaticShape()) {
      // Anything else cannot cross without an exchange, which moves static
      // tensors.
      if (!remake) {
        emitError(loc) << "uses a value of type " << value.getType()
                       << " computed on another pipeline stage; only static "
                          "tensors and constants cross stages";
        return Value();
      }
      Operation *copy = builders[g].clone(*producer);
      for (auto [original, copied] :
           llvm::zip_equal(producer->getResults(), copy->getResults()))
        received[std::make_pair(Value(original), g)] = copied;
      return received.lookup(key);
    }
    auto shape = builders[g].getDenseI64ArrayAttr(tensor.getShape());
    // Placeholders until the parts are laid out (compose).
    auto whole = [&](int64_t group) {
      return UnionAttr::get(
          context, groups[group],
          DistStatesAttr::get(
              context, {Axis::duplicate(groups[group].getDevices().size())}));
    };
    auto send = ExchangeOp::create(builders[from], loc, emptyType(tensor),
                                   mappings[from].lookup(value), shape,
                                   whole(from), whole(g));
    Value empty = createEmptyTensor(builders[g], loc, tensor);
    auto receive = ExchangeOp::create(builders[g], loc, tensor, empty, shape,
                                      whole(from), whole(g));
    exchanges.push_back({send, receive});
    markPair(send, receive);
    received[key] = receive.getResult();
    return receive.getResult();
  };

  // Every op a part gets for original op i is tagged with i (and the two
  // halves of an exchange with a pair number), so that the programs of
  // overlapping groups can later be merged per device in program order
  // (Specialization.cpp).
  SmallVector<Operation *> tagged(groups.size(), nullptr);
  auto tagNew = [&](int64_t seq) {
    for (int64_t g = 0, e = groups.size(); g < e; ++g) {
      Block *block =
          parts[g].getBody().empty() ? nullptr : &parts[g].getBody().front();
      if (!block)
        continue;
      Operation *from = tagged[g]
                            ? tagged[g]->getNextNode()
                            : (block->empty() ? nullptr : &block->front());
      for (Operation *op = from; op; op = op->getNextNode())
        setStageSeq(op, seq);
      if (!block->empty())
        tagged[g] = &block->back();
    }
  };
  int64_t seq = 0;
  for (Operation &op : body) {
    llvm::scope_exit done([&] { tagNew(seq++); });
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      // Every result first (receiving one may add a send to another
      // part), then the returns.
      SmallVector<SmallVector<Value>> values(groups.size());
      for (int64_t g = 0, e = groups.size(); g < e; ++g)
        for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
          if (resultGroups[index] != g) {
            values[g].push_back(Value());
            continue;
          }
          Value local = valueIn(value, g, ret.getLoc());
          if (!local)
            return failure();
          values[g].push_back(local);
        }
      for (int64_t g = 0, e = groups.size(); g < e; ++g) {
        for (auto [index, value] : llvm::enumerate(ret.getOperands()))
          if (!values[g][index])
            values[g][index] =
                createEmptyTensor(builders[g], ret.getLoc(), value.getType());
        func::ReturnOp::create(builders[g], ret.getLoc(), values[g]);
      }
      continue;
    }
    if (op.getNumRegions() != 0)
      return op.emitError("has regions; pipeline stages handle straight-line "
                          "functions so far");
    int64_t g = opPlacement.lookup(&op);
    if (auto reshard = dyn_cast<ReshardOp>(op)) {
      int64_t from = groupOf(reshard.getSource());
      if (from != g) {
        // The user's own change between groups: pinned on both sides.
        Value input = valueIn(reshard.getInput(), from, op.getLoc());
        if (!input)
          return failure();
        auto tensor = cast<RankedTensorType>(reshard.getType());
        if (!tensor.hasStaticShape())
          return op.emitError("moves a tensor of dynamic shape between "
                              "pipeline stages; exchanges move static "
                              "tensors");
        auto shape = builders[g].getDenseI64ArrayAttr(tensor.getShape());
        Value pinned = AnnotateOp::create(builders[from], op.getLoc(), input,
                                          reshard.getSource())
                           .getResult();
        auto send = ExchangeOp::create(builders[from], op.getLoc(),
                                       emptyType(tensor), pinned, shape,
                                       cast<UnionAttr>(reshard.getSource()),
                                       cast<UnionAttr>(reshard.getTarget()));
        Value empty = createEmptyTensor(builders[g], op.getLoc(), tensor);
        auto receive =
            ExchangeOp::create(builders[g], op.getLoc(), tensor, empty, shape,
                               cast<UnionAttr>(reshard.getSource()),
                               cast<UnionAttr>(reshard.getTarget()));
        // The exchange's layouts are what the two sides are laid out as
        // (compose); the annotations hold the user's.
        exchanges.push_back({send, receive});
        markPair(send, receive);
        Value result =
            AnnotateOp::create(builders[g], op.getLoc(), receive.getResult(),
                               reshard.getTarget())
                .getResult();
        mappings[g].map(reshard.getResult(), result);
        continue;
      }
    }
    SmallVector<Value> operands;
    for (Value operand : op.getOperands()) {
      Value value = valueIn(operand, g, op.getLoc());
      if (!value)
        return failure();
      operands.push_back(value);
    }
    Operation *clone = builders[g].clone(op, mappings[g]);
    clone->setOperands(operands);
  }
  return success();
}

LogicalResult StagePartitioner::compose() {
  for (auto [send, receive] : exchanges) {
    UnionAttr source = getOperandLayout(send, 0);
    UnionAttr target = getResultLayout(receive, 0);
    for (ExchangeOp op : {send, receive}) {
      op.setSourceAttr(source);
      op.setTargetAttr(target);
    }
  }
  // Arguments and results: the layout their own group's part gave them.
  SmallVector<UnionAttr> argWholes, resultWholes;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    func::FuncOp owner = parts[placement.lookup(func.getArgument(i))];
    argWholes.push_back(getArgLayout(owner, i));
  }
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
    func::FuncOp owner = parts[resultGroups[i]];
    resultWholes.push_back(getResultLayout(owner, i));
  }
  finishPartition(func, parts, argWholes, resultWholes);
  return success();
}

LogicalResult StagePartitioner::run(int64_t &numParts, int64_t &numReshards) {
  if (failed(collect()) || failed(place()) || failed(buildParts())) {
    for (func::FuncOp part : parts)
      part.erase();
    return failure();
  }
  for (func::FuncOp part : parts) {
    bool skipped = false;
    if (failed(propagateWithinGroup(part, skipped, numReshards, model)))
      return failure();
  }
  if (failed(compose()))
    return failure();
  numParts = parts.size();
  return success();
}

} // namespace

LogicalResult loom::partitionIntoStages(func::FuncOp func, int64_t &numParts,
                                        int64_t &numReshards,
                                        const PropagationCostModel &model) {
  return StagePartitioner(func, model).run(numParts, numReshards);
}
