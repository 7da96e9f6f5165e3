//===- GroupPartition.cpp - Lay out a function across device groups -------===//
//
// A function whose layouts are unions of several device groups (a batch
// split 3:1 between a fast and a slow group, parameters replicated across
// groups with a different tensor-parallel degree inside each) is laid out
// in two levels, then split into one function per group (MPMD across the
// groups, SPMD inside each). See docs/rationale/heterogeneous.md.
//
// 1. Across groups. Every union of the function is over the same list of
//    groups, and every split union cuts in the same ratio r_0 : ... : r_K-1
//    (R = the sum). Such an uneven split is an even split over R virtual
//    devices of which group g takes r_g consecutive ones, so the relation
//    across groups is one mesh axis of R virtual devices: `split(d)` is
//    S(d), `replicated` D, `partial(kind)` P(kind). Propagation inside one
//    group (LayoutPropagation.cpp) runs on a copy of the function whose
//    unions are replaced by those virtual layouts; what it deduces is every
//    tensor's relation across groups, and where an op needs another
//    relation than its operand's producer gives.
// 2. Partition. Group g's part is the function on what the group holds:
//    a tensor split across groups has its share of the split dimension,
//    the others their whole shape; annotations and reshards keep group g's
//    states; where a relation changes, an `hspmd.exchange` takes the
//    group's part of the old layout to its part of the new one. Ops that
//    need to know where the part sits in the whole rewrite themselves
//    through LocalViewOpInterface, with a view whose block starts are the
//    group's constant offsets (GroupView): an iota (and causal attention's
//    query positions) along a split dimension counts from the group's
//    offset, dropout draws its part's global mask elements, a lookup in a
//    table split along the vocabulary shifts its ids; a mean over a split
//    dimension is scaled by the group's share (a mean over unequal shares
//    is the sum over the global count, never an average of averages).
// 3. Inside groups. Each part is laid out inside its group.
// 4. Composition. An exchange's `from` and `to` are the whole layouts: the
//    relation across groups with every group's states, which step 3 chose
//    for the exchange's operand and result in each part. Parts' arguments
//    and results record their tensor's whole layout (`hspmd.whole_layout`),
//    for cutting inputs and putting results back together.
//
//===----------------------------------------------------------------------===//

#include "passes/PartitionSteps.h"
#include "passes/Partitioning/Utils.h"

#include "dialects/Interfaces/LocalView.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

#include <numeric>

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

namespace {

/// A tensor's relation across the groups.
struct Relation {
  UnionRelation kind = UnionRelation::Replicated;
  /// The split dimension; -1 otherwise.
  int64_t dim = -1;
  /// The reduction of a partial relation.
  ReductionKind reduction = ReductionKind::Sum;

  bool operator==(const Relation &other) const {
    return kind == other.kind && dim == other.dim &&
           (kind != UnionRelation::Partial || reduction == other.reduction);
  }
  bool operator!=(const Relation &other) const { return !(*this == other); }
  bool isSplit(int64_t d) const {
    return kind == UnionRelation::Split && dim == d;
  }
};

class GroupPartitioner {
public:
  GroupPartitioner(func::FuncOp func, const PropagationCostModel &model)
      : func(func), context(func.getContext()), model(model) {}

  LogicalResult run(int64_t &numParts, int64_t &numReshards);

private:
  /// Checks the user layouts: one list of groups, one ratio.
  LogicalResult collect();
  /// Step 1: every value's relation, every operand's needed relation.
  LogicalResult layOutAcrossGroups(int64_t &numReshards);
  /// Step 2: group `g`'s part, after `insertAfter`.
  FailureOr<func::FuncOp> buildPart(int64_t g, Operation *insertAfter);
  /// Step 3b: where a group would sum a partial sum inside itself before
  /// exchanging it across groups (all-reduce, exchange of the whole), it
  /// reduce-scatters it instead, exchanges its slice and gathers the
  /// result (the hierarchical all-reduce: half the bytes inside the
  /// group, and each device exchanges only its slice).
  void splitReductions(ArrayRef<func::FuncOp> parts);
  /// Step 4.
  LogicalResult compose(ArrayRef<func::FuncOp> parts);

