//===- Specialization.cpp - One local function per device group -----------===//
//
// After propagation, reshard insertion and reshard lowering every tensor of a
// function has a layout on one device group and every layout change is a
// global-view collective. This pass writes the function every device of the
// group runs: the same ops on local shapes (each tensor's block under its
// layout), collectives in their local view. Where every device of a group
// holds equally shaped blocks, one function serves the whole group and its
// size does not depend on the group's size; a device's rank is implicit in
// the collectives it joins. Where splits inside the group are uneven
// (balanced 3/3/2, or explicit sizes), the devices fall into classes of
// equal block shapes and each class gets its own function (`hspmd.devices`
// lists who runs it): the ops, and so the collectives, are the same in
// every class, only the shapes differ.
//
// Ops whose local computation needs the device's position in the global
// tensor (an iota, dropout, causal attention along a split sequence, an
// embedding with a split vocabulary, a mean over a split dimension) rewrite
// themselves through LocalViewOpInterface; this pass's view gives them
// each block's start as an hspmd.axis_index (the device's coordinate on the
// mesh axes that split the dimension, times the block). What an op cannot
// localise (a block start to add to an offset computed at run time) it
// reports, naming the layouts.
//
//===----------------------------------------------------------------------===//

#include "passes/PartitionSteps.h"
#include "passes/Partitioning/Utils.h"
#include "passes/Passes.h"

#include "dialects/Interfaces/LocalView.h"
#include "dialects/nn/IR/NNDialect.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"

#include <map>

namespace loom {
#define GEN_PASS_DEF_SPECIALIZATIONPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// The block shape every device of `layout`'s single group holds of a
/// tensor of `shape`: each dimension divided by the degrees that split it.
SmallVector<int64_t> getLocalShape(hspmd::UnionAttr layout,
                                   ArrayRef<int64_t> shape) {
  SmallVector<int64_t> local(shape);
  for (const hspmd::Axis &axis : layout.getStates()[0].getAxes())
    if (axis.isSplit() && !ShapedType::isDynamic(local[axis.dim]))
      local[axis.dim] /= axis.degree;
  return local;
}

/// The devices of a group that run one function, and what they hold.
struct BlockClass {
  /// Device ids, in group order.
  SmallVector<int64_t> devices;
};

class Specializer {
public:
  explicit Specializer(func::FuncOp global) : global(global) {}

  /// Builds the group's functions after `global` (one, or one per class of
  /// devices holding equally shaped blocks); empty after a diagnostic.
  SmallVector<func::FuncOp> run();

  /// The block start of a tensor of `shape` laid out unevenly as `layout`
  /// along `dim` for the devices of the current class, plus `base`.
  Value createUnevenStart(OpBuilder &builder, Location loc,
                          hspmd::UnionAttr layout, ArrayRef<int64_t> shape,
                          int64_t dim, int64_t base) const;

private:
  /// Builds the function `name` for the devices of `current` (every device
  /// of the group when it is null); null after a diagnostic.
  func::FuncOp build(StringRef name, func::FuncOp reference);
  /// Splits the group's devices into classes holding equal block shapes
  /// whose block starts are affine in their coordinates; fails after a
  /// diagnostic.
  FailureOr<SmallVector<BlockClass>> classify();
  /// Checks that `layout` is a single-group union on the function's group
  /// (the first one seen sets it).
  LogicalResult checkLayout(Attribute layout, Location loc, const Twine &what);
  /// The local type of a value of `type` laid out as `layout`.
  Type getLocalType(Type type, Attribute layout);
  /// The layouts of `op`'s ranked-tensor results or operands (`values`),
  /// from its layout array `array` (the attribute `name`), or failure
  /// after a diagnostic when propagation has not run.
  FailureOr<SmallVector<hspmd::UnionAttr>>
  getLayouts(Operation *op, ArrayAttr array, StringRef name,
             ValueRange values);
  LogicalResult specializeOp(Operation *op, OpBuilder &builder,
                             IRMapping &mapping);

