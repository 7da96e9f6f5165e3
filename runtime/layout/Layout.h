//===- Layout.h - Layouts as plain data, and what they mean -----*- C++ -*-===//
//
// The MLIR-free layout core (runtime/README.md, "layout/"): device groups,
// their distributed states and unions of them as plain data, and the
// arithmetic everything outside the compiler needs of a layout: which block
// of a global tensor each device holds, which contribution of a pending
// reduction, which replica. The simulator, the host and device runtimes,
// `loom-run` and the compiled-program library use this; the compiler's
// attributes (#hspmd.union) convert to it (hspmd::toLayoutCore, dialects/hspmd/IR/HSPMDLayout.h).
//
// Layouts here have the meaning the hspmd dialect gives them
// (docs/rationale/partitioning.md): a member's device index is read as
// coordinates over its axes, the first axis slowest; a split axis of
// degree n cuts its dimension into n blocks, equal where n divides it,
// otherwise balanced (the first size mod n blocks one element larger: 8 over
// 3 is 3/3/2), or of the explicit sizes the axis lists (`S1:[16, 8, 8]`,
// which keeps attention heads whole); across members of a
// union, a split relation cuts one dimension by shares, a replicated one
// holds the whole value on every member, a partial one holds one
// contribution per member.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_LAYOUT_LAYOUT_H
#define LOOM_RUNTIME_LAYOUT_LAYOUT_H

#include "runtime/layout/Collectives.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom::layout {

enum class AxisKind { Split, Duplicate, Partial };

/// One axis of a device group's mesh: `S<dim>:<degree>`, `D:<degree>` or
/// `P(<reduction>):<degree>`.
struct Axis {
  AxisKind kind = AxisKind::Duplicate;
  int64_t dim = 0; // Split only
  int64_t degree = 1;
  Reduction reduction = Reduction::Sum; // Partial only
  /// Split only: the explicit block sizes, one per coordinate (degree of
  /// them); empty for equal or balanced blocks.
  std::vector<int64_t> sizes;

  static Axis split(int64_t dim, int64_t degree) {
    return {AxisKind::Split, dim, degree, Reduction::Sum, {}};
  }
  static Axis split(int64_t dim, std::vector<int64_t> sizes) {
    int64_t degree = static_cast<int64_t>(sizes.size());
    return {AxisKind::Split, dim, degree, Reduction::Sum, std::move(sizes)};
  }
  static Axis duplicate(int64_t degree) {
    return {AxisKind::Duplicate, 0, degree, Reduction::Sum, {}};
  }
  static Axis partial(int64_t degree, Reduction reduction = Reduction::Sum) {
    return {AxisKind::Partial, 0, degree, reduction, {}};
  }
  bool operator==(const Axis &other) const;
  /// `S0:2`, `S1:[16, 8, 8]`, `D:2` or `P(sum):2`.
  std::string str() const;
};

/// The sizes of the blocks a split axis cuts a dimension (or a group's
/// share of it) of `size` into, in coordinate order: its explicit sizes,
/// which must sum to `size`, or `size / degree` each where the degree
/// divides it, or balanced blocks. Fails, naming the axis, where explicit
/// sizes do not sum to `size` or a balanced split of a non-empty dimension
/// would leave a block empty.
absl::StatusOr<std::vector<int64_t>> getBlockSizes(const Axis &axis,
                                                   int64_t size);

/// Whether a split axis cuts `size` into equal blocks (every block the same
/// size): what the compiler's even-only paths need.
bool isEvenSplit(const Axis &axis, int64_t size);

/// The distributed states of one device group: its axes, first slowest.
struct States {
  std::vector<Axis> axes;

  /// The product of the degrees.
  int64_t getNumDevices() const;
  /// The coordinates of the device at `index` of its group, one per axis.
  std::vector<int64_t> getCoordinates(int64_t index) const;
  /// The product of the degrees of the duplicate (partial) axes.
  int64_t getDuplicateDegree() const;
  int64_t getPartialDegree() const;
  std::string str() const;
};