  /// The virtual single-group layout of `layout`'s relation.
  UnionAttr toVirtual(UnionAttr layout) const;
  /// The relation a virtual layout stands for.
  static Relation fromVirtual(UnionAttr layout);
  static Relation relationOf(UnionAttr layout) {
    return {layout.getRelation(), layout.getSplitDim(), layout.getReduction()};
  }
  /// The union of `relation` with one states per group.
  FailureOr<UnionAttr> makeUnion(const Relation &relation,
                                 ArrayRef<DistStatesAttr> states,
                                 Location loc) const;
  /// Group `g`'s single-group part of `layout`.
  UnionAttr partOf(UnionAttr layout, int64_t g) const {
    return UnionAttr::get(context, layout.getGroups()[g],
                          layout.getStates()[g]);
  }
  /// The extent and offset of group `g`'s share of a dimension of `size`.
  int64_t shareOf(int64_t size, int64_t g) const {
    return size / total * ratio[g];
  }
  int64_t offsetOf(int64_t size, int64_t g) const {
    int64_t before = 0;
    for (int64_t h = 0; h < g; ++h)
      before += ratio[h];
    return size / total * before;
  }
  /// The type group `g` holds of a tensor of `type` under `relation`.
  Type partType(Type type, const Relation &relation, int64_t g) const;

  class GroupView;

  func::FuncOp func;
  MLIRContext *context;
  /// How propagation lays out the relations and the parts.
  const PropagationCostModel &model;
  SmallVector<UserUnion> users;
  /// The groups every union of the function is over, and the ratio of its
  /// splits.
  ArrayRef<DeviceGroupAttr> groups;
  SmallVector<int64_t> ratio;
  int64_t total = 0;
  /// Step 1's results: per value, its relation; per op (in body order),
  /// the relation each ranked-tensor operand needs.
  DenseMap<Value, Relation> relations;
  DenseMap<Operation *, SmallVector<Relation>> needs;
  /// The relation each function result is returned with.
  SmallVector<Relation> resultRelations;

  /// The exchanges step 2 made, per part in the same order, that step 4
  /// completes (user reshards across relations too: the annotations around
  /// them hold the user's states).
  struct PendingExchange {
    Relation from, to;
  };
  SmallVector<PendingExchange> pending;
  SmallVector<SmallVector<ExchangeOp>> exchanges;
};

LogicalResult GroupPartitioner::collect() {
  if (failed(collectUserUnions(func, users)))
    return failure();
  const UserUnion *first = nullptr;
  const UserUnion *firstSplit = nullptr;
  for (const UserUnion &user : users) {
    if (user.layout.getNumGroups() < 2)
      continue;
    if (!first) {
      first = &user;
      groups = user.layout.getGroups();
    } else if (user.layout.getGroups() != groups) {
      InFlightDiagnostic diag =
          emitError(user.loc)
          << "layout " << user.layout << " is over other device groups than "
          << first->layout
          << " (or the same in another order); the unions of a function "
             "are over one list of groups";
      diag.attachNote(first->loc) << "first layout over several groups here";
      return failure();
    }
  }
  for (const UserUnion &user : users)
    if (user.layout.getNumGroups() == 1) {
      InFlightDiagnostic diag =
          emitError(user.loc)
          << "layout " << user.layout
          << " is on one device group but other layouts of the function span "
          << groups.size()
          << " groups; every layout of the function is over the same groups "
             "(one-group layouts on different groups alone make pipeline "
             "stages)";
      diag.attachNote(first->loc) << "layout over several groups here";
      return failure();
    }

  for (const UserUnion &user : users) {
    if (user.layout.getRelation() != UnionRelation::Split)
      continue;
    ArrayRef<int64_t> shares = user.layout.getShares();
    int64_t divisor = 0;
    for (int64_t share : shares)
      divisor = std::gcd(divisor, share);
    SmallVector<int64_t> normalized;
    for (int64_t share : shares)
      normalized.push_back(share / divisor);
    if (!firstSplit) {
      firstSplit = &user;
      ratio = normalized;
      continue;
    }
    if (normalized != ratio) {
      InFlightDiagnostic diag =
          emitError(user.loc)
          << "layout " << user.layout << " splits in another ratio than "
          << firstSplit->layout
          << "; the splits across groups of one function share one ratio";
      diag.attachNote(firstSplit->loc) << "first split here";
      return failure();
    }
  }
  if (ratio.empty())
    ratio.assign(groups.size(), 1);
  total = std::accumulate(ratio.begin(), ratio.end(), int64_t{0});
  return success();
}

UnionAttr GroupPartitioner::toVirtual(UnionAttr layout) const {
  SmallVector<int64_t> devices(total);
  std::iota(devices.begin(), devices.end(), 0);
  Axis axis = Axis::duplicate(total);
  if (layout.getRelation() == UnionRelation::Split)
    axis = Axis::split(layout.getSplitDim(), total);
  else if (layout.getRelation() == UnionRelation::Partial)
    axis = Axis::partial(total, layout.getReduction());
  return UnionAttr::get(context, DeviceGroupAttr::get(context, devices),
                        DistStatesAttr::get(context, {axis}));
}

Relation GroupPartitioner::fromVirtual(UnionAttr layout) {
  for (const Axis &axis : layout.getStates().front().getAxes()) {
    if (axis.degree == 1)
      continue;
    if (axis.isSplit())
      return {UnionRelation::Split, axis.dim, ReductionKind::Sum};
    if (axis.isPartial())
      return {UnionRelation::Partial, -1, axis.reduction};
  }
  return {};
}

FailureOr<UnionAttr>
GroupPartitioner::makeUnion(const Relation &relation,
                            ArrayRef<DistStatesAttr> states,
                            Location loc) const {
  ArrayRef<int64_t> shares;
  if (relation.kind == UnionRelation::Split)
    shares = ratio;
  UnionAttr layout = UnionAttr::getChecked(
      [&] { return emitError(loc); }, context, relation.kind,
      relation.kind == UnionRelation::Split ? relation.dim : -1,
      relation.reduction, shares, /*explicitSizes=*/false, groups, states);
  if (!layout)
    return failure();
  return layout;
}

Type GroupPartitioner::partType(Type type, const Relation &relation,
                                int64_t g) const {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || relation.kind != UnionRelation::Split)
    return type;
  SmallVector<int64_t> shape(tensor.getShape());
  shape[relation.dim] = shareOf(shape[relation.dim], g);
  return tensor.clone(shape);
}

