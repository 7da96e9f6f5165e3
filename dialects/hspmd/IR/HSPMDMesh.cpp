//===- HSPMDMesh.cpp - The mesh of a device group -------------------------===//

#include "dialects/hspmd/IR/HSPMDMesh.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <numeric>

using namespace mlir;
using namespace loom::hspmd;

int64_t Mesh::getNumDevices() const {
  int64_t product = 1;
  for (int64_t size : sizes)
    product *= size;
  return product;
}

SmallVector<int64_t> Mesh::getCoordinates(int64_t index) const {
  SmallVector<int64_t> coordinates(sizes.size(), 0);
  for (int64_t axis = getRank() - 1; axis >= 0; --axis) {
    coordinates[axis] = index % sizes[axis];
    index /= sizes[axis];
  }
  return coordinates;
}

std::string Mesh::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  llvm::interleaveComma(sizes, os);
  os << ']';
  return text;
}

std::string MeshRole::str() const {
  switch (kind) {
  case AxisKind::Split: {
    std::string text = "S" + std::to_string(dim);
    for (auto [i, part] : llvm::enumerate(ratio))
      text += (i ? ":" : "[") + std::to_string(part);
    return ratio.empty() ? text : text + "]";
  }
  case AxisKind::Duplicate:
    return "D";
  case AxisKind::Partial:
    return "P(" + stringifyReductionKind(reduction).str() + ")";
  }
  llvm_unreachable("unknown axis kind");
}

std::string MeshLayout::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '(';
  llvm::interleaveComma(roles, os, [&](const MeshRole &role) { os << role.str(); });
  os << ')';
  return text;
}

/// The cut points of `states`: the products of the degrees of every suffix
/// of its axes, 1 and the device count included. Degree-1 axes add nothing.
static SmallVector<int64_t> getCutPoints(DistStatesAttr states) {
  SmallVector<int64_t> cuts{1};
  for (const Axis &axis : llvm::reverse(states.getAxes()))
    if (axis.degree > 1)
      cuts.push_back(cuts.back() * axis.degree);
  return cuts;
}

FailureOr<Mesh> loom::hspmd::refineMesh(ArrayRef<DistStatesAttr> states) {
  if (states.empty())
    return Mesh{};
  int64_t numDevices = states.front().getNumDevices();
  SmallVector<int64_t> cuts;
  for (DistStatesAttr member : states) {
    if (member.getNumDevices() != numDevices)
      return failure();
    llvm::append_range(cuts, getCutPoints(member));
  }
  llvm::sort(cuts);
  cuts.erase(llvm::unique(cuts), cuts.end());
  // The cut points, smallest first, must each divide the next: then every
  // axis of every states is a run of consecutive mesh axes.
  Mesh mesh;
  for (size_t i = cuts.size() - 1; i > 0; --i) {
    if (cuts[i] % cuts[i - 1] != 0)
      return failure();
    mesh.sizes.push_back(cuts[i] / cuts[i - 1]);
  }
  return mesh;
}

static MeshRole roleOf(const Axis &axis) {
  switch (axis.kind) {
  case AxisKind::Split: {
    // Equal explicit blocks are an even split.
    if (llvm::all_equal(axis.sizes))
      return MeshRole::split(axis.dim);
    int64_t divisor = 0;
    for (int64_t size : axis.sizes)
      divisor = std::gcd(divisor, size);
    SmallVector<int64_t> ratio;
    for (int64_t size : axis.sizes)
      ratio.push_back(size / divisor);
    return MeshRole::split(axis.dim, ratio);
  }
  case AxisKind::Duplicate:
    return MeshRole::duplicate();
  case AxisKind::Partial:
    return MeshRole::partial(axis.reduction);
  }
  llvm_unreachable("unknown axis kind");
}

FailureOr<MeshLayout> loom::hspmd::toMeshLayout(DistStatesAttr states,
                                                const Mesh &mesh) {
  MeshLayout layout;
  int64_t next = 0;
  auto skipUnitAxes = [&] {
    while (next < mesh.getRank() && mesh.sizes[next] == 1) {
      layout.roles.push_back(MeshRole::duplicate());
      ++next;
    }
  };
  for (const Axis &axis : states.getAxes()) {
    if (axis.degree == 1)
      continue;
    // Explicit blocks cut along one mesh axis: a finer mesh would cut them
    // again, which has no meaning.
    if (!axis.sizes.empty() && !llvm::all_equal(axis.sizes)) {
      skipUnitAxes();
      if (next == mesh.getRank() || mesh.sizes[next] != axis.degree)
        return failure();
      layout.roles.push_back(roleOf(axis));
      ++next;
      continue;
    }
    int64_t covered = 1;
    while (covered < axis.degree) {
      skipUnitAxes();
      if (next == mesh.getRank() ||
          axis.degree % (covered * mesh.sizes[next]) != 0)
        return failure();
      covered *= mesh.sizes[next];
      layout.roles.push_back(roleOf(axis));
      ++next;
    }
  }
  skipUnitAxes();
  if (next != mesh.getRank())
    return failure();
  return layout;
}

/// Whether `lhs` and `rhs` would be the same #hspmd.states axis (a split of
/// the same dimension, both duplicates, or both partials).
static bool sameAxis(const MeshRole &lhs, const MeshRole &rhs) {
  return lhs.kind == rhs.kind && (!lhs.isSplit() || lhs.dim == rhs.dim);
}

/// Adjacent mesh axes with this role merge into one states axis (explicit
/// blocks do not: their proportions are along one mesh axis).
static bool merges(const MeshRole &earlier, const MeshRole &role) {
  return earlier == role && role.ratio.empty();
}

/// Merges `roles` (with their sizes) into states axes, or fails.
static FailureOr<SmallVector<Axis>> mergeRoles(ArrayRef<MeshRole> roles,
                                               ArrayRef<int64_t> sizes) {
  SmallVector<Axis> axes;
  SmallVector<MeshRole> axisRoles;
  for (auto [index, role] : llvm::enumerate(roles)) {
    int64_t size = sizes[index];
    if (size == 1)
      continue;
    if (!axisRoles.empty() && merges(axisRoles.back(), role)) {
      axes.back().degree *= size;
      continue;
    }
    const MeshRole &current = role;
    if (llvm::any_of(axisRoles, [&](const MeshRole &earlier) {
          return sameAxis(earlier, current);
        }))
      return failure();
    axisRoles.push_back(role);
    switch (role.kind) {
    case AxisKind::Split:
      axes.push_back(Axis::split(role.dim, size));
      break;
    case AxisKind::Duplicate:
      axes.push_back(Axis::duplicate(size));
      break;
    case AxisKind::Partial:
      axes.push_back(Axis::partial(size, role.reduction));
      break;
    }
  }
  return axes;
}

bool loom::hspmd::isRepresentable(ArrayRef<MeshRole> roles) {
  SmallVector<int64_t> sizes(roles.size(), 2);
  return succeeded(mergeRoles(roles, sizes));
}

FailureOr<DistStatesAttr> loom::hspmd::toStates(const MeshLayout &layout,
                                                const Mesh &mesh,
                                                MLIRContext *context) {
  if (static_cast<int64_t>(layout.roles.size()) != mesh.getRank())
    return failure();
  if (llvm::any_of(layout.roles, [](const MeshRole &role) {
        return role.isSplit() && role.dim < 0;
      }))
    return failure();
  FailureOr<SmallVector<Axis>> axes = mergeRoles(layout.roles, mesh.sizes);
  if (failed(axes))
    return failure();
  return DistStatesAttr::get(context, *axes);
}
