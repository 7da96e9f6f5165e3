//===- HSPMDOps.cpp - Operations of the hspmd dialect ---------------------===//

#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDMesh.h"
#include "dialects/hspmd/IR/HSPMDTransitions.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace loom::hspmd;


LogicalResult AnnotateOp::verify() {
  return verifyLayoutForShape(getLayout(), getInput().getType().getShape(),
                              [&]() { return emitOpError(); });
}

LogicalResult ReshardOp::verify() {
  ArrayRef<int64_t> shape = getInput().getType().getShape();
  auto withRole = [&](StringRef role) {
    return [this, role]() {
      InFlightDiagnostic diag = emitOpError();
      diag << role << " layout: ";
      return diag;
    };
  };
  if (failed(verifyLayoutForShape(getSource(), shape, withRole("source"))) ||
      failed(verifyLayoutForShape(getTarget(), shape, withRole("target"))))
    return failure();
  auto sourceSet = dyn_cast<StrategySetAttr>(getSource());
  auto targetSet = dyn_cast<StrategySetAttr>(getTarget());
  if (!sourceSet != !targetSet)
    return emitOpError("reshards between a union and a strategy set; both "
                       "layouts must be of the same kind");
  if (sourceSet && sourceSet.getNames() != targetSet.getNames())
    return emitOpError("source and target strategy sets name different "
                       "strategies");
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

static ParseResult parseReductionKind(OpAsmParser &parser,
                                      ReductionKindAttr &attr) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<ReductionKind> kind = symbolizeReductionKind(keyword);
  if (!kind)
    return parser.emitError(loc, "expected a reduction kind (sum, mean, max "
                                 "or min), got '")
           << keyword << "'";
  attr = ReductionKindAttr::get(parser.getContext(), *kind);
  return success();
}

static void printReductionKind(OpAsmPrinter &printer, Operation *,
                               ReductionKindAttr attr) {
  printer << stringifyReductionKind(attr.getValue());
}