  func::FuncOp global;
  hspmd::DeviceGroupAttr group;
  /// Every tensor of the function laid out unevenly, with its global shape.
  SmallVector<std::pair<hspmd::UnionAttr, SmallVector<int64_t>>> uneven;
  /// The class being written; null when one function serves the group.
  const BlockClass *current = nullptr;
  /// Where the next function goes: after the global one, then after the
  /// last one written.
  Operation *insertAfter = global;
  /// Values localised ops stopped using (a group's constant start folded
  /// into a block start): erased at the end if nothing uses them.
  SmallVector<Value> replaced;
};

/// Where a device's block along `dim` starts under `layout` (uneven), and
/// its coordinate on the axis that splits `dim`; the axis's index in the
/// states (-1 when no axis of degree > 1 splits `dim`).
struct UnevenBlock {
  int64_t axis = -1;
  int64_t coordinate = 0;
  int64_t offset = 0;
};

UnevenBlock getUnevenBlock(hspmd::UnionAttr layout, ArrayRef<int64_t> shape,
                           int64_t dim, int64_t device) {
  UnevenBlock block;
  hspmd::DistStatesAttr states = layout.getStates()[0];
  int64_t index = layout.getGroups()[0].indexOf(device);
  SmallVector<int64_t> coordinates = states.getCoordinates(index);
  for (auto [i, axis] : llvm::enumerate(states.getAxes()))
    if (axis.isSplit() && axis.dim == dim && axis.degree > 1) {
      block.axis = i;
      block.coordinate = coordinates[i];
    }
  std::optional<hspmd::Shard> shard = hspmd::getShard(layout, shape, device);
  block.offset = shard ? shard->offsets[dim] : 0;
  return block;
}

/// The stride and base with which `offset = coordinate * stride + base`
/// for every device of `devices`, if there are such.
std::optional<std::pair<int64_t, int64_t>>
fitAffine(hspmd::UnionAttr layout, ArrayRef<int64_t> shape, int64_t dim,
          ArrayRef<int64_t> devices) {
  SmallVector<UnevenBlock> blocks = llvm::map_to_vector(
      devices, [&](int64_t device) {
        return getUnevenBlock(layout, shape, dim, device);
      });
  int64_t stride = 0;
  for (const UnevenBlock &block : blocks)
    if (block.coordinate != blocks[0].coordinate) {
      int64_t rise = block.offset - blocks[0].offset;
      int64_t run = block.coordinate - blocks[0].coordinate;
      if (rise % run != 0)
        return std::nullopt;
      stride = rise / run;
      break;
    }
  int64_t base = blocks[0].offset - blocks[0].coordinate * stride;
  for (const UnevenBlock &block : blocks)
    if (block.offset != block.coordinate * stride + base)
      return std::nullopt;
  return std::make_pair(stride, base);
}

LogicalResult Specializer::checkLayout(Attribute attr, Location loc,
                                       const Twine &what) {
  auto layout = dyn_cast_or_null<hspmd::UnionAttr>(attr);
  if (!layout)
    return emitError(loc) << what
                          << " has no hspmd layout; run "
                             "--hspmd-propagate-layouts first";
  if (layout.getNumGroups() != 1)
    return emitError(loc)
           << what << " is laid out over " << layout.getNumGroups()
           << " device groups; specialisation handles one group per "
              "function so far";
  if (!group)
    group = layout.getGroups()[0];
  else if (group != layout.getGroups()[0])
    return emitError(loc) << what << " is on the device group " << layout
                          << " but the function's other layouts are on "
                          << group;
  return success();
}

Type Specializer::getLocalType(Type type, Attribute layout) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !layout)
    return type;
  auto single = cast<hspmd::UnionAttr>(layout);
  // Uneven blocks: what the class's devices hold (they hold the same).
  if (current && hspmd::hasUnevenSplits(single, tensor.getShape()))
    if (std::optional<hspmd::Shard> shard = hspmd::getShard(
            single, tensor.getShape(), current->devices.front()))
      return tensor.clone(shard->sizes);
  return tensor.clone(getLocalShape(single, tensor.getShape()));
}