LogicalResult GroupPartitioner::layOutAcrossGroups(int64_t &numReshards) {
  if (!func.getBody().hasOneBlock())
    return func.emitError("has several blocks; layouts across device groups "
                          "handle straight-line functions so far");
  // Lay out a copy whose unions are the virtual ones, in a module of its
  // own (no cluster to check the virtual devices against).
  OwningOpRef<ModuleOp> scratch = ModuleOp::create(func.getLoc());
  auto copy = cast<func::FuncOp>(func->clone());
  scratch->getBody()->push_back(copy);
  rewriteUserLayouts(copy, [&](Attribute attr) -> Attribute {
    auto layout = dyn_cast_or_null<UnionAttr>(attr);
    return layout ? toVirtual(layout) : attr;
  });
  bool skipped = false;
  int64_t acrossReshards = 0;
  if (failed(propagateWithinGroup(copy, skipped, acrossReshards, model)))
    return failure();
  numReshards += acrossReshards;

  // Read the relations back onto the original, op by op.
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (UnionAttr layout = getArgLayout(copy, i))
      relations[func.getArgument(i)] = fromVirtual(layout);
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
    UnionAttr layout = getResultLayout(copy, i);
    resultRelations.push_back(layout ? fromVirtual(layout) : Relation());
  }
  for (auto [op, copiedOp] :
       llvm::zip_equal(func.getBody().front(), copy.getBody().front())) {
    Operation &copied = copiedOp;
    auto read = [&](ArrayAttr array) {
      SmallVector<Relation> result;
      if (array)
        for (Attribute attr : array)
          result.push_back(fromVirtual(cast<UnionAttr>(attr)));
      return result;
    };
    SmallVector<Relation> results = read(getResultLayoutsAttr(&copied));
    unsigned next = 0;
    for (Value result : op.getResults())
      if (isa<RankedTensorType>(result.getType()))
        relations[result] =
            next < results.size() ? results[next++] : Relation();
    needs[&op] = read(getOperandLayoutsAttr(&copied));
  }
  // A dimension split across groups needs a static extent to cut.
  auto checkStatic = [&](Value value, const Relation &relation,
                         Location loc) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(value.getType());
    if (!tensor || relation.kind != UnionRelation::Split ||
        !tensor.isDynamicDim(relation.dim))
      return success();
    return emitError(loc) << "splits dimension " << relation.dim << " of "
                          << tensor
                          << " across device groups, but its extent is "
                             "dynamic; shares cut static dimensions";
  };
  for (BlockArgument arg : func.getArguments())
    if (failed(checkStatic(arg, relations.lookup(arg), arg.getLoc())))
      return failure();
  for (Operation &op : func.getBody().front())
    for (Value result : op.getResults())
      if (failed(checkStatic(result, relations.lookup(result), op.getLoc())))
        return failure();
  return success();
}