namespace {

/// What a collective's local view does to the shape of its buffer, given
/// the sub-group size `k`: the expected result shape, or failure after a
/// diagnostic.
using LocalShapeRule = llvm::function_ref<FailureOr<SmallVector<int64_t>>(
    ArrayRef<int64_t> input, int64_t k)>;

int64_t getProduct(ArrayRef<int64_t> values, ArrayRef<int64_t> indices) {
  int64_t product = 1;
  for (int64_t index : indices)
    product *= values[index];
  return product;
}

/// The global view's promise: read on the op's mesh, `to` is exactly what
/// the collective makes of `from`. The mesh must be one both layouts can be
/// read on: their common mesh or a refinement of it.
LogicalResult verifyTransition(Operation *op, ArrayRef<int64_t> meshSizes,
                               UnionAttr from, UnionAttr to) {
  Mesh mesh{SmallVector<int64_t>(meshSizes)};
  FailureOr<MeshLayout> fromLayout =
      toMeshLayout(from.getStates()[0], mesh);
  FailureOr<MeshLayout> toLayout = toMeshLayout(to.getStates()[0], mesh);
  for (auto [role, layout, states] :
       {std::tuple{"from", &fromLayout, from.getStates()[0]},
        {"to", &toLayout, to.getStates()[0]}})
    if (failed(*layout)) {
      return op->emitOpError()
             << "`" << role << "` layout " << states << " cannot be read on the mesh " << mesh.str()
                  << " (its degrees do not cover whole mesh axes); the mesh "
                     "must be the common mesh of `from` and `to` or a "
                     "refinement of it";
    }
  FailureOr<CollectiveStep> step = getCollectiveStep(op);
  if (failed(step))
    return success();
  std::string why;
  FailureOr<MeshLayout> made = applyCollective(*step, *fromLayout, mesh, why);
  if (succeeded(made) && *made == *toLayout)
    return success();
  InFlightDiagnostic diag = op->emitOpError();
  diag << "`from` -> `to` is " << fromLayout->str() << " -> "
       << toLayout->str() << " on mesh " << mesh.str() << ", but "
       << step->str();
  if (failed(made))
    return diag << " does not apply to " << fromLayout->str() << ": " << why;
  return diag << " makes " << made->str();
}

/// Checks the attributes every collective shares and the view-specific
/// types: the global view (layouts present) keeps the global type; the
/// local view's result shape follows `rule`.
LogicalResult verifyCollective(Operation *op, ArrayRef<int64_t> axes,
                               ArrayRef<int64_t> mesh, UnionAttr from,
                               UnionAttr to, LocalShapeRule rule) {
  if (mesh.empty())
    return op->emitOpError("needs a non-empty mesh");
  int64_t devices = 1;
  for (int64_t size : mesh) {
    if (size < 1)
      return op->emitOpError("mesh sizes must be at least 1, got ") << size;
    if (llvm::MulOverflow(devices, size, devices))
      return op->emitOpError("mesh has more devices than fit in 64 bits");
  }
  if (axes.empty())
    return op->emitOpError("needs at least one mesh axis to run over");
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= static_cast<int64_t>(mesh.size()))
      return op->emitOpError("mesh axis ")
             << axis << " is out of range for a mesh of " << mesh.size()
             << " axes";
    if (i > 0 && axis <= axes[i - 1])
      return op->emitOpError("mesh axes must be strictly increasing");
  }
  auto input = cast<RankedTensorType>(op->getOperand(0).getType());
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  if (input.getElementType() != result.getElementType() ||
      input.getRank() != result.getRank())
    return op->emitOpError("operand and result must have the same element "
                           "type and rank");
  int64_t k = getProduct(mesh, axes);
  if (!from != !to)
    return op->emitOpError("needs both `from` and `to` layouts, or neither");
  if (from) {
    // Global view: the value does not change, only where its pieces are.
    if (input != result)
      return op->emitOpError("in the global view (with layouts) the result "
                             "has the operand's type");
    for (auto [role, layout] : {std::pair{"from", from}, {"to", to}}) {
      auto emit = [&, role = role]() {
        InFlightDiagnostic diag = op->emitOpError();
        diag << "`" << role << "` layout: ";
        return diag;
      };
      if (failed(verifyLayoutForShape(layout, input.getShape(), emit)))
        return failure();
      if (layout.getGroups().size() != 1)
        return emit() << "a collective runs inside one device group; "
                         "unions of several groups have their own transfers";
      if (layout.getGroups()[0].getDevices().size() !=
          static_cast<size_t>(devices))
        return emit() << "its group has "
                      << layout.getGroups()[0].getDevices().size()
                      << " devices but the mesh has " << devices;
    }
    if (from.getGroups()[0] != to.getGroups()[0])
      return op->emitOpError("`from` and `to` must be on the same device "
                             "group");
    // Blocks of unequal size: the devices of a sub-group must hold equal
    // blocks, so the collective's own axes may not cut an uneven
    // dimension (an hspmd.exchange moves uneven blocks).
    Mesh meshOf{SmallVector<int64_t>(mesh)};
    for (auto [role, layout] : {std::pair{"from", from}, {"to", to}}) {
      FailureOr<MeshLayout> roles = toMeshLayout(layout.getStates()[0], meshOf);
      if (failed(roles))
        continue; // verifyTransition says why
      for (int64_t axis : axes) {
        const MeshRole &meshRole = roles->roles[axis];
        if (meshRole.isSplit() &&
            isUnevenAlong(layout, input.getShape(), meshRole.dim))
          return op->emitOpError()
                 << "`" << role << "` layout " << layout
                 << " cuts dimension " << meshRole.dim
                 << " into blocks of unequal size along mesh axis " << axis
                 << ", which the collective runs over; a collective moves "
                    "equal blocks (an hspmd.exchange moves uneven ones)";
      }
    }
    return verifyTransition(op, mesh, from, to);
  }
  FailureOr<SmallVector<int64_t>> expected = rule(input.getShape(), k);
  if (failed(expected))
    return failure();
  for (auto [dim, want, got] :
       llvm::enumerate(*expected, result.getShape())) {
    if (ShapedType::isDynamic(want) || ShapedType::isDynamic(got))
      continue;
    if (want != got)
      return op->emitOpError("result dimension ")
             << dim << " must be " << want << " over sub-groups of " << k
             << " devices, got " << got;
  }
  return success();
}