Value Specializer::createUnevenStart(OpBuilder &builder, Location loc,
                                     hspmd::UnionAttr layout,
                                     ArrayRef<int64_t> shape, int64_t dim,
                                     int64_t base) const {
  // classify() made every class's starts affine in the coordinate.
  auto [stride, start] = *fitAffine(layout, shape, dim, current->devices);
  int64_t axis =
      getUnevenBlock(layout, shape, dim, current->devices.front()).axis;
  SmallVector<int64_t> degrees;
  for (const hspmd::Axis &each : layout.getStates()[0].getAxes())
    degrees.push_back(each.degree);
  return hspmd::AxisIndexOp::create(
      builder, loc, RankedTensorType::get({}, builder.getI64Type()),
      builder.getDenseI64ArrayAttr({axis}),
      builder.getDenseI64ArrayAttr(degrees), builder.getI64IntegerAttr(stride),
      builder.getI64IntegerAttr(start + base));
}

FailureOr<SmallVector<hspmd::UnionAttr>>
Specializer::getLayouts(Operation *op, ArrayAttr array, StringRef name,
                        ValueRange values) {
  unsigned count = countTensors(values);
  SmallVector<hspmd::UnionAttr> layouts;
  if (count == 0)
    return layouts;
  if (!array || array.size() != count)
    return op->emitError() << "has no " << name
                           << " for its tensors; run "
                              "--hspmd-propagate-layouts (and "
                              "--hspmd-insert-reshards) first";
  for (auto [i, attr] : llvm::enumerate(array)) {
    if (failed(checkLayout(attr, op->getLoc(), name + " entry #" + Twine(i))))
      return failure();
    layouts.push_back(cast<hspmd::UnionAttr>(attr));
  }
  return layouts;
}

/// The global start of the block a device holds along `dim` of a tensor
/// laid out by `layout`, whose local size along it is `block`: the
/// device's coordinate on the states axis that splits `dim` (the layout's
/// own axes read as a mesh) times `block`, plus `base` (where the group's
/// part starts), as an
/// `hspmd.axis_index` built at the builder's insertion point. Null when
/// `dim` is not split.
Value createBlockStart(OpBuilder &builder, Location loc,
                       hspmd::UnionAttr layout, int64_t dim, int64_t block,
                       int64_t base) {
  hspmd::DistStatesAttr states = layout.getStates()[0];
  SmallVector<int64_t> degrees, splitAxes;
  // A dimension is split by one axis at most (the layout's verifier).
  for (auto [index, axis] : llvm::enumerate(states.getAxes())) {
    degrees.push_back(axis.degree);
    if (axis.isSplit() && axis.dim == dim && axis.degree > 1)
      splitAxes.push_back(index);
  }
  if (splitAxes.empty())
    return nullptr;
  return hspmd::AxisIndexOp::create(
      builder, loc, RankedTensorType::get({}, builder.getI64Type()),
      builder.getDenseI64ArrayAttr(splitAxes),
      builder.getDenseI64ArrayAttr(degrees), builder.getI64IntegerAttr(block),
      builder.getI64IntegerAttr(base));
}