/// Partitioning's local view: group `g` holds its share of every dimension
/// split across groups, which starts at a constant offset.
class GroupPartitioner::GroupView : public LocalView {
public:
  GroupView(const GroupPartitioner &partitioner, Operation *global,
            Operation *local, int64_t g, ArrayRef<Relation> used)
      : LocalView(global, local), partitioner(partitioner), g(g), used(used) {}

protected:
  Value createStart(OpBuilder &builder, bool isResult, unsigned index,
                    int64_t dim, int64_t base) override {
    Value whole = isResult ? getGlobalOp()->getResult(index)
                           : getGlobalOp()->getOperand(index);
    int64_t start =
        base + partitioner.offsetOf(
                   cast<RankedTensorType>(whole.getType()).getDimSize(dim), g);
    return arith::ConstantOp::create(
               builder, getLocalOp()->getLoc(),
               DenseIntElementsAttr::get(
                   RankedTensorType::get({}, builder.getI64Type()),
                   ArrayRef<int64_t>{start}))
        .getResult();
  }
  std::string describeLayouts() const override {
    std::string text;
    llvm::raw_string_ostream os(text);
    auto print = [&](const Relation &relation) {
      switch (relation.kind) {
      case UnionRelation::Split:
        os << "split(" << relation.dim << ")";
        break;
      case UnionRelation::Replicated:
        os << "replicated";
        break;
      case UnionRelation::Partial:
        os << "partial";
        break;
      }
    };
    os << "across device groups (group " << g << "'s part; operands ";
    llvm::interleaveComma(used, os, print);
    os << "; results ";
    llvm::interleaveComma(getGlobalOp()->getResults(), os, [&](Value result) {
      print(partitioner.relations.lookup(result));
    });
    os << ")";
    return text;
  }

private:
  const GroupPartitioner &partitioner;
  int64_t g;
  ArrayRef<Relation> used;
};