/// The rule of ops that keep the shape.
FailureOr<SmallVector<int64_t>> keepShape(ArrayRef<int64_t> input, int64_t) {
  return SmallVector<int64_t>(input);
}

/// Checks that `dim` is a dimension of `shape` (and, for `divide`, that its
/// size is a multiple of `k`), then scales it.
FailureOr<SmallVector<int64_t>> scaleDim(Operation *op, StringRef name,
                                         ArrayRef<int64_t> shape, int64_t dim,
                                         int64_t k, bool divide) {
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size())) {
    op->emitOpError() << "`" << name << "` " << dim
                      << " is not a dimension of a rank-" << shape.size()
                      << " tensor";
    return failure();
  }
  SmallVector<int64_t> result(shape);
  if (ShapedType::isDynamic(shape[dim]))
    return result;
  if (divide) {
    if (shape[dim] % k != 0) {
      op->emitOpError() << "dimension " << dim << " of size " << shape[dim]
                        << " does not divide among sub-groups of " << k
                        << " devices";
      return failure();
    }
    result[dim] = shape[dim] / k;
  } else {
    result[dim] = shape[dim] * k;
  }
  return result;
}

} // namespace

SmallVector<SmallVector<int64_t>>
loom::hspmd::getCollectiveSubgroups(ArrayRef<int64_t> mesh,
                                    ArrayRef<int64_t> axes) {
  int64_t devices = getProduct(mesh, llvm::to_vector(llvm::seq<int64_t>(
                                          0, mesh.size())));
  llvm::SmallDenseMap<int64_t, unsigned> groupOf;
  SmallVector<SmallVector<int64_t>> groups;
  llvm::SmallBitVector inAxes(mesh.size());
  for (int64_t axis : axes)
    inAxes.set(axis);
  for (int64_t index = 0; index < devices; ++index) {
    // The digits outside `axes` name the sub-group; the device's position
    // in it is the mixed-radix number of the digits inside (visiting
    // indices in order visits each sub-group's members in rank order).
    int64_t key = 0, rest = index;
    SmallVector<int64_t> digits(mesh.size());
    for (int64_t axis = mesh.size() - 1; axis >= 0; --axis) {
      digits[axis] = rest % mesh[axis];
      rest /= mesh[axis];
    }
    for (auto [axis, digit] : llvm::enumerate(digits))
      if (!inAxes.test(axis))
        key = key * mesh[axis] + digit;
    auto [it, inserted] = groupOf.try_emplace(key, groups.size());
    if (inserted)
      groups.emplace_back();
    groups[it->second].push_back(index);
  }
  return groups;
}

#define COLLECTIVE_SUBGROUPS(Op)                                               \
  SmallVector<SmallVector<int64_t>> Op::getSubgroupIndices() {                \
    return getCollectiveSubgroups(getMesh(), getAxes());                       \
  }                                                                            \
  int64_t Op::getSubgroupSize() { return getProduct(getMesh(), getAxes()); }
COLLECTIVE_SUBGROUPS(AllReduceOp)
COLLECTIVE_SUBGROUPS(AllGatherOp)
COLLECTIVE_SUBGROUPS(ReduceScatterOp)
COLLECTIVE_SUBGROUPS(AllToAllOp)
COLLECTIVE_SUBGROUPS(PermuteOp)
COLLECTIVE_SUBGROUPS(LocalSliceOp)
COLLECTIVE_SUBGROUPS(MakePartialOp)
#undef COLLECTIVE_SUBGROUPS

LogicalResult AllReduceOp::verify() {
  return verifyCollective(*this, getAxes(), getMesh(), getFromAttr(),
                          getToAttr(), keepShape);
}

LogicalResult AllGatherOp::verify() {
  return verifyCollective(
      *this, getAxes(), getMesh(), getFromAttr(), getToAttr(),
      [&](ArrayRef<int64_t> shape, int64_t k) {
        return scaleDim(*this, "dim", shape, getDim(), k, /*divide=*/false);
      });
}

