//===- HSPMDTransitions.cpp - Collectives as layout transitions -----------===//

#include "dialects/hspmd/IR/HSPMDTransitions.h"
#include "dialects/hspmd/IR/HSPMDOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace loom::hspmd;

StringRef loom::hspmd::getCollectiveName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::LocalSlice:
    return "local_slice";
  case CollectiveKind::MakePartial:
    return "make_partial";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::Permute:
    return "permute";
  }
  llvm_unreachable("unknown collective kind");
}

std::string CollectiveStep::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << getCollectiveName(kind);
  switch (kind) {
  case CollectiveKind::AllReduce:
    os << ' ' << stringifyReductionKind(reduction);
    break;
  case CollectiveKind::ReduceScatter:
    os << ' ' << stringifyReductionKind(reduction) << " dim " << dim;
    break;
  case CollectiveKind::AllGather:
  case CollectiveKind::LocalSlice:
    os << " dim " << dim;
    break;
  case CollectiveKind::MakePartial:
    if (dim >= 0)
      os << " dim " << dim;
    break;
  case CollectiveKind::AllToAll:
    os << " split " << dim << " concat " << concatDim;
    break;
  case CollectiveKind::Permute:
    os << " perm [";
    llvm::interleaveComma(perm, os);
    os << ']';
    break;
  }
  os << " over [";
  llvm::interleaveComma(axes, os);
  os << ']';
  return text;
}

FailureOr<CollectiveStep> loom::hspmd::getCollectiveStep(Operation *op) {
  CollectiveStep step;
  auto set = [&](CollectiveKind kind, ArrayRef<int64_t> axes) {
    step.kind = kind;
    step.axes.assign(axes.begin(), axes.end());
    return success();
  };
  LogicalResult known =
      llvm::TypeSwitch<Operation *, LogicalResult>(op)
          .Case([&](AllReduceOp c) {
            step.reduction = c.getReduction();
            return set(CollectiveKind::AllReduce, c.getAxes());
          })
          .Case([&](ReduceScatterOp c) {
            step.reduction = c.getReduction();
            step.dim = c.getDim();
            return set(CollectiveKind::ReduceScatter, c.getAxes());
          })
          .Case([&](AllGatherOp c) {
            step.dim = c.getDim();
            return set(CollectiveKind::AllGather, c.getAxes());
          })
          .Case([&](LocalSliceOp c) {
            step.dim = c.getDim();
            return set(CollectiveKind::LocalSlice, c.getAxes());
          })
          .Case([&](MakePartialOp c) {
            step.dim = c.getDim().value_or(-1);
            return set(CollectiveKind::MakePartial, c.getAxes());
          })
          .Case([&](AllToAllOp c) {
            step.dim = c.getSplitDim();
            step.concatDim = c.getConcatDim();
            return set(CollectiveKind::AllToAll, c.getAxes());
          })
          .Case([&](PermuteOp c) {
            step.perm.assign(c.getPerm().begin(), c.getPerm().end());
            return set(CollectiveKind::Permute, c.getAxes());
          })
          .Default([](Operation *) { return failure(); });
  if (failed(known))
    return failure();
  return step;
}

namespace {

/// Whether every axis of `layout` that has `role` and is not in `axes`
/// comes before every axis in `axes` (so the blocks of `axes` nest inside,
/// or are gathered from, the blocks of the others). On failure `why` names
/// the offending axis.
bool isMinor(const MeshLayout &layout, const MeshRole &role,
             ArrayRef<int64_t> axes, std::string &why) {
  llvm::SmallBitVector in(layout.roles.size());
  for (int64_t axis : axes)
    in.set(axis);
  for (auto [axis, other] : llvm::enumerate(layout.roles)) {
    if (in.test(axis) || other != role ||
        static_cast<int64_t>(axis) < axes.front())
      continue;
    why = "mesh axis " + std::to_string(axis) + " also has " + role.str() +
          " and comes after mesh axis " + std::to_string(axes.front()) +
          ", so the blocks would not nest";
    return false;
  }
  return true;
}

} // namespace