/// Specialisation's local view: each device holds equal blocks of its
/// group's tensors, a block's start is read from the device's coordinates.
class BlockView : public LocalView {
public:
  BlockView(const Specializer &specializer, Operation *global,
            Operation *local, ArrayRef<hspmd::UnionAttr> operandLayouts,
            ArrayRef<hspmd::UnionAttr> resultLayouts)
      : LocalView(global, local), specializer(specializer),
        operandLayouts(operandLayouts), resultLayouts(resultLayouts) {}

protected:
  /// Split: an axis of degree > 1 splits the dimension (dynamic sizes too).
  bool isSplit(bool isResult, unsigned index, int64_t dim) const override {
    hspmd::UnionAttr layout = layoutOf(isResult, index);
    return layout && getSplitDegree(layout, dim) > 1;
  }
  std::pair<int64_t, int64_t> getShare(bool isResult, unsigned index,
                                       int64_t dim) const override {
    // Uneven blocks: the class's block over the whole.
    if (hspmd::hasUnevenSplits(layoutOf(isResult, index),
                               globalShape(isResult, index)))
      return LocalView::getShare(isResult, index, dim);
    return {1, getSplitDegree(layoutOf(isResult, index), dim)};
  }
  Value createStart(OpBuilder &builder, bool isResult, unsigned index,
                    int64_t dim, int64_t base) override {
    Operation *local = getLocalOp();
    hspmd::UnionAttr layout = layoutOf(isResult, index);
    ArrayRef<int64_t> shape = globalShape(isResult, index);
    if (hspmd::hasUnevenSplits(layout, shape))
      return specializer.createUnevenStart(builder, local->getLoc(), layout,
                                           shape, dim, base);
    Value value = isResult ? local->getResult(index) : local->getOperand(index);
    return createBlockStart(
        builder, local->getLoc(), layoutOf(isResult, index), dim,
        cast<RankedTensorType>(value.getType()).getDimSize(dim), base);
  }
  std::string describeLayouts() const override {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "(operands ";
    llvm::interleaveComma(operandLayouts, os);
    os << "; results ";
    llvm::interleaveComma(resultLayouts, os);
    os << ")";
    return text;
  }

private:
  /// The global shape of the op's operand (result) `index`.
  ArrayRef<int64_t> globalShape(bool isResult, unsigned index) const {
    Operation *op = getGlobalOp();
    Value value = isResult ? op->getResult(index) : op->getOperand(index);
    return cast<RankedTensorType>(value.getType()).getShape();
  }
  /// The layout of the op's operand (result) `index`; null for one that is
  /// not a ranked tensor (the layouts list those only).
  hspmd::UnionAttr layoutOf(bool isResult, unsigned index) const {
    Operation *local = getLocalOp();
    ValueRange all = isResult ? ValueRange(local->getResults())
                              : ValueRange(local->getOperands());
    if (!isa<RankedTensorType>(all[index].getType()))
      return {};
    unsigned tensor = llvm::count_if(all.take_front(index), [](Value v) {
      return isa<RankedTensorType>(v.getType());
    });
    return (isResult ? resultLayouts : operandLayouts)[tensor];
  }
  /// The degree of the axis that splits `dim` (1: none).
  static int64_t getSplitDegree(hspmd::UnionAttr layout, int64_t dim) {
    int64_t degree = 1;
    for (const hspmd::Axis &axis : layout.getStates()[0].getAxes())
      if (axis.isSplit() && axis.dim == dim)
        degree *= axis.degree;
    return degree;
  }

  const Specializer &specializer;
  ArrayRef<hspmd::UnionAttr> operandLayouts, resultLayouts;
};