LogicalResult ReduceScatterOp::verify() {
  return verifyCollective(
      *this, getAxes(), getMesh(), getFromAttr(), getToAttr(),
      [&](ArrayRef<int64_t> shape, int64_t k) {
        return scaleDim(*this, "dim", shape, getDim(), k, /*divide=*/true);
      });
}

LogicalResult AllToAllOp::verify() {
  return verifyCollective(
      *this, getAxes(), getMesh(), getFromAttr(), getToAttr(),
      [&](ArrayRef<int64_t> shape,
          int64_t k) -> FailureOr<SmallVector<int64_t>> {
        if (getSplitDim() == getConcatDim()) {
          emitOpError("`split` and `concat` must be different dimensions");
          return failure();
        }
        FailureOr<SmallVector<int64_t>> split =
            scaleDim(*this, "split", shape, getSplitDim(), k, true);
        if (failed(split))
          return failure();
        return scaleDim(*this, "concat", *split, getConcatDim(), k, false);
      });
}

LogicalResult PermuteOp::verify() {
  ArrayRef<int64_t> perm = getPerm(), axes = getAxes(), mesh = getMesh();
  if (perm.size() != axes.size())
    return emitOpError("`perm` must have one entry per mesh axis in `over` (")
           << axes.size() << "), got " << perm.size();
  llvm::SmallBitVector seen(perm.size());
  bool identity = true;
  for (auto [i, p] : llvm::enumerate(perm)) {
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen.test(p))
      return emitOpError("`perm` must be a permutation of 0 .. ")
             << perm.size() - 1;
    seen.set(p);
    identity &= p == static_cast<int64_t>(i);
    if (axes[i] >= 0 && axes[i] < static_cast<int64_t>(mesh.size()) &&
        axes[p] >= 0 && axes[p] < static_cast<int64_t>(mesh.size()) &&
        mesh[axes[i]] != mesh[axes[p]])
      return emitOpError("`perm` exchanges digits of mesh axes ")
             << axes[i] << " and " << axes[p] << " of different sizes ("
             << mesh[axes[i]] << " and " << mesh[axes[p]] << ")";
  }
  if (identity)
    return emitOpError("`perm` is the identity: nothing moves");
  return verifyCollective(*this, axes, mesh, getFromAttr(), getToAttr(),
                          keepShape);
}

LogicalResult LocalSliceOp::verify() {
  return verifyCollective(
      *this, getAxes(), getMesh(), getFromAttr(), getToAttr(),
      [&](ArrayRef<int64_t> shape, int64_t k) {
        return scaleDim(*this, "dim", shape, getDim(), k, /*divide=*/true);
      });
}

LogicalResult MakePartialOp::verify() {
  return verifyCollective(
      *this, getAxes(), getMesh(), getFromAttr(), getToAttr(),
      [&](ArrayRef<int64_t> shape,
          int64_t k) -> FailureOr<SmallVector<int64_t>> {
        if (std::optional<int64_t> dim = getDim())
          return scaleDim(*this, "dim", shape, *dim, k, /*divide=*/false);
        return SmallVector<int64_t>(shape);
      });
}

/// A sparse collective of rows (local view only): rows named by an i64
/// tensor, the result's rows the operand's divided (`divide`) or
/// multiplied by the sub-group size.
template <typename OpT> LogicalResult verifySparseRows(OpT op, bool divide) {
  if (op.getInput().getType().getRank() < 1)
    return op.emitOpError("needs an operand of rank 1 or more (its rows)");
  if (!op.getRows().getType().getElementType().isInteger(64))
    return op.emitOpError("`rows` must hold i64 row indices, got ")
           << op.getRows().getType().getElementType();
  return verifyCollective(
      op, op.getAxes(), op.getMesh(), /*from=*/nullptr, /*to=*/nullptr,
      [&](ArrayRef<int64_t> shape, int64_t k) {
        return scaleDim(op, "dim", shape, 0, k, divide);
      });
}

LogicalResult SparseReduceScatterOp::verify() {
  return verifySparseRows(*this, /*divide=*/true);
}

LogicalResult SparseAllGatherOp::verify() {
  return verifySparseRows(*this, /*divide=*/false);
}