enum class Relation { Split, Replicated, Partial };

/// One member of a union: a device group and its states.
struct Member {
  std::vector<int64_t> devices;
  States states;
};

/// A layout: a union of device groups. One group is a union of one member
/// (its relation does not matter).
struct Layout {
  Relation relation = Relation::Replicated;
  /// Split relation: the dimension cut among the members, and their shares
  /// of it (ratios, or with `explicitSizes` the extents themselves; empty:
  /// equal).
  int64_t splitDim = 0;
  std::vector<int64_t> shares;
  bool explicitSizes = false;
  /// Partial relation: how the members' contributions combine.
  Reduction reduction = Reduction::Sum;
  std::vector<Member> members;

  /// One group of `devices` with `axes`.
  static Layout group(std::vector<int64_t> devices, std::vector<Axis> axes);

  /// The member holding `device`, or -1.
  int64_t getMemberOf(int64_t device) const;
  /// Every device, member by member, in group order.
  std::vector<int64_t> getDevices() const;
  /// The layout's spelling, as the hspmd dialect prints it.
  std::string str() const;
};

/// The part of a tensor that one device holds.
struct Shard {
  /// The block of the global tensor, per dimension.
  std::vector<int64_t> offsets, sizes;
  /// The device's contribution among `numPartials` still to be combined
  /// with `reduction` (numPartials == 1: no reduction pending).
  int64_t partialIndex = 0;
  int64_t numPartials = 1;
  std::optional<Reduction> reduction;
  /// Which of the `numReplicas` devices holding this very contribution of
  /// this block the device is.
  int64_t replicaIndex = 0;
  int64_t numReplicas = 1;

  bool operator==(const Shard &other) const;
  bool operator!=(const Shard &other) const { return !(*this == other); }
  int64_t getNumElements() const;
  std::string str() const;
};

/// Whether `layout` is well formed (members' device counts match their
/// states, no device twice, degrees positive, shares fit the members) and
/// can lay out a tensor of `shape` (split dimensions exist; blocks are
/// equal). InvalidArgument naming the first problem otherwise.
absl::Status checkLayout(const Layout &layout,
                         const std::vector<int64_t> &shape);

/// The extent of dimension `layout.splitDim` each member holds, in member
/// order, for a split union and a dimension of `dimSize`.
absl::StatusOr<std::vector<int64_t>> getGroupExtents(const Layout &layout,
                                                     int64_t dimSize);

/// The shard `device` holds of a tensor of `shape` laid out as `layout`.
/// NotFound when the device is not in the layout; InvalidArgument when the
/// layout does not fit the shape (checkLayout).
absl::StatusOr<Shard> getShard(const Layout &layout,
                               const std::vector<int64_t> &shape,
                               int64_t device);

/// "[a, b, c]".
std::string toString(const std::vector<int64_t> &values);

/// A layout as a flat table of integers, which compiled programs carry
/// (docs/program-library.md):
///   relation (0 split, 1 replicated, 2 partial), split dimension,
///   reduction (0 sum, 1 mean, 2 max, 3 min), explicit sizes (0/1),
///   number of shares S, shares[S], number of members M, then per member:
///     number of devices N, devices[N], number of axes A, then per axis:
///       kind (0 split, 1 duplicate, 2 partial), dimension, degree,
///       reduction, number of explicit block sizes K (0 or the degree),
///       sizes[K].
std::vector<int64_t> encodeLayout(const Layout &layout);
/// The inverse; InvalidArgument for a table that is truncated, too long,
/// holds an unknown code, or does not describe a well-formed layout.
absl::StatusOr<Layout> decodeLayout(const int64_t *table, int64_t size);

} // namespace loom::layout

#endif // LOOM_RUNTIME_LAYOUT_LAYOUT_H