LogicalResult Specializer::specializeOp(Operation *op, OpBuilder &builder,
                                        IRMapping &mapping) {
  if (auto annotate = dyn_cast<hspmd::AnnotateOp>(op)) {
    mapping.map(annotate.getResult(), mapping.lookup(annotate.getInput()));
    return success();
  }
  if (isa<hspmd::ReshardOp>(op))
    return op->emitError("is not lowered; run --hspmd-lower-reshards before "
                         "specialisation");
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    SmallVector<Value> operands;
    for (Value value : ret.getOperands())
      operands.push_back(mapping.lookup(value));
    func::ReturnOp::create(builder, ret.getLoc(), operands);
    return success();
  }
  if (op->getNumRegions() != 0)
    return op->emitError("has regions; specialisation handles straight-line "
                         "functions so far");

  FailureOr<SmallVector<hspmd::UnionAttr>> resultLayouts =
      getLayouts(op, getResultLayoutsAttr(op),
                 hspmd::HSPMDDialect::getResultLayoutsAttrName(),
                 op->getResults());
  if (failed(resultLayouts))
    return failure();
  FailureOr<SmallVector<hspmd::UnionAttr>> operandLayouts =
      getLayouts(op, getOperandLayoutsAttr(op),
                 hspmd::HSPMDDialect::getOperandLayoutsAttrName(),
                 op->getOperands());
  if (failed(operandLayouts))
    return failure();

  Operation *clone = builder.clone(*op, mapping);
  removeOpLayouts(clone);
  // Global-view collectives become local-view ones.
  dropGlobalView(clone);
  unsigned next = 0;
  for (OpResult result : clone->getResults())
    if (isa<RankedTensorType>(result.getType()))
      result.setType(getLocalType(result.getType(), (*resultLayouts)[next++]));

  // Ops whose local form depends on the device's position.
  BlockView view(*this, op, clone, *operandLayouts, *resultLayouts);
  if (failed(localizeOp(builder, view)))
    return failure();
  for (unsigned i = 0, e = op->getNumResults(); i < e; ++i)
    mapping.map(op->getResult(i), view.getResult(i));
  llvm::append_range(replaced, view.getReplacedValues());
  return success();
}

SmallVector<func::FuncOp> Specializer::run() {
  FunctionType type = global.getFunctionType();
  // A pipeline stage holds nothing of another stage's arguments and
  // results: they are empty and have no layout of their own.
  auto laidOut = [](Type type, Attribute layout) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && (layout || !tensor.hasStaticShape() ||
                      tensor.getNumElements() != 0);
  };
  for (unsigned i = 0; i < type.getNumInputs(); ++i)
    if (laidOut(type.getInput(i), getArgLayoutAttr(global, i)) &&
        failed(checkLayout(getArgLayoutAttr(global, i),
                           global.getArgument(i).getLoc(),
                           "argument #" + Twine(i))))
      return {};
  for (unsigned i = 0; i < type.getNumResults(); ++i)
    if (laidOut(type.getResult(i), getResultLayoutAttr(global, i)) &&
        failed(checkLayout(getResultLayoutAttr(global, i), global.getLoc(),
                           "result #" + Twine(i))))
      return {};
  if (!group)
    return global.emitError("has no tensor arguments or results to lay out"),
           SmallVector<func::FuncOp>();
  if (!global.getBody().hasOneBlock())
    return global.emitError("has several blocks; specialisation handles "
                            "straight-line functions so far"),
           SmallVector<func::FuncOp>();

  // Every tensor laid out unevenly inside the group.
  auto noteUneven = [&](Type type, Attribute layout) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    auto single = dyn_cast_or_null<hspmd::UnionAttr>(layout);
    if (tensor && single && hspmd::hasUnevenSplits(single, tensor.getShape()))
      uneven.push_back({single, SmallVector<int64_t>(tensor.getShape())});
  };
  for (unsigned i = 0; i < type.getNumInputs(); ++i)
    noteUneven(type.getInput(i), getArgLayoutAttr(global, i));
  for (unsigned i = 0; i < type.getNumResults(); ++i)
    noteUneven(type.getResult(i), getResultLayoutAttr(global, i));
  global.getBody().walk([&](Operation *op) {
    for (auto [layouts, values] :
         {std::pair{getResultLayoutsAttr(op), ValueRange(op->getResults())},
          {getOperandLayoutsAttr(op), ValueRange(op->getOperands())}}) {
      if (!layouts)
        continue;
      auto tensors = llvm::make_filter_range(values, [](Value value) {
        return isa<RankedTensorType>(value.getType());
      });
      for (auto [value, layout] : llvm::zip(tensors, layouts))
        noteUneven(value.getType(), layout);
    }
  });

  // A part of a function partitioned across groups specialises the
  // original: @f_part1 becomes @f_group1.
  func::FuncOp reference = global;
  std::string name = (global.getSymName() + "_group0").str();
  if (FlatSymbolRefAttr partOf = getPartOf(global)) {
    reference = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(global,
                                                                   partOf);
    std::optional<int64_t> part = getPartIndex(global);
    if (!reference || !part)
      return global.emitError()
                 << "is a part of @" << partOf.getValue()
                 << ", which does not exist (or the part has no index)",
             SmallVector<func::FuncOp>();
    name = (partOf.getValue() + "_group" + Twine(*part)).str();
  }
  if (uneven.empty()) {
    func::FuncOp local = build(name, reference);
    if (!local)
      return {};
    return {local};
  }
  FailureOr<SmallVector<BlockClass>> classes = classify();
  if (failed(classes))
    return {};
  SmallVector<func::FuncOp> locals;
  for (auto [index, each] : llvm::enumerate(*classes)) {
    current = &each;
    func::FuncOp local = build(name + "_block" + std::to_string(index),
                               reference);
    if (!local) {
      for (func::FuncOp done : locals)
        done.erase();
      return {};
    }
    setRunningDevices(local, each.devices);
    locals.push_back(local);
  }
  current = nullptr;
  return locals;
}

