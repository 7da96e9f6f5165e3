//===- Layout.cpp - Layouts as plain data, and what they mean -------------===//

#include "runtime/layout/Layout.h"

#include <algorithm>
#include <limits>
#include <set>

using namespace loom::layout;

std::string loom::layout::toString(const std::vector<int64_t> &values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

//===----------------------------------------------------------------------===//
// Axes and states
//===----------------------------------------------------------------------===//

bool Axis::operator==(const Axis &other) const {
  if (kind != other.kind || degree != other.degree)
    return false;
  if (kind == AxisKind::Split)
    return dim == other.dim && sizes == other.sizes;
  return kind != AxisKind::Partial || reduction == other.reduction;
}

std::string Axis::str() const {
  switch (kind) {
  case AxisKind::Split:
    return "S" + std::to_string(dim) + ":" +
           (sizes.empty() ? std::to_string(degree) : toString(sizes));
  case AxisKind::Duplicate:
    return "D:" + std::to_string(degree);
  case AxisKind::Partial:
    return std::string("P(") + getName(reduction) +
           "):" + std::to_string(degree);
  }
  return "?";
}

int64_t States::getNumDevices() const {
  int64_t count = 1;
  for (const Axis &axis : axes)
    count *= axis.degree;
  return count;
}

std::vector<int64_t> States::getCoordinates(int64_t index) const {
  std::vector<int64_t> coordinates(axes.size());
  for (size_t i = axes.size(); i-- > 0;) {
    coordinates[i] = index % axes[i].degree;
    index /= axes[i].degree;
  }
  return coordinates;
}

absl::StatusOr<std::vector<int64_t>>
loom::layout::getBlockSizes(const Axis &axis, int64_t size) {
  if (!axis.sizes.empty()) {
    int64_t total = 0;
    for (int64_t block : axis.sizes)
      if (__builtin_add_overflow(total, block, &total))
        return absl::InvalidArgumentError("the block sizes of " + axis.str() +
                                          " overflow a 64-bit size");
    if (total != size)
      return absl::InvalidArgumentError(
          "the block sizes of " + axis.str() + " sum to " +
          std::to_string(total) + " but the dimension they cut has size " +
          std::to_string(size));
    return axis.sizes;
  }
  if (size > 0 && size < axis.degree)
    return absl::InvalidArgumentError(
        "a dimension of size " + std::to_string(size) + " cannot be split " +
        std::to_string(axis.degree) + " ways (" + axis.str() +
        ") without an empty block");
  std::vector<int64_t> blocks(axis.degree);
  for (int64_t j = 0; j < axis.degree; ++j)
    blocks[j] = getChunkSize(size, axis.degree, j);
  return blocks;
}

bool loom::layout::isEvenSplit(const Axis &axis, int64_t size) {
  if (axis.sizes.empty())
    return size % axis.degree == 0;
  return std::all_of(axis.sizes.begin(), axis.sizes.end(),
                     [&](int64_t block) { return block == axis.sizes[0]; });
}

static int64_t degreeOf(const States &states, AxisKind kind) {
  int64_t degree = 1;
  for (const Axis &axis : states.axes)
    if (axis.kind == kind)
      degree *= axis.degree;
  return degree;
}

int64_t States::getDuplicateDegree() const {
  return degreeOf(*this, AxisKind::Duplicate);
}

int64_t States::getPartialDegree() const {
  return degreeOf(*this, AxisKind::Partial);
}

std::string States::str() const {
  std::string text = "[";
  for (size_t i = 0; i < axes.size(); ++i)
    text += (i ? ", " : "") + axes[i].str();
  return text + "]";
}

//===----------------------------------------------------------------------===//
// Layouts
//===----------------------------------------------------------------------===//

Layout Layout::group(std::vector<int64_t> devices, std::vector<Axis> axes) {
  Layout layout;
  layout.members.push_back({std::move(devices), States{std::move(axes)}});
  return layout;
}

int64_t Layout::getMemberOf(int64_t device) const {
  for (size_t i = 0; i < members.size(); ++i)
    if (std::find(members[i].devices.begin(), members[i].devices.end(),
                  device) != members[i].devices.end())
      return static_cast<int64_t>(i);
  return -1;
}

std::vector<int64_t> Layout::getDevices() const {
  std::vector<int64_t> devices;
  for (const Member &member : members)
    devices.insert(devices.end(), member.devices.begin(),
                   member.devices.end());
  return devices;
}

std::string Layout::str() const {
  std::string text = "#hspmd.union<";
  if (members.size() > 1 || relation != Relation::Replicated) {
    switch (relation) {
    case Relation::Split:
      text += "split(" + std::to_string(splitDim) + ")";
      break;
    case Relation::Replicated:
      text += "replicated";
      break;
    case Relation::Partial:
      text += std::string("partial(") + getName(reduction) + ")";
      break;
    }
    if (!shares.empty())
      text += (explicitSizes ? " sizes " : " shares ") + toString(shares);
    text += ": ";
  }
  for (size_t i = 0; i < members.size(); ++i)
    text += (i ? ", {" : "{") + toString(members[i].devices) + ": " +
            members[i].states.str() + "}";
  return text + ">";
}

bool Shard::operator==(const Shard &other) const {
  return offsets == other.offsets && sizes == other.sizes &&
         partialIndex == other.partialIndex &&
         numPartials == other.numPartials && reduction == other.reduction &&
         replicaIndex == other.replicaIndex && numReplicas == other.numReplicas;
}

int64_t Shard::getNumElements() const {
  return loom::layout::getNumElements(sizes);
}

std::string Shard::str() const {
  std::string text = "shard ";
  if (sizes.empty())
    text += "scalar";
  for (size_t i = 0; i < sizes.size(); ++i)
    text += (i ? "x" : "") + std::to_string(sizes[i]);
  text += " at " + toString(offsets);
  if (numPartials > 1)
    text += ", partial " + std::to_string(partialIndex) + "/" +
            std::to_string(numPartials) + " (" + getName(*reduction) + ")";
  if (numReplicas > 1)
    text += ", replica " + std::to_string(replicaIndex) + "/" +
            std::to_string(numReplicas);
  return text;
}

//===----------------------------------------------------------------------===//
// What a layout means for a shape
//===----------------------------------------------------------------------===//

namespace {

/// Split dimensions beyond this are refused, as the hspmd dialect does, so
/// that no arithmetic on them overflows.
constexpr int64_t kMaxSplitDim = std::numeric_limits<int32_t>::max();

absl::Status invalid(const std::string &message) {
  return absl::InvalidArgumentError(message);
}

/// The layout's own consistency, independent of a shape: what the hspmd
/// dialect's verifiers check of an attribute.
absl::Status checkStructure(const Layout &layout) {
  if (layout.members.empty())
    return invalid("union has no member");
  std::set<int64_t> seen;
  for (size_t i = 0; i < layout.members.size(); ++i) {
    const Member &member = layout.members[i];
    std::string which = "union member " + std::to_string(i);
    if (member.devices.empty())
      return invalid(which + " has no device");
    int64_t count = 1;
    const std::vector<Axis> &axes = member.states.axes;
    for (size_t a = 0; a < axes.size(); ++a) {
      const Axis &axis = axes[a];
      for (size_t b = 0; b < a; ++b)
        if (axes[b].kind == axis.kind &&
            (axis.kind != AxisKind::Split || axes[b].dim == axis.dim))
          return invalid(which + ": axis " + axis.str() + " repeats " +
                         axes[b].str() + "; each dimension is split at most "
                         "once and D and P appear at most once");
      if (axis.degree < 1)
        return invalid(which + ": axis " + axis.str() + " has degree " +
                       std::to_string(axis.degree) + "; expected at least 1");
      if (axis.kind == AxisKind::Split &&
          (axis.dim < 0 || axis.dim > kMaxSplitDim))
        return invalid(which + ": axis " + axis.str() +
                       " splits a dimension out of range");
      if (!axis.sizes.empty() &&
          (axis.kind != AxisKind::Split ||
           static_cast<int64_t>(axis.sizes.size()) != axis.degree))
        return invalid(which + ": axis " + axis.str() + " lists " +
                       std::to_string(axis.sizes.size()) +
                       " block sizes for degree " +
                       std::to_string(axis.degree));
      for (int64_t block : axis.sizes)
        if (block < 1)
          return invalid(which + ": axis " + axis.str() +
                         " has a block of size " + std::to_string(block) +
                         "; expected at least 1");
      if (count > std::numeric_limits<int64_t>::max() / axis.degree)
        return invalid(which + ": the degrees overflow a 64-bit count");
      count *= axis.degree;
    }
    if (count != static_cast<int64_t>(member.devices.size()))
      return invalid(which + " has " + std::to_string(member.devices.size()) +
                     " devices but its states span " + std::to_string(count));
    for (int64_t device : member.devices) {
      if (device < 0)
        return invalid(which + ": device id " + std::to_string(device) +
                       " is negative");
      if (!seen.insert(device).second)
        return invalid("device " + std::to_string(device) +
                       " appears twice in the layout");
    }
  }
  if (layout.relation == Relation::Split &&
      (layout.splitDim < 0 || layout.splitDim > kMaxSplitDim))
    return invalid("split of dimension " + std::to_string(layout.splitDim) +
                   " is out of range");
  if (layout.explicitSizes && layout.relation != Relation::Split)
    return invalid("explicit sizes need a split relation");
  if (!layout.shares.empty() || layout.explicitSizes) {
    if (layout.relation == Relation::Replicated)
      return invalid("a replicated union takes no shares");
    if (layout.shares.size() != layout.members.size())
      return invalid("union has " + std::to_string(layout.members.size()) +
                     " groups but " + std::to_string(layout.shares.size()) +
                     " shares");
    int64_t total = 0;
    for (int64_t share : layout.shares) {
      if (share <= 0)
        return invalid("share " + std::to_string(share) + " is not positive");
      if (__builtin_add_overflow(total, share, &total))
        return invalid("shares " + toString(layout.shares) +
                       " overflow a 64-bit total");
    }
    if (layout.relation == Relation::Partial &&
        layout.reduction == Reduction::Mean &&
        std::any_of(layout.shares.begin(), layout.shares.end(),
                    [&](int64_t share) { return share != layout.shares[0]; }))
      return invalid("a mean-partial across groups with unequal shares " +
                     toString(layout.shares) +
                     " averages averages; use partial(sum)");
  }
  // What members hold must be comparable: complete values in a replicated
  // union of several groups, one kind of pending reduction in a split one,
  // the union's own in a partial one.
  auto pendingOf = [](const Member &member) -> std::optional<Reduction> {
    for (const Axis &axis : member.states.axes)
      if (axis.kind == AxisKind::Partial)
        return axis.reduction;
    return std::nullopt;
  };
  std::optional<Reduction> first = pendingOf(layout.members.front());
  for (size_t i = 0; i < layout.members.size(); ++i) {
    std::optional<Reduction> pending = pendingOf(layout.members[i]);
    std::string which = "union member " + std::to_string(i);
    if (layout.relation == Relation::Replicated &&
        layout.members.size() > 1 && pending)
      return invalid(which + " of a replicated union is partial (" +
                     getName(*pending) + "); replicated groups hold complete "
                     "values");
    if (layout.relation == Relation::Split && pending != first)
      return invalid("union members 0 and " + std::to_string(i) +
                     " of a split union disagree on the pending reduction");
    if (layout.relation == Relation::Partial && pending &&
        *pending != layout.reduction)
      return invalid(which + " is partial with " + getName(*pending) +
                     " but the union is partial with " +
                     getName(layout.reduction));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> extentsOf(const Layout &layout,
                                               int64_t dimSize) {
  size_t numGroups = layout.members.size();
  int64_t dim = layout.splitDim;
  const std::vector<int64_t> &shares = layout.shares;
  if (layout.explicitSizes) {
    int64_t total = 0;
    for (int64_t size : shares)
      total += size;
    if (total != dimSize)
      return invalid("sizes " + toString(shares) + " cover " +
                     std::to_string(total) + " of dimension " +
                     std::to_string(dim) + " of size " +
                     std::to_string(dimSize));
    return shares;
  }
  if (shares.empty()) {
    if (dimSize % static_cast<int64_t>(numGroups) != 0)
      return invalid("dimension " + std::to_string(dim) + " of size " +
                     std::to_string(dimSize) +
                     " cannot be split equally among " +
                     std::to_string(numGroups) + " groups; give shares or sizes");
    return std::vector<int64_t>(numGroups,
                                dimSize / static_cast<int64_t>(numGroups));
  }
  int64_t total = 0;
  for (int64_t share : shares)
    total += share;
  if (dimSize % total != 0)
    return invalid("shares " + toString(shares) + " do not divide dimension " +
                   std::to_string(dim) + " of size " + std::to_string(dimSize) +
                   " exactly; give explicit sizes");
  std::vector<int64_t> extents;
  for (int64_t share : shares)
    extents.push_back(dimSize / total * share);
  return extents;
}

} // namespace

absl::StatusOr<std::vector<int64_t>>
loom::layout::getGroupExtents(const Layout &layout, int64_t dimSize) {
  if (layout.relation != Relation::Split)
    return invalid("the layout does not split a dimension among its groups");
  if (absl::Status status = checkStructure(layout); !status.ok())
    return status;
  return extentsOf(layout, dimSize);
}

absl::Status loom::layout::checkLayout(const Layout &layout,
                                       const std::vector<int64_t> &shape) {
  if (absl::Status status = checkStructure(layout); !status.ok())
    return status;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] < 0)
      return invalid("dimension " + std::to_string(d) + " has size " +
                     std::to_string(shape[d]));
  int64_t rank = static_cast<int64_t>(shape.size());
  bool splitsGroups = layout.relation == Relation::Split;
  std::vector<int64_t> extents;
  if (splitsGroups) {
    if (layout.splitDim >= rank)
      return invalid("union splits dimension " +
                     std::to_string(layout.splitDim) +
                     " but the tensor has rank " + std::to_string(rank));
    absl::StatusOr<std::vector<int64_t>> computed =
        extentsOf(layout, shape[layout.splitDim]);
    if (!computed.ok())
      return computed.status();
    extents = *std::move(computed);
  }
  for (size_t member = 0; member < layout.members.size(); ++member) {
    for (const Axis &axis : layout.members[member].states.axes) {
      if (axis.kind != AxisKind::Split)
        continue;
      if (axis.dim >= rank)
        return invalid("axis " + axis.str() + " of union member " +
                       std::to_string(member) + " splits dimension " +
                       std::to_string(axis.dim) + " but the tensor has rank " +
                       std::to_string(rank));
      bool isShare = splitsGroups && axis.dim == layout.splitDim;
      int64_t size = isShare ? extents[member] : shape[axis.dim];
      absl::StatusOr<std::vector<int64_t>> blocks = getBlockSizes(axis, size);
      if (blocks.ok())
        continue;
      if (isShare)
        return invalid("union member " + std::to_string(member) +
                       "'s share of dimension " + std::to_string(axis.dim) +
                       ": " + std::string(blocks.status().message()));
      return invalid("dimension " + std::to_string(axis.dim) + ": " +
                     std::string(blocks.status().message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Shard> loom::layout::getShard(const Layout &layout,
                                             const std::vector<int64_t> &shape,
                                             int64_t device) {
  if (absl::Status status = checkLayout(layout, shape); !status.ok())
    return status;
  int64_t member = layout.getMemberOf(device);
  if (member < 0)
    return absl::NotFoundError("device " + std::to_string(device) +
                               " is not in the layout " + layout.str());
  const Member &own = layout.members[member];

  Shard shard;
  shard.offsets.assign(shape.size(), 0);
  shard.sizes = shape;
  if (layout.relation == Relation::Split) {
    int64_t dim = layout.splitDim;
    std::vector<int64_t> extents = *extentsOf(layout, shape[dim]);
    for (int64_t i = 0; i < member; ++i)
      shard.offsets[dim] += extents[i];
    shard.sizes[dim] = extents[member];
  }

  int64_t index =
      std::find(own.devices.begin(), own.devices.end(), device) -
      own.devices.begin();
  std::vector<int64_t> coordinates = own.states.getCoordinates(index);
  for (size_t i = 0; i < own.states.axes.size(); ++i) {
    const Axis &axis = own.states.axes[i];
    switch (axis.kind) {
    case AxisKind::Split: {
      std::vector<int64_t> blocks =
          *getBlockSizes(axis, shard.sizes[axis.dim]);
      for (int64_t j = 0; j < coordinates[i]; ++j)
        shard.offsets[axis.dim] += blocks[j];
      shard.sizes[axis.dim] = blocks[coordinates[i]];
      break;
    }
    case AxisKind::Duplicate:
      shard.replicaIndex = coordinates[i];
      shard.numReplicas = axis.degree;
      break;
    case AxisKind::Partial:
      shard.partialIndex = coordinates[i];
      shard.numPartials = axis.degree;
      shard.reduction = axis.reduction;
      break;
    }
  }

  // Across groups: replicas add up over replicated groups, contributions
  // over partial ones.
  int64_t numMembers = static_cast<int64_t>(layout.members.size());
  if (layout.relation == Relation::Replicated) {
    for (int64_t i = 0; i < numMembers; ++i) {
      int64_t degree = layout.members[i].states.getDuplicateDegree();
      if (i < member)
        shard.replicaIndex += degree;
      if (i != member)
        shard.numReplicas += degree;
    }
  } else if (layout.relation == Relation::Partial) {
    shard.reduction = layout.reduction;
    for (int64_t i = 0; i < numMembers; ++i) {
      int64_t degree = layout.members[i].states.getPartialDegree();
      if (i < member)
        shard.partialIndex += degree;
      if (i != member)
        shard.numPartials += degree;
    }
  }
  if (shard.numPartials == 1)
    shard.reduction = std::nullopt;
  return shard;
}

//===----------------------------------------------------------------------===//
// Layouts as tables
//===----------------------------------------------------------------------===//

std::vector<int64_t> loom::layout::encodeLayout(const Layout &layout) {
  std::vector<int64_t> table = {
      static_cast<int64_t>(layout.relation), layout.splitDim,
      static_cast<int64_t>(layout.reduction), layout.explicitSizes ? 1 : 0,
      static_cast<int64_t>(layout.shares.size())};
  table.insert(table.end(), layout.shares.begin(), layout.shares.end());
  table.push_back(static_cast<int64_t>(layout.members.size()));
  for (const Member &member : layout.members) {
    table.push_back(static_cast<int64_t>(member.devices.size()));
    table.insert(table.end(), member.devices.begin(), member.devices.end());
    table.push_back(static_cast<int64_t>(member.states.axes.size()));
    for (const Axis &axis : member.states.axes) {
      table.push_back(static_cast<int64_t>(axis.kind));
      table.push_back(axis.dim);
      table.push_back(axis.degree);
      table.push_back(static_cast<int64_t>(axis.reduction));
      table.push_back(static_cast<int64_t>(axis.sizes.size()));
      table.insert(table.end(), axis.sizes.begin(), axis.sizes.end());
    }
  }
  return table;
}

absl::StatusOr<Layout> loom::layout::decodeLayout(const int64_t *table,
                                                  int64_t size) {
  int64_t at = 0;
  bool truncated = false;
  auto next = [&]() -> int64_t {
    if (at >= size) {
      truncated = true;
      return 0;
    }
    return table[at++];
  };
  // A count that the rest of the table can hold (so that a corrupt count
  // cannot make the decoder allocate without bound).
  auto count = [&]() -> int64_t {
    int64_t n = next();
    if (n < 0 || n > size - at)
      truncated = true;
    return truncated ? 0 : n;
  };
  auto code = [&](int64_t value, int64_t limit) {
    if (value < 0 || value > limit)
      truncated = true;
    return value;
  };
  Layout layout;
  layout.relation = static_cast<Relation>(code(next(), 2));
  layout.splitDim = next();
  layout.reduction = static_cast<Reduction>(code(next(), 3));
  layout.explicitSizes = code(next(), 1) != 0;
  for (int64_t n = count(); n > 0 && !truncated; --n)
    layout.shares.push_back(next());
  for (int64_t m = count(); m > 0 && !truncated; --m) {
    Member member;
    for (int64_t n = count(); n > 0 && !truncated; --n)
      member.devices.push_back(next());
    for (int64_t a = count(); a > 0 && !truncated; --a) {
      Axis axis;
      axis.kind = static_cast<AxisKind>(code(next(), 2));
      axis.dim = next();
      axis.degree = next();
      axis.reduction = static_cast<Reduction>(code(next(), 3));
      for (int64_t n = count(); n > 0 && !truncated; --n)
        axis.sizes.push_back(next());
      member.states.axes.push_back(std::move(axis));
    }
    layout.members.push_back(std::move(member));
  }
  if (truncated)
    return invalid("a layout table of " + std::to_string(size) +
                   " integers is truncated or holds an unknown code");
  if (at != size)
    return invalid("a layout table has " + std::to_string(size - at) +
                   " integers too many");
  if (absl::Status status = checkStructure(layout); !status.ok())
    return status;
  return layout;
}