LogicalResult SparseAllGatherStartOp::verify() {
  if (failed(verifySparseRows(*this, /*divide=*/false)))
    return failure();
  // Its result is read by its wait alone: nothing may see the buffer
  // before the rows have arrived.
  Value result = getResult();
  if (!result.hasOneUse() || !isa<WaitOp>(*result.getUsers().begin()))
    return emitOpError("must have one user, the hspmd.wait that completes "
                       "it (its result is not ready before)");
  auto wait = cast<WaitOp>(*result.getUsers().begin());
  if (wait->getBlock() != (*this)->getBlock() ||
      !(*this)->isBeforeInBlock(wait))
    return emitOpError("must be completed by an hspmd.wait later in its "
                       "block");
  return success();
}

LogicalResult WaitOp::verify() {
  auto start = getPending().getDefiningOp<SparseAllGatherStartOp>();
  if (!start)
    return emitOpError("waits for a value no start op made (an "
                       "hspmd.sparse_all_gather_start's result)");
  if (!llvm::equal(getKeep(), start->getOperands()))
    return emitOpError("must keep exactly its start's operands (")
           << start->getNumOperands() << "), in order: the collective reads "
           << "them until the wait";
  return success();
}

LogicalResult SparseExchangeOp::verify() {
  auto input = getInput().getType();
  auto result = getResult().getType();
  if (input.getRank() < 1)
    return emitOpError("needs an operand of rank 1 or more (its rows)");
  if (!getRows().getType().getElementType().isInteger(64))
    return emitOpError("`rows` must hold i64 row indices, got ")
           << getRows().getType().getElementType();
  if (!input.hasStaticShape() || !result.hasStaticShape())
    return emitOpError("needs static shapes");
  if (result.getRank() != input.getRank() ||
      result.getElementType() != input.getElementType() ||
      input.getShape().drop_front() != result.getShape().drop_front())
    return emitOpError("result ")
           << result << " and operand " << input
           << " must be rows of one tensor";
  ArrayRef<int64_t> among = getAmong(), blocks = getBlocks();
  if (among.empty())
    return emitOpError("needs at least one device in `among`");
  for (auto [i, device] : llvm::enumerate(among)) {
    if (device < 0)
      return emitOpError("device ids must be non-negative, got ") << device;
    if (i > 0 && device <= among[i - 1])
      return emitOpError(
          "`among` must list devices in strictly increasing order");
  }
  if (blocks.size() != 2 * among.size())
    return emitOpError("`blocks` needs a first row and a size per member (")
           << 2 * among.size() << " values), got " << blocks.size();
  // The whole rows, and the block of this device.
  RankedTensorType whole = getGather() ? result : input;
  RankedTensorType block = getGather() ? input : result;
  int64_t rows = whole.getDimSize(0);
  bool some = false;
  for (size_t j = 0; j < among.size(); ++j) {
    int64_t first = blocks[2 * j], size = blocks[2 * j + 1];
    if (first < 0 || size < 0 ||
        (!ShapedType::isDynamic(rows) && first + size > rows))
      return emitOpError("the block of device ")
             << among[j] << ", rows [" << first << ", " << first + size
             << "), is not inside the " << (getGather() ? "result" : "operand")
             << "'s " << rows << " rows";
    some |= size == block.getDimSize(0);
  }
  if (!some)
    return emitOpError(getGather() ? "operand" : "result")
           << " of " << block.getDimSize(0) << " rows is no member's block";
  // In a device group's function (or a merged program's op of a group),
  // every device of the group is a member with a block of this size.
  DeviceGroupAttr group;
  for (Operation *scope = getOperation(); scope && !group;
       scope = scope->getParentOp())
    group = scope->getAttrOfType<DeviceGroupAttr>(
        HSPMDDialect::getGroupAttrName());
  if (group)
    for (int64_t device : group.getDevices()) {
      const int64_t *at = llvm::find(among, device);
      if (at == among.end())
        return emitOpError("runs on device ")
               << device << " of its group, which is not among its devices";
      int64_t size = blocks[2 * (at - among.begin()) + 1];
      if (size != block.getDimSize(0))
        return emitOpError("device ")
               << device << " of its group has a block of " << size
               << " rows, but the " << (getGather() ? "operand" : "result")
               << " has " << block.getDimSize(0);
    }
  return success();
}