FailureOr<func::FuncOp> GroupPartitioner::buildPart(int64_t g,
                                                    Operation *insertAfter) {
  OpBuilder builder(context);
  // Arguments and results: the group's part, the group's states.
  SmallVector<Type> inputs, results;
  for (BlockArgument arg : func.getArguments())
    inputs.push_back(partType(arg.getType(), relations.lookup(arg), g));
  for (auto [type, relation] :
       llvm::zip_equal(func.getFunctionType().getResults(), resultRelations))
    results.push_back(partType(type, relation, g));
  auto partDict = [&](DictionaryAttr attrs) {
    NamedAttrList list(attrs);
    if (auto layout = dyn_cast_or_null<UnionAttr>(getLayout(list)))
      setLayout(list, partOf(layout, g));
    return list.getDictionary(context);
  };
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    argAttrs.push_back(partDict(func.getArgAttrDict(i)));
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    resultAttrs.push_back(partDict(func.getResultAttrDict(i)));
  FailureOr<func::FuncOp> created =
      createPart(builder, func, g, builder.getFunctionType(inputs, results),
                 argAttrs, resultAttrs, insertAfter,
                 "cannot partition across groups");
  if (failed(created))
    return failure();
  func::FuncOp part = *created;
  IRMapping mapping;
  // What localised ops stopped using, erased once the part is built.
  SmallVector<Value> replaced;
  mapping.map(func.getArguments(), part.getArguments());

  // The value group `g` holds of `value` under relation `needed`: an
  // exchange where the relation changes, made once per value and relation.
  DenseMap<std::pair<Value, int64_t>, Value> exchanged;
  auto encode = [](const Relation &relation) {
    return static_cast<int64_t>(relation.kind) * 1000 + relation.dim + 1 +
           100 * static_cast<int64_t>(relation.reduction);
  };
  int64_t nextExchange = 0;
  auto partValue = [&](Value value, const Relation &needed,
                       Location loc) -> FailureOr<Value> {
    Value local = mapping.lookup(value);
    Relation produced = relations.lookup(value);
    if (!isa<RankedTensorType>(value.getType()) || produced == needed)
      return local;
    if (needed.kind == UnionRelation::Partial)
      return emitError(loc)
             << "needs an operand as partial sums across device groups that "
                "is produced complete (or split); an exchange delivers "
                "complete values";
    auto key = std::make_pair(value, encode(needed));
    if (Value done = exchanged.lookup(key))
      return done;
    auto type = cast<RankedTensorType>(value.getType());
    // The whole layouts are placeholders (every group duplicated) until
    // the parts are laid out inside their groups (compose).
    SmallVector<DistStatesAttr> duplicated;
    for (DeviceGroupAttr group : groups)
      duplicated.push_back(DistStatesAttr::get(
          context, {Axis::duplicate(group.getDevices().size())}));
    Relation from = produced;
    if (from.kind == UnionRelation::Partial &&
        from.reduction != ReductionKind::Sum)
      return emitError(loc)
             << "needs complete values of a partial "
             << stringifyReductionKind(from.reduction)
             << " across device groups (a "
             << stringifyReductionKind(from.reduction)
             << " over a dimension split across groups); exchanges reduce "
                "only sums so far";
    FailureOr<UnionAttr> source = makeUnion(from, duplicated, loc);
    FailureOr<UnionAttr> target = makeUnion(needed, duplicated, loc);
    if (failed(source) || failed(target))
      return failure();
    auto exchange = ExchangeOp::create(
        builder, loc, partType(type, needed, g), local,
        builder.getDenseI64ArrayAttr(type.getShape()), *source, *target);
    if (g == 0)
      pending.push_back({from, needed});
    exchanges[g].push_back(exchange);
    ++nextExchange;
    exchanged[key] = exchange.getResult();
    return exchange.getResult();
  };

  for (Operation &op : func.getBody().front()) {
    ArrayRef<Relation> opNeeds = needs[&op];
    // The operands, exchanged where the op needs another relation.
    SmallVector<Value> operands;
    // The relation each operand is used with (after any exchange).
    SmallVector<Relation> used;
    unsigned next = 0;
    for (Value operand : op.getOperands()) {
      if (!isa<RankedTensorType>(operand.getType())) {
        operands.push_back(mapping.lookup(operand));
        used.push_back({});
        continue;
      }
      Relation needed =
          next < opNeeds.size() ? opNeeds[next] : relations.lookup(operand);
      used.push_back(needed);
      ++next;
      FailureOr<Value> value = partValue(operand, needed, op.getLoc());
      if (failed(value))
        return failure();
      operands.push_back(*value);
    }

    if (auto annotate = dyn_cast<AnnotateOp>(op)) {
      auto layout = cast<UnionAttr>(annotate.getLayout());
      auto local = AnnotateOp::create(builder, op.getLoc(), operands[0],
                                      partOf(layout, g));
      mapping.map(annotate.getResult(), local.getResult());
      continue;
    }
    if (auto reshard = dyn_cast<ReshardOp>(op)) {
      auto source = cast<UnionAttr>(reshard.getSource());
      auto target = cast<UnionAttr>(reshard.getTarget());
      Type resultType = partType(reshard.getType(), relationOf(target), g);
      Value result;
      if (relationOf(source) == relationOf(target)) {
        result =
            ReshardOp::create(builder, op.getLoc(), resultType, operands[0],
                              partOf(source, g), partOf(target, g))
                .getResult();
      } else {
        // The user's own change across groups: pin both sides inside the
        // group, exchange between them (its layouts are what the group lays
        // its two sides out as, composed like any other exchange's).
        Value in = AnnotateOp::create(builder, op.getLoc(), operands[0],
                                      partOf(source, g))
                       .getResult();
        auto exchange = ExchangeOp::create(
            builder, op.getLoc(), resultType, in,
            builder.getDenseI64ArrayAttr(reshard.getType().getShape()), source,
            target);
        if (g == 0)
          pending.push_back({relationOf(source), relationOf(target)});
        exchanges[g].push_back(exchange);
        result = AnnotateOp::create(builder, op.getLoc(), exchange.getResult(),
                                    partOf(target, g))
                     .getResult();
      }
      mapping.map(reshard.getResult(), result);
      continue;
    }
    if (isa<func::ReturnOp>(op)) {
      SmallVector<Value> returned;
      for (auto [index, operand] : llvm::enumerate(op.getOperands())) {
        FailureOr<Value> value =
            partValue(operand, resultRelations[index], op.getLoc());
        if (failed(value))
          return failure();
        returned.push_back(*value);
      }
      func::ReturnOp::create(builder, op.getLoc(), returned);
      continue;
    }
    if (op.getNumRegions() != 0)
      return op.emitError("has regions; layouts across device groups handle "
                          "straight-line functions so far");

    Operation *clone = builder.clone(op, mapping);
    clone->setOperands(operands);
    for (auto [result, original] :
         llvm::zip_equal(clone->getResults(), op.getResults()))
      result.setType(
          partType(original.getType(), relations.lookup(original), g));
    for (auto [result, original] :
         llvm::zip_equal(clone->getResults(), op.getResults()))
      mapping.map(original, result);

    // Ops whose local form depends on where the part sits in the whole.
    GroupView view(*this, &op, clone, g, used);
    if (failed(localizeOp(builder, view)))
      return failure();
    for (unsigned i = 0, e = op.getNumResults(); i < e; ++i)
      mapping.map(op.getResult(i), view.getResult(i));
    llvm::append_range(replaced, view.getReplacedValues());
  }
  eraseUnused(replaced);
  (void)nextExchange;
  return part;
}

