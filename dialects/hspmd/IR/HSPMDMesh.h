//===- HSPMDMesh.h - The mesh of a device group ----------------*- C++ -*-===//
//
// Inside one device group, distributed states read a device's index as a
// mixed-radix number, one digit per axis, the first axis the most
// significant. Two states of the same group relate axis by axis only where
// their digits line up, so layout propagation works on the group's *mesh*:
// the common refinement of the axis strides of every layout in play (the
// stride of an axis is the product of the degrees after it).
//
//   [S0:4] and [S0:2, S1:2] on 4 devices share the mesh [2, 2]; on it the
//   first is (S0, S0) (dimension 0 split by both mesh axes, outer first)
//   and the second (S0, S1).
//   [S0:2, S1:3] and [S0:3, S1:2] on 6 devices share no mesh: the strides
//   3 and 2 do not divide one another.
//
// A mesh layout gives every mesh axis a role (split of a dimension,
// duplicate, partial with its reduction). It converts back to
// #hspmd.states by merging adjacent mesh axes of equal role; one whose equal
// roles are not adjacent, e.g. (S0, D, S0), has no states spelling.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_HSPMD_IR_HSPMDMESH_H
#define LOOM_DIALECTS_HSPMD_IR_HSPMDMESH_H

#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>

namespace loom::hspmd {

/// The mesh of a device group: the sizes of its axes, first slowest. The
/// product of the sizes is the number of devices in the group; the empty
/// mesh is a single device.
struct Mesh {
  llvm::SmallVector<int64_t> sizes;

  int64_t getRank() const { return sizes.size(); }
  /// The number of devices: the product of the sizes.
  int64_t getNumDevices() const;
  /// The coordinate along each mesh axis of the device with index `index`
  /// (mixed radix, first axis most significant).
  llvm::SmallVector<int64_t> getCoordinates(int64_t index) const;
  /// `[2, 2]`.
  std::string str() const;

  bool operator==(const Mesh &other) const { return sizes == other.sizes; }
  bool operator!=(const Mesh &other) const { return !(*this == other); }
};

/// What one mesh axis does to a tensor: splits a dimension, duplicates it,
/// or holds contributions to a pending reduction.
struct MeshRole {
  AxisKind kind = AxisKind::Duplicate;
  /// The dimension a split cuts; -1 for the other kinds.
  int64_t dim = -1;
  /// The reduction of a partial; ignored for the other kinds.
  ReductionKind reduction = ReductionKind::Sum;
  /// A split into blocks of explicit sizes: their proportions, in lowest
  /// terms (`S1:[16, 8, 8]` reads as 2:1:1), one per coordinate of the mesh
  /// axis; a dimension of size D is cut into D / sum * ratio. Empty for
  /// equal or balanced blocks. Interned (hspmd::internBlockSizes).
  llvm::ArrayRef<int64_t> ratio;

  static MeshRole split(int64_t dim) {
    return {AxisKind::Split, dim, ReductionKind::Sum, {}};
  }
  static MeshRole split(int64_t dim, llvm::ArrayRef<int64_t> ratio) {
    return {AxisKind::Split, dim, ReductionKind::Sum, internBlockSizes(ratio)};
  }
  static MeshRole duplicate() {
    return {AxisKind::Duplicate, -1, ReductionKind::Sum, {}};
  }
  static MeshRole partial(ReductionKind reduction) {
    return {AxisKind::Partial, -1, reduction, {}};
  }

  bool isSplit() const { return kind == AxisKind::Split; }
  bool isDuplicate() const { return kind == AxisKind::Duplicate; }
  bool isPartial() const { return kind == AxisKind::Partial; }

  /// `S0`, `S1[2:1:1]`, `D` or `P(sum)`.
  std::string str() const;

  bool operator==(const MeshRole &other) const {
    return kind == other.kind && dim == other.dim &&
           (!isPartial() || reduction == other.reduction) &&
           ratio == other.ratio;
  }
  bool operator!=(const MeshRole &other) const { return !(*this == other); }
};

/// One role per mesh axis, first slowest.
struct MeshLayout {
  llvm::SmallVector<MeshRole> roles;

  /// `(S0, D)`.
  std::string str() const;
  bool operator==(const MeshLayout &other) const {
    return roles == other.roles;
  }
  bool operator!=(const MeshLayout &other) const { return !(*this == other); }
};

/// The common refinement of the axis strides of `states` (degree-1 axes
/// ignored): the mesh every one of them can be read on. Fails when the
/// states span different device counts or their strides do not form a
/// divisibility chain. No states give the empty mesh.
mlir::FailureOr<Mesh> refineMesh(llvm::ArrayRef<DistStatesAttr> states);

/// `states` read on `mesh`: an axis of degree n covers the next consecutive
/// mesh axes whose sizes multiply to n (a degree-1 axis covers none) and
/// gives each of them its role; a split covering several mesh axes splits
/// its dimension by each, outer first. Fails when the degrees do not line
/// up with the mesh (mesh sizes of 1 are covered by no axis and read as
/// duplicates).
mlir::FailureOr<MeshLayout> toMeshLayout(DistStatesAttr states,
                                         const Mesh &mesh);

/// The #hspmd.states of a mesh layout: adjacent mesh axes with equal roles
/// merge into one axis of the product degree; mesh axes of size 1 are
/// dropped. Fails when equal roles are not adjacent (`(S0, D, S0)`) or two
/// partial roles have different reductions, which no states can spell.
mlir::FailureOr<DistStatesAttr> toStates(const MeshLayout &layout,
                                         const Mesh &mesh,
                                         mlir::MLIRContext *context);

/// Whether `toStates` succeeds for `roles` on a mesh whose axes all have
/// sizes above 1: equal roles are adjacent and partial roles agree on their
/// reduction.
bool isRepresentable(llvm::ArrayRef<MeshRole> roles);

} // namespace loom::hspmd

#endif // LOOM_DIALECTS_HSPMD_IR_HSPMDMESH_H