FailureOr<SmallVector<BlockClass>> Specializer::classify() {
  if (getPartOf(global))
    return global.emitError()
           << "is one group's part of a function laid out across groups and "
              "cuts blocks of unequal size inside its group (e.g. "
           << uneven.front().first
           << "); uneven splits inside a group are specialised for "
              "functions on one group only so far";
  for (auto &[layout, shape] : uneven)
    if (llvm::any_of(shape, ShapedType::isDynamic))
      return global.emitError()
             << "lays out a tensor of dynamic shape unevenly (" << layout
             << "); blocks of unequal size need static shapes";
  // Devices with equal blocks of every uneven tensor, in group order.
  std::map<SmallVector<int64_t>, size_t> bySignature;
  SmallVector<BlockClass> classes;
  for (int64_t device : group.getDevices()) {
    SmallVector<int64_t> signature;
    for (auto &[layout, shape] : uneven) {
      std::optional<hspmd::Shard> shard = hspmd::getShard(layout, shape, device);
      if (!shard)
        return global.emitError() << "has a layout " << layout
                                  << " that does not fit its tensor";
      llvm::append_range(signature, shard->sizes);
    }
    auto [it, inserted] = bySignature.try_emplace(signature, classes.size());
    if (inserted)
      classes.emplace_back();
    classes[it->second].devices.push_back(device);
  }
  // Ops that need a block's start read it from the device's coordinate,
  // so within a class the starts must be affine in it; a class whose are
  // not is split into single devices.
  SmallVector<BlockClass> affine;
  for (BlockClass &each : classes) {
    bool fits = llvm::all_of(uneven, [&](const auto &entry) {
      auto &[layout, shape] = entry;
      for (int64_t dim = 0, e = shape.size(); dim < e; ++dim)
        if (!fitAffine(layout, shape, dim, each.devices))
          return false;
      return true;
    });
    if (fits) {
      affine.push_back(std::move(each));
      continue;
    }
    for (int64_t device : each.devices)
      affine.push_back(BlockClass{{device}});
  }
  // In the order of the group's devices.
  auto position = [&](const BlockClass &each) {
    return group.indexOf(each.devices.front());
  };
  llvm::sort(affine, [&](const BlockClass &a, const BlockClass &b) {
    return position(a) < position(b);
  });
  return affine;
}