FailureOr<MeshLayout> loom::hspmd::applyCollective(const CollectiveStep &step,
                                                   const MeshLayout &from,
                                                   const Mesh &mesh,
                                                   std::string &why) {
  int64_t rank = from.roles.size();
  if (rank != mesh.getRank()) {
    why = "the layout has " + std::to_string(rank) + " mesh axes, the mesh " +
          std::to_string(mesh.getRank());
    return failure();
  }
  if (step.axes.empty()) {
    why = "no mesh axes";
    return failure();
  }
  for (auto [i, axis] : llvm::enumerate(step.axes))
    if (axis < 0 || axis >= rank || (i > 0 && axis <= step.axes[i - 1])) {
      why = "mesh axes must be strictly increasing and within the mesh";
      return failure();
    }
  MeshLayout to = from;
  // Every axis in `axes` must have role `expected`; it gets `next`.
  auto change = [&](const MeshRole &expected, const MeshRole &next) {
    for (int64_t axis : step.axes) {
      if (from.roles[axis] != expected) {
        why = "mesh axis " + std::to_string(axis) + " is " +
              from.roles[axis].str() + ", not " + expected.str();
        return false;
      }
      to.roles[axis] = next;
    }
    return true;
  };
  switch (step.kind) {
  case CollectiveKind::AllReduce:
    if (!change(MeshRole::partial(step.reduction), MeshRole::duplicate()))
      return failure();
    return to;
  case CollectiveKind::ReduceScatter:
    if (!change(MeshRole::partial(step.reduction), MeshRole::split(step.dim)) ||
        !isMinor(to, MeshRole::split(step.dim), step.axes, why))
      return failure();
    return to;
  case CollectiveKind::AllGather:
    if (!isMinor(from, MeshRole::split(step.dim), step.axes, why) ||
        !change(MeshRole::split(step.dim), MeshRole::duplicate()))
      return failure();
    return to;
  case CollectiveKind::LocalSlice:
    if (!change(MeshRole::duplicate(), MeshRole::split(step.dim)) ||
        !isMinor(to, MeshRole::split(step.dim), step.axes, why))
      return failure();
    return to;
  case CollectiveKind::MakePartial: {
    // Placing blocks at their positions is only a sum of the whole when
    // the sub-group's blocks are contiguous (its axes innermost).
    MeshRole expected =
        step.dim >= 0 ? MeshRole::split(step.dim) : MeshRole::duplicate();
    if ((step.dim >= 0 && !isMinor(from, expected, step.axes, why)) ||
        !change(expected, MeshRole::partial(ReductionKind::Sum)))
      return failure();
    return to;
  }
  case CollectiveKind::AllToAll:
    if (step.dim == step.concatDim) {
      why = "split and concat are the same dimension";
      return failure();
    }
    if (!isMinor(from, MeshRole::split(step.concatDim), step.axes, why) ||
        !change(MeshRole::split(step.concatDim), MeshRole::split(step.dim)) ||
        !isMinor(to, MeshRole::split(step.dim), step.axes, why))
      return failure();
    return to;
  case CollectiveKind::Permute: {
    if (step.perm.size() != step.axes.size()) {
      why = "perm needs one entry per mesh axis";
      return failure();
    }
    // dest[a]: the mesh axis that carries axis a's role afterwards.
    SmallVector<int64_t> dest = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    llvm::SmallBitVector seen(step.perm.size());
    for (auto [i, p] : llvm::enumerate(step.perm)) {
      if (p < 0 || p >= static_cast<int64_t>(step.perm.size()) ||
          seen.test(p)) {
        why = "perm is not a permutation";
        return failure();
      }
      seen.set(p);
      int64_t source = step.axes[i], target = step.axes[p];
      if (mesh.sizes[source] != mesh.sizes[target]) {
        why = "perm moves mesh axis " + std::to_string(source) +
              " onto mesh axis " + std::to_string(target) +
              " of another size";
        return failure();
      }
      dest[source] = target;
      to.roles[target] = from.roles[source];
    }
    // Axes that number the blocks of one dimension (or the contributions
    // of a pending reduction) must keep their mesh order.
    for (int64_t a = 0; a < rank; ++a)
      for (int64_t b = a + 1; b < rank; ++b) {
        const MeshRole &ra = from.roles[a], &rb = from.roles[b];
        bool numbered = (ra.isSplit() && rb.isSplit() && ra.dim == rb.dim) ||
                        (ra.isPartial() && rb.isPartial());
        if (numbered && mesh.sizes[a] > 1 && mesh.sizes[b] > 1 &&
            dest[a] > dest[b]) {
          why = "perm swaps the order of mesh axes " + std::to_string(a) +
                " and " + std::to_string(b) + " that both have " + ra.str() +
                ", which renumbers the blocks";
          return failure();
        }
      }
    return to;
  }
  }
  llvm_unreachable("unknown collective kind");
}

int64_t loom::hspmd::getStepBytesSent(const CollectiveStep &step,
                                      const Mesh &mesh, int64_t bytes,
                                      int64_t elementBytes, int64_t rank) {
  int64_t k = 1;
  for (int64_t axis : step.axes)
    k *= mesh.sizes[axis];
  switch (step.kind) {
  case CollectiveKind::AllGather:
    return (k - 1) * bytes;
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return bytes / k * (k - 1);
  case CollectiveKind::AllReduce: {
    int64_t n = bytes / elementBytes;
    int64_t own = (n / k + (rank < n % k ? 1 : 0)) * elementBytes;
    return bytes - own + (k - 1) * own;
  }
  case CollectiveKind::LocalSlice:
  case CollectiveKind::MakePartial:
    return 0;
  case CollectiveKind::Permute: {
    // The rank's digits over `axes`; it sends unless it is its own source.
    SmallVector<int64_t> digits(step.axes.size());
    int64_t rest = rank;
    for (int64_t i = step.axes.size() - 1; i >= 0; --i) {
      digits[i] = rest % mesh.sizes[step.axes[i]];
      rest /= mesh.sizes[step.axes[i]];
    }
    for (auto [i, source] : llvm::enumerate(step.perm))
      if (digits[i] != digits[source])
        return bytes;
    return 0;
  }
  }
  llvm_unreachable("unknown collective kind");
}