void GroupPartitioner::splitReductions(ArrayRef<func::FuncOp> parts) {
  for (auto [index, exchange] : llvm::enumerate(pending)) {
    if (exchange.from.kind != UnionRelation::Partial)
      continue;
    for (int64_t g = 0, e = parts.size(); g < e; ++g) {
      ExchangeOp op = exchanges[g][index];
      ArrayAttr operands = getOperandLayoutsAttr(op);
      ArrayAttr results = getResultLayoutsAttr(op);
      // The layout the exchanged value is produced with inside its part.
      UnionAttr produced = getProducedLayout(op.getInput());
      if (!operands || !results || !produced || operands[0] != results[0])
        continue;
      ArrayRef<Axis> from = produced.getStates().front().getAxes();
      ArrayRef<Axis> needed =
          cast<UnionAttr>(operands[0]).getStates().front().getAxes();
      if (from.size() != needed.size())
        continue;
      auto shape = op.getInput().getType().getShape();
      SmallVector<Axis> axes(needed);
      bool changed = false;
      for (size_t k = 0; k < axes.size(); ++k) {
        if (!from[k].isPartial() || from[k].reduction != ReductionKind::Sum ||
            !axes[k].isDuplicate() || from[k].degree != axes[k].degree)
          continue;
        // The first dimension no other axis splits, that the degree
        // divides (dimension 0 where it can: reduce-scatters and
        // all-gathers along it go in gradient buckets).
        int64_t best = -1;
        for (int64_t d = 0, e = shape.size(); d < e && best < 0; ++d) {
          bool free = llvm::none_of(axes, [&](const Axis &axis) {
            return axis.isSplit() && axis.dim == d;
          });
          if (free && !ShapedType::isDynamic(shape[d]) &&
              shape[d] % axes[k].degree == 0)
            best = d;
        }
        if (best < 0)
          continue;
        axes[k] = Axis::split(best, axes[k].degree);
        changed = true;
      }
      if (!changed)
        continue;
      // Same degrees, one duplicate axis now splitting a dimension no
      // other axis splits: still valid states.
      auto states = DistStatesAttr::get(context, axes);
      UnionAttr split = UnionAttr::get(context, produced.getGroups().front(),
                                       states);
      ArrayAttr attr = ArrayAttr::get(context, {split});
      setOperandLayoutsAttr(op, attr);
      setResultLayoutsAttr(op, attr);
    }
  }
}