func::FuncOp Specializer::build(StringRef name, func::FuncOp reference) {
  FunctionType type = global.getFunctionType();
  replaced.clear();
  SmallVector<Type> inputs, results;
  for (unsigned i = 0; i < type.getNumInputs(); ++i)
    inputs.push_back(
        getLocalType(type.getInput(i), getArgLayoutAttr(global, i)));
  for (unsigned i = 0; i < type.getNumResults(); ++i)
    results.push_back(
        getLocalType(type.getResult(i), getResultLayoutAttr(global, i)));

  if (SymbolTable::lookupNearestSymbolFrom(
          global, StringAttr::get(global.getContext(), name)))
    return global.emitError()
               << "cannot specialise: a symbol @" << name << " exists already",
           func::FuncOp();
  OpBuilder builder(global->getContext());
  builder.setInsertionPointAfter(insertAfter);
  auto local = func::FuncOp::create(builder, global.getLoc(), name,
                                    builder.getFunctionType(inputs, results));
  // The local function's values are blocks: their layouts say of which
  // global tensor (hspmd.global_layout), for cutting inputs and putting
  // results back.
  auto renameLayout = [&](DictionaryAttr attrs) -> DictionaryAttr {
    NamedAttrList list(attrs);
    Attribute layout = eraseLayout(list);
    // A part's tensors are the group's part of a whole laid out across
    // groups: the whole layout is what cuts inputs and puts results back.
    if (Attribute whole = eraseWholeLayout(list))
      layout = whole;
    if (layout)
      setGlobalLayout(list, layout);
    return list.getDictionary(global->getContext());
  };
  // All at once: setting them one by one rebuilds the array each time.
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  for (unsigned i = 0; i < type.getNumInputs(); ++i)
    argAttrs.push_back(renameLayout(global.getArgAttrDict(i)));
  for (unsigned i = 0; i < type.getNumResults(); ++i)
    resultAttrs.push_back(renameLayout(global.getResultAttrDict(i)));
  local.setAllArgAttrs(argAttrs);
  local.setAllResultAttrs(resultAttrs);
  setGroup(local, group);
  setSpecializes(local, reference);
  Block *body = local.addEntryBlock();
  IRMapping mapping;
  mapping.map(global.getArguments(), body->getArguments());
  builder.setInsertionPointToStart(body);
  for (Operation &op : global.getBody().front())
    if (failed(specializeOp(&op, builder, mapping))) {
      local.erase();
      return {};
    }
  eraseUnused(replaced);
  if (failed(verify(local))) {
    local.emitError() << "the specialisation of @" << global.getSymName()
                      << " does not verify (a bug in an op's layout rule or "
                         "in specialisation)";
    local.erase();
    return {};
  }
  insertAfter = local;
  return local;
}

struct SpecializationPass
    : loom::impl::SpecializationPassBase<SpecializationPass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> functions;
    for (func::FuncOp func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || isSpecialization(func) || isPartitioned(func))
        continue;
      if (hasArgOrResultLayouts(func))
        functions.push_back(func);
    }
    // The programs of each partitioned function's parts, in part order.
    llvm::MapVector<Operation *, SmallVector<std::pair<int64_t, func::FuncOp>>>
        byOriginal;
    for (func::FuncOp func : functions) {
      SmallVector<func::FuncOp> locals = Specializer(func).run();
      if (locals.empty())
        return signalPassFailure();
      numFunctions += locals.size();
      if (FlatSymbolRefAttr partOf = getPartOf(func))
        if (auto original = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
                func, partOf))
          for (func::FuncOp local : locals)
            byOriginal[original].push_back({*getPartIndex(func), local});
    }
    // Pipeline stages on overlapping groups: one program per device cell.
    for (auto &[original, parts] : byOriginal) {
      llvm::sort(parts, llvm::less_first());
      SmallVector<func::FuncOp> locals = llvm::map_to_vector(
          parts, [](const auto &part) { return part.second; });
      if (failed(mergeOverlappingGroups(cast<func::FuncOp>(original), locals)))
        return signalPassFailure();
    }
  }
};

} // namespace