LogicalResult AxisIndexOp::verify() {
  ArrayRef<int64_t> mesh = getMesh(), axes = getAxes();
  if (mesh.empty())
    return emitOpError("needs a non-empty mesh");
  for (int64_t size : mesh)
    if (size < 1)
      return emitOpError("mesh sizes must be at least 1, got ") << size;
  if (axes.empty())
    return emitOpError("needs at least one mesh axis");
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= static_cast<int64_t>(mesh.size()))
      return emitOpError("mesh axis ")
             << axis << " is out of range for a mesh of " << mesh.size()
             << " axes";
    if (i > 0 && axis <= axes[i - 1])
      return emitOpError("mesh axes must be strictly increasing");
  }
  return success();
}

/// Whether any group of `layout` holds partial sums inside the group.
static bool hasPartialAxis(UnionAttr layout) {
  return llvm::any_of(layout.getStates(), [](DistStatesAttr states) {
    return llvm::any_of(states.getAxes(),
                        [](const Axis &axis) { return axis.isPartial(); });
  });
}

LogicalResult ExchangeOp::verify() {
  ArrayRef<int64_t> shape = getShape();
  for (int64_t size : shape)
    if (size < 0)
      return emitOpError("needs a static, non-negative shape, got ")
             << size;
  int64_t rank = static_cast<int64_t>(shape.size());
  if (getInput().getType().getRank() != rank ||
      getResult().getType().getRank() != rank)
    return emitOpError("operand and result must have the rank of the shape (")
           << rank << ")";
  if (getInput().getType().getElementType() !=
      getResult().getType().getElementType())
    return emitOpError("operand and result must have the same element type");
  auto withRole = [&](StringRef role) {
    return [this, role]() {
      InFlightDiagnostic diag = emitOpError();
      diag << role << " layout: ";
      return diag;
    };
  };
  if (failed(verifyLayoutForShape(getSource(), shape, withRole("source"))) ||
      failed(verifyLayoutForShape(getTarget(), shape, withRole("target"))))
    return failure();
  UnionAttr target = getTarget();
  if (target.getRelation() == UnionRelation::Partial || hasPartialAxis(target))
    return emitOpError("target layout ")
           << target << " holds partial sums; an exchange delivers complete "
           << "values";
  UnionAttr source = getSource();
  if (source.getRelation() == UnionRelation::Partial) {
    if (source.getReduction() != ReductionKind::Sum)
      return emitOpError("source layout ")
             << source << " is not a partial sum; only sums are exchanged";
    if (hasPartialAxis(source))
      return emitOpError("source layout ")
             << source
             << " holds partial sums inside a group as well as across "
                "groups; reduce inside the groups first";
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialects/hspmd/IR/HSPMDOps.cpp.inc"

std::optional<CollectiveView> loom::hspmd::getCollectiveView(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<CollectiveView>>(op)
      .Case<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, PermuteOp,
            LocalSliceOp, MakePartialOp>([](auto collective) {
        return CollectiveView{collective.getAxes(), collective.getMesh(),
                              collective.getFromAttr(),
                              collective.getToAttr()};
      })
      .Case<SparseReduceScatterOp, SparseAllGatherOp, SparseAllGatherStartOp>(
          [](auto sparse) {
        return CollectiveView{sparse.getAxes(), sparse.getMesh(), nullptr,
                              nullptr};
      })
      .Default([](Operation *) { return std::nullopt; });
}

std::string loom::hspmd::getCollectiveKind(Operation *op) {
  if (isa<SparseAllGatherStartOp>(op))
    return "sparse_all_gather";
  return op->getName().stripDialect().str();
}

void loom::hspmd::dropGlobalView(Operation *op) {
  llvm::TypeSwitch<Operation *>(op)
      .Case<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, PermuteOp,
            LocalSliceOp, MakePartialOp>([](auto collective) {
        collective.removeFromAttr();
        collective.removeToAttr();
      });
}