LogicalResult GroupPartitioner::compose(ArrayRef<func::FuncOp> parts) {
  for (auto [index, exchange] : llvm::enumerate(pending)) {
    SmallVector<DistStatesAttr> from, to;
    for (int64_t g = 0, e = parts.size(); g < e; ++g) {
      ExchangeOp op = exchanges[g][index];
      from.push_back(getOperandLayout(op, 0).getStates().front());
      to.push_back(getResultLayout(op, 0).getStates().front());
    }
    Location loc = exchanges[0][index].getLoc();
    FailureOr<UnionAttr> source = makeUnion(exchange.from, from, loc);
    FailureOr<UnionAttr> target = makeUnion(exchange.to, to, loc);
    if (failed(source) || failed(target))
      return failure();
    for (int64_t g = 0, e = parts.size(); g < e; ++g) {
      exchanges[g][index].setSourceAttr(*source);
      exchanges[g][index].setTargetAttr(*target);
    }
  }

  // Arguments and results: the whole layout on every part.
  auto wholeOf = [&](auto getLayout, const Relation &relation,
                     Location loc) -> FailureOr<UnionAttr> {
    SmallVector<DistStatesAttr> states;
    for (func::FuncOp part : parts) {
      UnionAttr layout = getLayout(part);
      if (!layout)
        return UnionAttr();
      states.push_back(layout.getStates().front());
    }
    return makeUnion(relation, states, loc);
  };
  SmallVector<UnionAttr> argWholes, resultWholes;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    FailureOr<UnionAttr> whole = wholeOf(
        [&](func::FuncOp part) {
          return getArgLayout(part, i);
        },
        relations.lookup(func.getArgument(i)), func.getArgument(i).getLoc());
    if (failed(whole))
      return failure();
    argWholes.push_back(*whole);
  }
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
    FailureOr<UnionAttr> whole = wholeOf(
        [&](func::FuncOp part) {
          return getResultLayout(part, i);
        },
        resultRelations[i], func.getLoc());
    if (failed(whole))
      return failure();
    resultWholes.push_back(*whole);
  }
  finishPartition(func, parts, argWholes, resultWholes);
  return success();
}

LogicalResult GroupPartitioner::run(int64_t &numParts, int64_t &numReshards) {
  if (failed(collect()) || failed(layOutAcrossGroups(numReshards)))
    return failure();
  exchanges.resize(groups.size());
  SmallVector<func::FuncOp> parts;
  Operation *after = func;
  for (int64_t g = 0, e = groups.size(); g < e; ++g) {
    FailureOr<func::FuncOp> part = buildPart(g, after);
    if (failed(part)) {
      for (func::FuncOp built : parts)
        built.erase();
      // And the part left half built.
      if (auto half = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
              func, StringAttr::get(context, getPartName(func, g)));
          half && isPart(half))
        half.erase();
      return failure();
    }
    parts.push_back(*part);
    after = *part;
  }
  for (func::FuncOp part : parts) {
    bool skipped = false;
    if (failed(propagateWithinGroup(part, skipped, numReshards, model)))
      return failure();
  }
  splitReductions(parts);
  if (failed(compose(parts)))
    return failure();
  numParts = parts.size();
  return success();
}

} // namespace

/// The distinct groups of `users`' one-group layouts, in order of
/// appearance, when they are two or more (pipeline stages; groups that
/// overlap share devices, which run both groups' programs).
static SmallVector<DeviceGroupAttr> getStageGroups(ArrayRef<UserUnion> users) {
  SmallVector<DeviceGroupAttr> stages;
  for (const UserUnion &user : users) {
    if (user.layout.getNumGroups() != 1)
      return {};
    DeviceGroupAttr group = user.layout.getGroups().front();
    if (!llvm::is_contained(stages, group))
      stages.push_back(group);
  }
  if (stages.size() < 2)
    return {};
  return stages;
}

bool loom::hasLayoutsAcrossGroups(func::FuncOp func) {
  if (func.isExternal())
    return false;
  SmallVector<UserUnion> users;
  if (failed(collectUserUnions(func, users, /*diagnose=*/false)))
    return false;
  return llvm::any_of(users,
                      [](const UserUnion &user) {
                        return user.layout.getNumGroups() > 1;
                      }) ||
         !getStageGroups(users).empty();
}

LogicalResult loom::partitionAcrossGroups(func::FuncOp func, int64_t &numParts,
                                          int64_t &numReshards,
                                          const PropagationCostModel &model) {
  SmallVector<UserUnion> users;
  if (failed(collectUserUnions(func, users, /*diagnose=*/false)))
    return failure();
  if (llvm::none_of(users, [](const UserUnion &user) {
        return user.layout.getNumGroups() > 1;
      }))
    return partitionIntoStages(func, numParts, numReshards, model);
  return GroupPartitioner(func, model).run(numParts, numReshards);
}
