//===- HSPMDPropertyTest.cpp - Property tests of the hspmd layout helpers -===//
//
// Random valid layouts (fixed seeds) and the invariants every layout must
// keep: shards tile the tensor, every element has the right number of
// replicas, every contribution of a pending reduction is held exactly once
// per replica, device indices and coordinates are inverse bijections,
// spellings that differ only cosmetically are equivalent, members whose
// pending reductions make them incomparable are rejected, and getShard
// agrees with verifyLayoutForShape.
//
// The expectations are computed from the generator's own record of what it
// built (degrees, extents, device ids), not from the attribute queries under
// test.
//
//===----------------------------------------------------------------------===//

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "runtime/layout/Shards.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace mlir;
using namespace loom::hspmd;

namespace loom::hspmd {
// Lets gtest print shards in failure messages.
static void PrintTo(const Shard &shard, std::ostream *os) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  stream << shard;
  *os << text;
}
} // namespace loom::hspmd

namespace {

/// How the groups of a generated layout relate. `Single` is a one-member
/// union without a relation.
enum class Relation { Single, Replicated, Split, Partial };

constexpr int64_t kMaxRank = 3;
constexpr int64_t kMaxDimSize = 24;
constexpr int64_t kMaxGroups = 3;
constexpr int64_t kMaxGroupSize = 8;

/// One member of a generated union, as the generator built it.
struct GroupSpec {
  llvm::SmallVector<int64_t> devices;
  llvm::SmallVector<Axis> axes;
  /// Along the union's split dimension (split unions only).
  int64_t offset = 0;
  int64_t extent = 0;

  int64_t duplicateDegree() const {
    for (const Axis &axis : axes)
      if (axis.isDuplicate())
        return axis.degree;
    return 1;
  }
  int64_t partialDegree() const {
    for (const Axis &axis : axes)
      if (axis.isPartial())
        return axis.degree;
    return 1;
  }
  std::optional<ReductionKind> partialKind() const {
    for (const Axis &axis : axes)
      if (axis.isPartial())
        return axis.reduction;
    return std::nullopt;
  }
  int64_t numDevices() const {
    int64_t product = 1;
    for (const Axis &axis : axes)
      product *= axis.degree;
    return product;
  }
};

/// A generated layout: the parameters and the attribute built from them.
struct LayoutSpec {
  llvm::SmallVector<int64_t> shape;
  Relation relation = Relation::Single;
  int64_t splitDim = -1;
  ReductionKind reduction = ReductionKind::Sum;
  llvm::SmallVector<int64_t> shares;
  bool explicitSizes = false;
  llvm::SmallVector<GroupSpec> groups;

  UnionAttr attr;
  std::string text;

  int64_t numElements() const {
    int64_t count = 1;
    for (int64_t size : shape)
      count *= size;
    return count;
  }
  llvm::SmallVector<int64_t> allDevices() const {
    llvm::SmallVector<int64_t> devices;
    for (const GroupSpec &group : groups)
      llvm::append_range(devices, group.devices);
    return devices;
  }
  /// The members that hold element `coords`.
  llvm::SmallVector<int64_t>
  holdingGroups(llvm::ArrayRef<int64_t> coords) const {
    llvm::SmallVector<int64_t> holding;
    for (auto [i, group] : llvm::enumerate(groups)) {
      if (relation == Relation::Split &&
          (coords[splitDim] < group.offset ||
           coords[splitDim] >= group.offset + group.extent))
        continue;
      holding.push_back(i);
    }
    return holding;
  }
};

/// Which kinds of layout a property draws from.
struct GenOptions {
  std::vector<Relation> relations;
  bool duplicates = true;
  bool partials = false;
  /// Splits whose degree does not divide the dimension (balanced blocks)
  /// and explicit block sizes.
  bool uneven = false;
};

const ReductionKind kAllKinds[] = {ReductionKind::Sum, ReductionKind::Mean,
                                   ReductionKind::Max, ReductionKind::Min};

class HSPMDPropertyTest : public ::testing::Test {
protected:
  HSPMDPropertyTest() : ctx(MLIRContext::Threading::DISABLED) {
    ctx.loadDialect<HSPMDDialect>();
  }

  void seed(uint64_t value) { rng.seed(value); }

  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  }
  bool chance(int64_t num, int64_t den) { return uniform(1, den) <= num; }
  template <typename T> const T &pick(llvm::ArrayRef<T> values) {
    return values[uniform(0, values.size() - 1)];
  }
  template <typename T> void shuffle(llvm::MutableArrayRef<T> values) {
    std::shuffle(values.begin(), values.end(), rng);
  }

  /// Splits `total` into `parts` positive integers.
  llvm::SmallVector<int64_t> composition(int64_t total, int64_t parts) {
    llvm::SmallVector<int64_t> result(parts, 1);
    for (int64_t i = parts; i < total; ++i)
      ++result[uniform(0, parts - 1)];
    return result;
  }

  static llvm::SmallVector<int64_t> divisors(int64_t n) {
    llvm::SmallVector<int64_t> result;
    for (int64_t d = 1; d <= n; ++d)
      if (n % d == 0)
        result.push_back(d);
    return result;
  }

  /// Random local states for a group holding a block of `localShape`.
  /// `forcedKind` puts a partial axis of that kind, with a random degree
  /// (possibly 1), in; otherwise, when `partialKinds` is non-empty, a
  /// partial axis with one of those kinds may be added.
  llvm::SmallVector<Axis>
  randomAxes(llvm::ArrayRef<int64_t> localShape, bool duplicates,
             std::optional<ReductionKind> forcedKind,
             llvm::ArrayRef<ReductionKind> partialKinds, bool uneven = false) {
    llvm::SmallVector<Axis> axes;
    int64_t product = 1;
    auto room = [&]() { return kMaxGroupSize / product; };
    if (forcedKind) {
      axes.push_back(Axis::partial(uniform(1, 3), *forcedKind));
      product *= axes.back().degree;
    }
    llvm::SmallVector<int64_t> dims(localShape.size());
    std::iota(dims.begin(), dims.end(), 0);
    shuffle(llvm::MutableArrayRef<int64_t>(dims));
    for (int64_t dim : dims) {
      if (!chance(1, 2))
        continue;
      llvm::SmallVector<int64_t> candidates;
      for (int64_t d : divisors(localShape[dim]))
        if (d > 1 && d <= room())
          candidates.push_back(d);
      int64_t degree = 1;
      int64_t most = std::min(localShape[dim], room());
      if (uneven && most >= 2 && chance(1, 2)) {
        degree = uniform(2, most);
        if (chance(1, 2)) {
          // Explicit sizes: a random composition of the dimension.
          llvm::SmallVector<int64_t> sizes(degree, 1);
          for (int64_t left = localShape[dim] - degree; left > 0; --left)
            ++sizes[uniform(0, degree - 1)];
          axes.push_back(Axis::split(dim, sizes));
        } else {
          axes.push_back(Axis::split(dim, degree));
        }
        product *= degree;
        continue;
      }
      if (!candidates.empty() && !chance(1, 6))
        degree = pick<int64_t>(candidates);
      axes.push_back(Axis::split(dim, degree));
      product *= degree;
    }
    if (duplicates && chance(1, 2)) {
      int64_t degree = uniform(1, std::min<int64_t>(3, room()));
      axes.push_back(Axis::duplicate(degree));
      product *= degree;
    }
    if (!forcedKind && !partialKinds.empty() && chance(2, 3)) {
      int64_t degree = uniform(1, std::min<int64_t>(3, room()));
      axes.push_back(Axis::partial(degree, pick(partialKinds)));
      product *= degree;
    }
    shuffle(llvm::MutableArrayRef<Axis>(axes));
    return axes;
  }

  /// The union the parameters of `spec` describe, built with the verifiers
  /// on, or null when a verifier rejects them (with `errors` receiving the
  /// diagnostics).
  UnionAttr buildChecked(const LayoutSpec &spec,
                         std::vector<std::string> &errors) {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      errors.push_back(diag.str());
      return success();
    });
    Location loc = UnknownLoc::get(&ctx);
    auto emit = [&]() { return emitError(loc); };
    llvm::SmallVector<DeviceGroupAttr> groups;
    llvm::SmallVector<DistStatesAttr> states;
    for (const GroupSpec &group : spec.groups) {
      groups.push_back(DeviceGroupAttr::getChecked(
          emit, &ctx, llvm::ArrayRef<int64_t>(group.devices)));
      states.push_back(DistStatesAttr::getChecked(
          emit, &ctx, llvm::ArrayRef<Axis>(group.axes)));
    }
    UnionRelation relation = UnionRelation::Replicated;
    if (spec.relation == Relation::Split)
      relation = UnionRelation::Split;
    else if (spec.relation == Relation::Partial)
      relation = UnionRelation::Partial;
    if (!errors.empty())
      return {};
    return UnionAttr::getChecked(emit, &ctx, relation, spec.splitDim,
                                 spec.reduction,
                                 llvm::ArrayRef<int64_t>(spec.shares),
                                 spec.explicitSizes,
                                 llvm::ArrayRef<DeviceGroupAttr>(groups),
                                 llvm::ArrayRef<DistStatesAttr>(states));
  }

  /// Builds `spec.attr` from the parameters with the verifiers on; fails the
  /// test when a verifier or verifyLayoutForShape rejects it.
  bool build(LayoutSpec &spec) {
    spec.text.clear();
    std::vector<std::string> errors;
    spec.attr = buildChecked(spec, errors);
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      errors.push_back(diag.str());
      return success();
    });
    Location loc = UnknownLoc::get(&ctx);
    auto emit = [&]() { return emitError(loc); };
    if (spec.attr) {
      llvm::raw_string_ostream os(spec.text);
      Attribute(spec.attr).print(os);
      if (failed(verifyLayoutForShape(spec.attr, spec.shape, emit)))
        spec.attr = {};
    }
    if (!spec.attr) {
      ADD_FAILURE() << "generated an invalid layout " << spec.text << ": "
                    << (errors.empty() ? "" : errors.front());
      return false;
    }
    return true;
  }

  /// A random valid layout of a random shape.
  std::optional<LayoutSpec> generate(const GenOptions &options) {
    LayoutSpec spec;
    spec.relation = pick<Relation>(options.relations);
    int64_t rank = spec.relation == Relation::Split ? uniform(1, kMaxRank)
                   : chance(1, 10)                  ? 0
                                                    : uniform(1, kMaxRank);
    for (int64_t i = 0; i < rank; ++i)
      spec.shape.push_back(uniform(1, kMaxDimSize));

    int64_t numGroups = spec.relation == Relation::Single ? 1
                        : chance(1, 8)                    ? 1
                                       : uniform(2, kMaxGroups);
    llvm::SmallVector<int64_t> extents;
    if (spec.relation == Relation::Split) {
      spec.splitDim = uniform(0, rank - 1);
      int64_t size = spec.shape[spec.splitDim];
      numGroups = std::min(numGroups, size);
      int64_t mode = uniform(0, 2);
      if (mode == 0 && size % numGroups == 0) {
        // Equal pieces, no shares.
        extents.assign(numGroups, size / numGroups);
      } else if (mode == 1) {
        // A ratio that divides the dimension.
        llvm::SmallVector<int64_t> totals;
        for (int64_t d : divisors(size))
          if (d >= numGroups)
            totals.push_back(d);
        int64_t total = pick<int64_t>(totals);
        llvm::SmallVector<int64_t> ratio = composition(total, numGroups);
        for (int64_t part : ratio)
          extents.push_back(size / total * part);
        spec.shares = ratio;
      } else {
        spec.explicitSizes = true;
        spec.shares = composition(size, numGroups);
        extents = spec.shares;
      }
    }

    // Which pending reductions the members may hold: a partial union's
    // members that of the union; a split union's members all the same kind
    // (each with its own degree) or none at all; a replicated union's
    // members none, since replicated groups hold complete values; the
    // member of a one-member union without a relation any.
    llvm::SmallVector<ReductionKind> localKinds;
    std::optional<ReductionKind> forcedKind;
    if (spec.relation == Relation::Partial) {
      spec.reduction = pick<ReductionKind>(kAllKinds);
      localKinds.push_back(spec.reduction);
      if (chance(1, 3)) {
        if (spec.reduction == ReductionKind::Mean) {
          spec.shares.assign(numGroups, uniform(1, 3));
        } else {
          for (int64_t i = 0; i < numGroups; ++i)
            spec.shares.push_back(uniform(1, 4));
        }
      }
    } else if (options.partials && spec.relation == Relation::Split) {
      if (chance(3, 4))
        forcedKind = pick<ReductionKind>(kAllKinds);
    } else if (options.partials && spec.relation == Relation::Single) {
      localKinds.assign(std::begin(kAllKinds), std::end(kAllKinds));
    }

    int64_t offset = 0;
    for (int64_t i = 0; i < numGroups; ++i) {
      GroupSpec group;
      llvm::SmallVector<int64_t> localShape = spec.shape;
      if (spec.relation == Relation::Split) {
        group.offset = offset;
        group.extent = extents[i];
        localShape[spec.splitDim] = extents[i];
        offset += extents[i];
      }
      group.axes =
          randomAxes(localShape, options.duplicates, forcedKind, localKinds,
                     options.uneven);
      spec.groups.push_back(std::move(group));
    }

    // Disjoint, shuffled device ids with gaps.
    int64_t total = 0;
    for (const GroupSpec &group : spec.groups)
      total += group.numDevices();
    llvm::SmallVector<int64_t> ids(total + uniform(0, 8));
    std::iota(ids.begin(), ids.end(), 0);
    shuffle(llvm::MutableArrayRef<int64_t>(ids));
    int64_t next = 0;
    for (GroupSpec &group : spec.groups)
      for (int64_t i = 0, e = group.numDevices(); i < e; ++i)
        group.devices.push_back(ids[next++]);

    if (!build(spec))
      return std::nullopt;
    return spec;
  }

  /// Calls `fn(flatIndex, coords)` for every element of the block at
  /// `offsets` of `sizes` in a tensor of `shape` (row-major).
  template <typename Fn>
  static void forEachElement(llvm::ArrayRef<int64_t> shape,
                             llvm::ArrayRef<int64_t> offsets,
                             llvm::ArrayRef<int64_t> sizes, Fn fn) {
    for (int64_t size : sizes)
      if (size == 0)
        return;
    llvm::SmallVector<int64_t> coords(offsets.begin(), offsets.end());
    while (true) {
      int64_t flat = 0;
      for (auto [coord, size] : llvm::zip_equal(coords, shape))
        flat = flat * size + coord;
      fn(flat, llvm::ArrayRef<int64_t>(coords));
      int64_t dim = static_cast<int64_t>(coords.size()) - 1;
      for (; dim >= 0; --dim) {
        if (++coords[dim] < offsets[dim] + sizes[dim])
          break;
        coords[dim] = offsets[dim];
      }
      if (dim < 0)
        return;
    }
  }

  /// Whether `shard` lies inside a tensor of `shape`.
  static bool inBounds(const Shard &shard, llvm::ArrayRef<int64_t> shape) {
    if (shard.offsets.size() != shape.size() ||
        shard.sizes.size() != shape.size())
      return false;
    for (auto [offset, size, extent] :
         llvm::zip_equal(shard.offsets, shard.sizes, shape))
      if (offset < 0 || size < 0 || offset + size > extent)
        return false;
    return true;
  }

  /// What one device reports about one element it holds.
  struct Holder {
    int64_t device;
    int64_t group;
    int64_t partialIndex;
    int64_t numPartials;
    std::optional<ReductionKind> reduction;
    int64_t replicaIndex;
    int64_t numReplicas;
  };

  /// The holders of every element (row-major), from getShard of every
  /// device; fails the test on a missing or out-of-bounds shard.
  bool collectHolders(const LayoutSpec &spec,
                      std::vector<std::vector<Holder>> &holders) {
    holders.assign(spec.numElements(), {});
    for (int64_t g = 0, e = spec.groups.size(); g < e; ++g) {
      for (int64_t device : spec.groups[g].devices) {
        std::optional<Shard> shard = getShard(spec.attr, spec.shape, device);
        if (!shard) {
          ADD_FAILURE() << "no shard for device " << device;
          return false;
        }
        if (!inBounds(*shard, spec.shape)) {
          ADD_FAILURE() << "shard of device " << device << " out of bounds";
          return false;
        }
        forEachElement(spec.shape, shard->offsets, shard->sizes,
                       [&](int64_t flat, llvm::ArrayRef<int64_t>) {
                         holders[flat].push_back(
                             {device, g, shard->partialIndex,
                              shard->numPartials, shard->reduction,
                              shard->replicaIndex, shard->numReplicas});
                       });
      }
    }
    return true;
  }

  static llvm::SmallVector<int64_t> coordsOf(int64_t flat,
                                             llvm::ArrayRef<int64_t> shape) {
    llvm::SmallVector<int64_t> coords(shape.size());
    for (int64_t dim = static_cast<int64_t>(shape.size()) - 1; dim >= 0;
         --dim) {
      coords[dim] = flat % shape[dim];
      flat /= shape[dim];
    }
    return coords;
  }

  static bool isIota(std::vector<int64_t> values) {
    std::sort(values.begin(), values.end());
    for (auto [i, value] : llvm::enumerate(values))
      if (value != static_cast<int64_t>(i))
        return false;
    return true;
  }

  static std::string str(llvm::ArrayRef<int64_t> values) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << '[';
    llvm::interleaveComma(values, os);
    os << ']';
    return text;
  }

  MLIRContext ctx;
  std::mt19937_64 rng;
};

//===----------------------------------------------------------------------===//
// Property 1: without partials and duplicates, shards tile the tensor.
//===----------------------------------------------------------------------===//

TEST_F(HSPMDPropertyTest, ShardsTileTheTensor) {
  seed(0x7119e5);
  GenOptions options{{Relation::Single, Relation::Split},
                     /*duplicates=*/false,
                     /*partials=*/false};
  int64_t multiGroup = 0, multiDevice = 0;
  for (int iteration = 0; iteration < 300 && !HasFailure(); ++iteration) {
    std::optional<LayoutSpec> spec = generate(options);
    if (!spec)
      return;
    SCOPED_TRACE("iteration " + std::to_string(iteration) + ": " + spec->text +
                 " on " + str(spec->shape));
    multiGroup += spec->groups.size() > 1;
    multiDevice += spec->allDevices().size() > 1;

    std::vector<int64_t> count(spec->numElements(), 0);
    int64_t heldElements = 0;
    for (const GroupSpec &group : spec->groups) {
      for (int64_t device : group.devices) {
        std::optional<Shard> shard = getShard(spec->attr, spec->shape, device);
        ASSERT_TRUE(shard) << "device " << device;
        ASSERT_TRUE(inBounds(*shard, spec->shape)) << "device " << device;
        EXPECT_EQ(shard->numPartials, 1);
        EXPECT_EQ(shard->reduction, std::nullopt);
        EXPECT_EQ(shard->numReplicas, 1);
        EXPECT_EQ(shard->replicaIndex, 0);
        if (spec->relation == Relation::Split) {
          // Inside the group's own piece.
          int64_t dim = spec->splitDim;
          EXPECT_GE(shard->offsets[dim], group.offset);
          EXPECT_LE(shard->offsets[dim] + shard->sizes[dim],
                    group.offset + group.extent);
        }
        heldElements += shard->getNumElements();
        forEachElement(
            spec->shape, shard->offsets, shard->sizes,
            [&](int64_t flat, llvm::ArrayRef<int64_t>) { ++count[flat]; });
      }
    }
    EXPECT_EQ(heldElements, spec->numElements());
    for (auto [flat, n] : llvm::enumerate(count))
      if (n != 1) {
        ADD_FAILURE() << "element " << str(coordsOf(flat, spec->shape))
                      << " is held " << n << " times";
        break;
      }
    // A device outside the layout holds nothing.
    EXPECT_EQ(getShard(spec->attr, spec->shape, 1000), std::nullopt);
  }
  // The generator covered what the property is about.
  EXPECT_GT(multiGroup, 50);
  EXPECT_GT(multiDevice, 150);
}

//===----------------------------------------------------------------------===//
// Property 2: without partials, every element has the expected replicas.
//===----------------------------------------------------------------------===//

TEST_F(HSPMDPropertyTest, EveryElementHasItsReplicas) {
  seed(0xdeb1ca7e);
  GenOptions options{{Relation::Single, Relation::Split, Relation::Replicated},
                     /*duplicates=*/true,
                     /*partials=*/false};
  int64_t replicatedUnions = 0, splitWithDuplicates = 0;
  for (int iteration = 0; iteration < 300 && !HasFailure(); ++iteration) {
    std::optional<LayoutSpec> spec = generate(options);
    if (!spec)
      return;
    SCOPED_TRACE("iteration " + std::to_string(iteration) + ": " + spec->text +
                 " on " + str(spec->shape));
    std::vector<std::vector<Holder>> holders;
    if (!collectHolders(*spec, holders))
      return;
    bool anyDuplicate = llvm::any_of(spec->groups, [](const GroupSpec &g) {
      return g.duplicateDegree() > 1;
    });
    replicatedUnions +=
        spec->relation == Relation::Replicated && spec->groups.size() > 1;
    splitWithDuplicates += spec->relation == Relation::Split && anyDuplicate;

    for (auto [flat, elementHolders] : llvm::enumerate(holders)) {
      llvm::SmallVector<int64_t> coords = coordsOf(flat, spec->shape);
      llvm::SmallVector<int64_t> holding = spec->holdingGroups(coords);
      int64_t expected = 0;
      for (int64_t g : holding)
        expected += spec->groups[g].duplicateDegree();

      std::vector<int64_t> replicaIndices;
      std::vector<int64_t> perGroup(spec->groups.size(), 0);
      bool consistent = true;
      for (const Holder &holder : elementHolders) {
        replicaIndices.push_back(holder.replicaIndex);
        ++perGroup[holder.group];
        consistent &= holder.numReplicas == expected &&
                      holder.numPartials == 1 && !holder.reduction;
      }
      bool groupsRight = true;
      for (auto [g, n] : llvm::enumerate(perGroup))
        groupsRight &=
            n == (llvm::is_contained(holding, static_cast<int64_t>(g))
                      ? spec->groups[g].duplicateDegree()
                      : 0);
      if (static_cast<int64_t>(elementHolders.size()) != expected ||
          !consistent || !groupsRight || !isIota(replicaIndices)) {
        ADD_FAILURE() << "element " << str(coords) << " is held by "
                      << elementHolders.size() << " devices (expected "
                      << expected << "), replica indices "
                      << str(replicaIndices) << ", per group " << str(perGroup)
                      << (consistent ? "" : ", inconsistent counts");
        break;
      }
    }
  }
  EXPECT_GT(replicatedUnions, 50);
  EXPECT_GT(splitWithDuplicates, 25);
}

//===----------------------------------------------------------------------===//
// Property 3: every contribution of a pending reduction is held once per
// replica.
//===----------------------------------------------------------------------===//

TEST_F(HSPMDPropertyTest, EveryContributionIsHeldOncePerReplica) {
  seed(0x9a87141);
  GenOptions options{{Relation::Single, Relation::Split, Relation::Partial,
                      Relation::Replicated},
                     /*duplicates=*/true,
                     /*partials=*/true};
  int64_t partialUnions = 0, localPartials = 0, splitPartials = 0,
          replicatedUnions = 0;
  for (int iteration = 0; iteration < 400 && !HasFailure(); ++iteration) {
    std::optional<LayoutSpec> spec = generate(options);
    if (!spec)
      return;
    SCOPED_TRACE("iteration " + std::to_string(iteration) + ": " + spec->text +
                 " on " + str(spec->shape));
    std::vector<std::vector<Holder>> holders;
    if (!collectHolders(*spec, holders))
      return;
    partialUnions +=
        spec->relation == Relation::Partial && spec->groups.size() > 1;
    localPartials += llvm::any_of(
        spec->groups, [](const GroupSpec &g) { return g.partialDegree() > 1; });
    // Split unions whose members all hold the same pending reduction with
    // different degrees.
    bool unequalDegrees = llvm::any_of(spec->groups, [&](const GroupSpec &g) {
      return g.partialDegree() != spec->groups.front().partialDegree();
    });
    splitPartials += spec->relation == Relation::Split &&
                     spec->groups.front().partialKind() && unequalDegrees;
    replicatedUnions +=
        spec->relation == Relation::Replicated && spec->groups.size() > 1;

    // The first contribution index of each group in a partial union.
    llvm::SmallVector<int64_t> base;
    int64_t unionPartials = 0;
    for (const GroupSpec &group : spec->groups) {
      base.push_back(unionPartials);
      unionPartials += group.partialDegree();
    }
    int64_t totalDuplicates = 0;
    for (const GroupSpec &group : spec->groups)
      totalDuplicates += group.duplicateDegree();

    for (auto [flat, elementHolders] : llvm::enumerate(holders)) {
      llvm::SmallVector<int64_t> coords = coordsOf(flat, spec->shape);
      llvm::SmallVector<int64_t> holding = spec->holdingGroups(coords);
      // Expected: the number of contributions, their reduction, and for
      // contribution j, the group(s) holding it and how many times.
      int64_t numPartials = 1;
      std::optional<ReductionKind> reduction;
      std::vector<int64_t> copies;
      std::vector<int64_t> owner; // -1: every holding group
      switch (spec->relation) {
      case Relation::Single:
      case Relation::Split: {
        // Split members agree on the kind but not necessarily the degree:
        // the holding group's own degree counts.
        const GroupSpec &group = spec->groups[holding.front()];
        numPartials = group.partialDegree();
        reduction = group.partialKind();
        copies.assign(numPartials, group.duplicateDegree());
        owner.assign(numPartials, holding.front());
        break;
      }
      case Relation::Partial:
        numPartials = unionPartials;
        reduction = spec->reduction;
        for (auto [g, group] : llvm::enumerate(spec->groups))
          for (int64_t j = 0; j < group.partialDegree(); ++j) {
            copies.push_back(group.duplicateDegree());
            owner.push_back(g);
          }
        break;
      case Relation::Replicated:
        // Complete values (the verifier rejects partial members), each held
        // by every duplicate of every group.
        copies.assign(1, totalDuplicates);
        owner.assign(1, -1);
        break;
      }
      if (numPartials == 1)
        reduction = std::nullopt;

      std::vector<std::vector<int64_t>> replicas(numPartials);
      std::string problem;
      for (const Holder &holder : elementHolders) {
        const Holder &shard = holder;
        if (shard.numPartials != numPartials || shard.reduction != reduction) {
          problem = "device " + std::to_string(holder.device) +
                    " reports a different reduction";
          break;
        }
        if (shard.partialIndex < 0 || shard.partialIndex >= numPartials) {
          problem = "device " + std::to_string(holder.device) +
                    " has partial index " + std::to_string(shard.partialIndex);
          break;
        }
        int64_t j = shard.partialIndex;
        if (owner[j] >= 0 && owner[j] != holder.group) {
          problem = "contribution " + std::to_string(j) + " held by group " +
                    std::to_string(holder.group);
          break;
        }
        if (shard.numReplicas != copies[j]) {
          problem = "device " + std::to_string(holder.device) + " has " +
                    std::to_string(shard.numReplicas) + " replicas";
          break;
        }
        replicas[j].push_back(shard.replicaIndex);
      }
      for (int64_t j = 0; problem.empty() && j < numPartials; ++j)
        if (static_cast<int64_t>(replicas[j].size()) != copies[j] ||
            !isIota(replicas[j]))
          problem = "contribution " + std::to_string(j) + " has replicas " +
                    str(replicas[j]) + ", expected " +
                    std::to_string(copies[j]);
      if (!problem.empty()) {
        ADD_FAILURE() << "element " << str(coords) << ": " << problem;
        break;
      }
    }
  }
  EXPECT_GT(partialUnions, 50);
  EXPECT_GT(localPartials, 100);
  EXPECT_GT(splitPartials, 20);
  EXPECT_GT(replicatedUnions, 50);
}

//===----------------------------------------------------------------------===//
// Property 4: coordinates and indices are inverse bijections.
//===----------------------------------------------------------------------===//

TEST_F(HSPMDPropertyTest, CoordinatesAndIndicesAreInverse) {
  seed(0xc00);
  Location loc = UnknownLoc::get(&ctx);
  auto emit = [&]() { return emitError(loc); };
  for (int iteration = 0; iteration < 300 && !HasFailure(); ++iteration) {
    // Distinct axis kinds in random order with random degrees.
    llvm::SmallVector<Axis> pool = {
        Axis::split(0, 1),  Axis::split(1, 1),
        Axis::split(2, 1),  Axis::split(5, 1),
        Axis::duplicate(1), Axis::partial(1, pick<ReductionKind>(kAllKinds))};
    shuffle(llvm::MutableArrayRef<Axis>(pool));
    llvm::SmallVector<Axis> axes(pool.begin(), pool.begin() + uniform(0, 5));
    int64_t numDevices = 1, duplicate = 1, partial = 1;
    for (Axis &axis : axes) {
      axis.degree = uniform(1, 4);
      numDevices *= axis.degree;
      if (axis.isDuplicate())
        duplicate = axis.degree;
      if (axis.isPartial())
        partial = axis.degree;
    }
    DistStatesAttr states =
        DistStatesAttr::getChecked(emit, &ctx, llvm::ArrayRef<Axis>(axes));
    ASSERT_TRUE(states);
    SCOPED_TRACE("iteration " + std::to_string(iteration) + ": " + [&]() {
      std::string text;
      llvm::raw_string_ostream os(text);
      Attribute(states).print(os);
      return text;
    }());
    EXPECT_EQ(states.getNumDevices(), numDevices);
    EXPECT_EQ(states.getDuplicateDegree(), duplicate);
    EXPECT_EQ(states.getPartialDegree(), partial);
    for (const Axis &axis : axes)
      if (axis.isSplit())
        EXPECT_EQ(states.getSplitDegree(axis.dim), axis.degree);

    // The place value of each axis: the product of the later degrees.
    llvm::SmallVector<int64_t> strides(axes.size(), 1);
    for (int64_t i = static_cast<int64_t>(axes.size()) - 2; i >= 0; --i)
      strides[i] = strides[i + 1] * axes[i + 1].degree;
    std::set<llvm::SmallVector<int64_t>> seen;
    for (int64_t index = 0; index < numDevices; ++index) {
      llvm::SmallVector<int64_t> coords = states.getCoordinates(index);
      ASSERT_EQ(coords.size(), axes.size());
      int64_t value = 0;
      for (auto [axis, coord, stride] :
           llvm::zip_equal(axes, coords, strides)) {
        EXPECT_GE(coord, 0) << "index " << index;
        EXPECT_LT(coord, axis.degree) << "index " << index;
        value += coord * stride;
      }
      EXPECT_EQ(value, index) << "coordinates " << str(coords);
      EXPECT_EQ(states.getIndex(coords), index)
          << "coordinates " << str(coords);
      seen.insert(coords);
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), numDevices);
  }
}

//===----------------------------------------------------------------------===//
// Property 5: cosmetic respellings are equivalent, real changes are not, and
// areEquivalent is symmetric.
//===----------------------------------------------------------------------===//

TEST_F(HSPMDPropertyTest, EquivalenceOfRespellings) {
  seed(0xe9017);
  GenOptions options{{Relation::Single, Relation::Split, Relation::Partial,
                      Relation::Replicated},
                     /*duplicates=*/true,
                     /*partials=*/true};
  int64_t positives = 0, negatives = 0;
  for (int iteration = 0; iteration < 200 && !HasFailure(); ++iteration) {
    std::optional<LayoutSpec> original = generate(options);
    if (!original)
      return;
    SCOPED_TRACE("iteration " + std::to_string(iteration) + ": " +
                 original->text + " on " + str(original->shape));
    // Variants with the class they belong to: 0 is the original's.
    std::vector<std::pair<LayoutSpec, int>> variants = {{*original, 0}};
    int nextClass = 1;
    auto add = [&](LayoutSpec variant, bool equivalent) {
      if (!build(variant))
        return;
      variants.emplace_back(std::move(variant), equivalent ? 0 : nextClass++);
    };
    const LayoutSpec &o = *original;

    // An extra degree-1 axis at a random place of a random group. A
    // degree-1 partial axis is still a partial axis: it may go into a
    // partial union (with the union's kind) or the only member of a union
    // without a relation or of a split union, not into a replicated union
    // or one member of several of a split union.
    {
      LayoutSpec variant = o;
      GroupSpec &group = variant.groups[uniform(0, o.groups.size() - 1)];
      llvm::SmallVector<Axis> candidates;
      for (int64_t dim = 0; dim < static_cast<int64_t>(o.shape.size()); ++dim)
        candidates.push_back(Axis::split(dim, 1));
      candidates.push_back(Axis::duplicate(1));
      if (o.relation == Relation::Partial)
        candidates.push_back(Axis::partial(1, o.reduction));
      else if (o.relation == Relation::Single ||
               (o.relation == Relation::Split && o.groups.size() == 1))
        candidates.push_back(Axis::partial(1, pick<ReductionKind>(kAllKinds)));
      llvm::erase_if(candidates, [&](const Axis &axis) {
        return llvm::any_of(group.axes, [&](const Axis &existing) {
          return existing.sameKindAs(axis);
        });
      });
      if (!candidates.empty()) {
        Axis axis = pick<Axis>(candidates);
        group.axes.insert(group.axes.begin() + uniform(0, group.axes.size()),
                          axis);
        add(std::move(variant), true);
      }
    }
    // Shares scaled by 2 where that still divides; ratio or equal pieces as
    // explicit sizes; equal pieces as a 1:1:... ratio.
    if (o.relation == Relation::Split) {
      int64_t size = o.shape[o.splitDim];
      int64_t total = 0;
      for (int64_t share : o.shares)
        total += share;
      if (!o.explicitSizes && !o.shares.empty() && size % (2 * total) == 0) {
        LayoutSpec variant = o;
        for (int64_t &share : variant.shares)
          share *= 2;
        add(std::move(variant), true);
      }
      if (!o.explicitSizes) {
        LayoutSpec variant = o;
        variant.explicitSizes = true;
        variant.shares.clear();
        for (const GroupSpec &group : o.groups)
          variant.shares.push_back(group.extent);
        add(std::move(variant), true);
      }
      if (o.shares.empty()) {
        LayoutSpec variant = o;
        variant.shares.assign(o.groups.size(), 1);
        add(std::move(variant), true);
      }
    }
    // A split union of complete values: a degree-1 partial axis of one
    // kind on every member leaves it complete.
    if (o.relation == Relation::Split && !o.groups.front().partialKind()) {
      LayoutSpec variant = o;
      ReductionKind kind = pick<ReductionKind>(kAllKinds);
      for (GroupSpec &group : variant.groups)
        group.axes.insert(group.axes.begin() + uniform(0, group.axes.size()),
                          Axis::partial(1, kind));
      add(std::move(variant), true);
    }
    // A split union of pending reductions: another kind on every member is
    // another value, unless nothing is pending anywhere (every degree 1).
    if (o.relation == Relation::Split && o.groups.front().partialKind()) {
      ReductionKind kind = *o.groups.front().partialKind();
      llvm::SmallVector<ReductionKind> others;
      for (ReductionKind other : kAllKinds)
        if (other != kind)
          others.push_back(other);
      ReductionKind other = pick<ReductionKind>(others);
      LayoutSpec variant = o;
      bool pending = false;
      for (GroupSpec &group : variant.groups)
        for (Axis &axis : group.axes)
          if (axis.isPartial()) {
            axis.reduction = other;
            pending |= axis.degree > 1;
          }
      add(std::move(variant), !pending);
    }
    // Shares of a partial union are bookkeeping, not data.
    if (o.relation == Relation::Partial) {
      LayoutSpec variant = o;
      if (variant.shares.empty())
        variant.shares.assign(o.groups.size(), 2);
      else
        for (int64_t &share : variant.shares)
          share *= 2;
      add(std::move(variant), true);
    }
    // A single group is a one-member split or partial union too.
    if (o.relation == Relation::Single && !o.shape.empty()) {
      LayoutSpec variant = o;
      variant.relation = Relation::Split;
      variant.splitDim = uniform(0, o.shape.size() - 1);
      variant.shares = {uniform(1, 3)};
      if (o.shape[variant.splitDim] % variant.shares.front() == 0)
        add(std::move(variant), true);
    }
    if (o.relation == Relation::Single) {
      LayoutSpec variant = o;
      variant.relation = Relation::Partial;
      variant.reduction =
          o.groups.front().partialKind().value_or(ReductionKind::Sum);
      add(std::move(variant), true);
    }
    // The order of replicated groups only renumbers the replicas; the order
    // of split groups moves the pieces, and that of partial groups
    // renumbers the contributions.
    if (o.groups.size() > 1) {
      LayoutSpec variant = o;
      std::swap(variant.groups[0], variant.groups[1]);
      if (!variant.shares.empty())
        std::swap(variant.shares[0], variant.shares[1]);
      add(std::move(variant), o.relation == Relation::Replicated);
    }
    // Swapping two axes of degree > 1 moves data between devices.
    for (auto [g, group] : llvm::enumerate(o.groups)) {
      llvm::SmallVector<int64_t> positions;
      for (auto [i, axis] : llvm::enumerate(group.axes))
        if (axis.degree > 1)
          positions.push_back(i);
      if (positions.size() < 2)
        continue;
      shuffle(llvm::MutableArrayRef<int64_t>(positions));
      LayoutSpec variant = o;
      std::swap(variant.groups[g].axes[positions[0]],
                variant.groups[g].axes[positions[1]]);
      add(std::move(variant), false);
      break;
    }
    // So does a device that is not in the layout.
    {
      LayoutSpec variant = o;
      GroupSpec &group = variant.groups[uniform(0, o.groups.size() - 1)];
      group.devices[uniform(0, group.devices.size() - 1)] = 1000;
      add(std::move(variant), false);
    }

    for (const auto &[lhs, lhsClass] : variants) {
      for (const auto &[rhs, rhsClass] : variants) {
        bool forward = areEquivalent(lhs.attr, rhs.attr, o.shape);
        bool backward = areEquivalent(rhs.attr, lhs.attr, o.shape);
        EXPECT_EQ(forward, backward)
            << "asymmetric: " << lhs.text << " vs " << rhs.text;
        EXPECT_EQ(forward, lhsClass == rhsClass)
            << lhs.text << " vs " << rhs.text;
        llvm::SmallVector<int64_t> lhsDevices = lhs.allDevices();
        llvm::SmallVector<int64_t> rhsDevices = rhs.allDevices();
        llvm::sort(lhsDevices);
        llvm::sort(rhsDevices);
        bool sameDevices = lhsDevices == rhsDevices;
        EXPECT_EQ(haveSameDevices(lhs.attr, rhs.attr), sameDevices)
            << lhs.text << " vs " << rhs.text;
        if (&lhs != &rhs) {
          positives += lhsClass == rhsClass;
          negatives += lhsClass != rhsClass;
        }
      }
    }
  }
  EXPECT_GT(positives, 400);
  EXPECT_GT(negatives, 400);
}

//===----------------------------------------------------------------------===//
// Property 6: every generated layout prints as text that parses back to it.
//===----------------------------------------------------------------------===//

TEST_F(HSPMDPropertyTest, PrintedLayoutsParseBack) {
  seed(0x9a75e);
  GenOptions options{{Relation::Single, Relation::Split, Relation::Partial,
                      Relation::Replicated},
                     /*duplicates=*/true,
                     /*partials=*/true};
  for (int iteration = 0; iteration < 300 && !HasFailure(); ++iteration) {
    std::optional<LayoutSpec> spec = generate(options);
    if (!spec)
      return;
    std::vector<std::string> errors;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      errors.push_back(diag.str());
      return success();
    });
    Attribute parsed = parseAttribute(spec->text, &ctx);
    EXPECT_EQ(parsed, spec->attr)
        << spec->text << (errors.empty() ? "" : ": " + errors.front());
  }
}

//===----------------------------------------------------------------------===//
// Property 7: a pending reduction that makes the members of a union
// incomparable is rejected: any partial member of a replicated union, and a
// member of a split union whose pending reduction (kind, or none) differs
// from member 0's.
//===----------------------------------------------------------------------===//

TEST_F(HSPMDPropertyTest, IncomparableMembersAreRejected) {
  seed(0x12c0);
  GenOptions options{{Relation::Replicated, Relation::Split},
                     /*duplicates=*/true,
                     /*partials=*/true};
  auto kindName = [](std::optional<ReductionKind> kind) {
    return kind ? stringifyReductionKind(*kind).str() : std::string("none");
  };
  int64_t replicated = 0, splitAdded = 0, splitRemoved = 0, splitChanged = 0;
  for (int iteration = 0; iteration < 300 && !HasFailure(); ++iteration) {
    std::optional<LayoutSpec> original = generate(options);
    if (!original)
      return;
    // A one-member union is excluded: there is nothing to compare with.
    if (original->groups.size() < 2)
      continue;
    SCOPED_TRACE("iteration " + std::to_string(iteration) + ": " +
                 original->text);
    LayoutSpec variant = *original;
    int64_t member = uniform(0, variant.groups.size() - 1);
    GroupSpec &group = variant.groups[member];
    auto partialAxis = llvm::find_if(
        group.axes, [](const Axis &axis) { return axis.isPartial(); });
    std::optional<ReductionKind> kind = pick<ReductionKind>(kAllKinds);
    if (partialAxis == group.axes.end()) {
      // Add a partial axis (possibly of degree 1).
      group.axes.insert(group.axes.begin() + uniform(0, group.axes.size()),
                        Axis::partial(uniform(1, 3), *kind));
    } else if (chance(1, 2)) {
      // Remove it.
      group.axes.erase(partialAxis);
      kind = std::nullopt;
    } else {
      // Give it another kind.
      while (*kind == partialAxis->reduction)
        kind = pick<ReductionKind>(kAllKinds);
      partialAxis->reduction = *kind;
    }
    // Fresh devices for the new group size, so that only the relation
    // check can fail.
    int64_t numDevices = group.numDevices();
    group.devices.resize(std::min<int64_t>(group.devices.size(), numDevices));
    for (int64_t id = 2000; static_cast<int64_t>(group.devices.size()) <
                            numDevices;
         ++id)
      group.devices.push_back(id);

    std::string expected;
    if (variant.relation == Relation::Replicated) {
      ASSERT_TRUE(kind) << "a replicated union had a partial member";
      expected = "union member " + std::to_string(member) +
                 " of a replicated union is partial (" + kindName(kind) +
                 "); replicated groups hold complete values";
      ++replicated;
    } else {
      // The first member that differs from member 0.
      std::optional<ReductionKind> first = variant.groups[0].partialKind();
      int64_t other = member == 0 ? 1 : member;
      expected = "union members 0 and " + std::to_string(other) +
                 " of a split union disagree on the pending reduction (" +
                 kindName(first) + " vs " +
                 kindName(variant.groups[other].partialKind()) + ")";
      if (!original->groups[member].partialKind())
        ++splitAdded;
      else if (!kind)
        ++splitRemoved;
      else
        ++splitChanged;
    }
    std::vector<std::string> errors;
    UnionAttr attr = buildChecked(variant, errors);
    EXPECT_FALSE(attr) << "accepted " << [&]() {
      std::string text;
      llvm::raw_string_ostream os(text);
      Attribute(attr).print(os);
      return text;
    }();
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors.front().find(expected), std::string::npos)
        << "'" << errors.front() << "' lacks '" << expected << "'";
  }
  EXPECT_GT(replicated, 40);
  EXPECT_GT(splitAdded, 20);
  EXPECT_GT(splitRemoved, 10);
  EXPECT_GT(splitChanged, 10);
}

//===----------------------------------------------------------------------===//
// Property 8: getShard agrees with verifyLayoutForShape on other shapes.
//===----------------------------------------------------------------------===//

class HSPMDShapeFitTest : public HSPMDPropertyTest {
protected:
  /// Applies random layouts to random other shapes (of at most the rank the
  /// layout was made for). For the shapes verifyLayoutForShape accepts
  /// (`fits`), every device must get an in-bounds shard that tiles the
  /// tensor with the expected replication; for the rejected ones
  /// (`!fits`), no device may get a shard. Returns how many shapes were
  /// checked.
  int64_t checkOtherShapes(bool fits) {
    GenOptions options{{Relation::Single, Relation::Split, Relation::Partial,
                        Relation::Replicated},
                       /*duplicates=*/true,
                       /*partials=*/true};
    std::vector<std::string> errors;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      errors.push_back(diag.str());
      return success();
    });
    Location loc = UnknownLoc::get(&ctx);
    int64_t checked = 0;
    for (int iteration = 0; iteration < 200 && !HasFailure(); ++iteration) {
      std::optional<LayoutSpec> spec = generate(options);
      if (!spec)
        return checked;
      for (int attempt = 0; attempt < 4; ++attempt) {
        llvm::SmallVector<int64_t> shape;
        int64_t rank =
            fits ? spec->shape.size() : uniform(0, spec->shape.size());
        for (int64_t i = 0; i < rank; ++i)
          shape.push_back(uniform(1, kMaxDimSize));
        errors.clear();
        bool verified = succeeded(verifyLayoutForShape(
            spec->attr, shape, [&]() { return emitError(loc); }));
        if (verified != fits)
          continue;
        ++checked;
        SCOPED_TRACE("iteration " + std::to_string(iteration) + ": " +
                     spec->text + " on " + str(shape) +
                     (errors.empty() ? "" : ": " + errors.front()));
        int64_t numElements = 1;
        for (int64_t size : shape)
          numElements *= size;
        // Every device holds its group's copies of the group's piece.
        llvm::SmallVector<int64_t> pieces(spec->groups.size(), numElements);
        if (fits && spec->relation == Relation::Split) {
          FailureOr<llvm::SmallVector<int64_t>> extents =
              getGroupExtents(spec->attr, shape[spec->splitDim]);
          if (failed(extents) || extents->size() != spec->groups.size()) {
            ADD_FAILURE() << "no group extents";
            return checked;
          }
          int64_t covered = 0;
          for (auto [piece, extent] : llvm::zip_equal(pieces, *extents)) {
            piece = numElements / shape[spec->splitDim] * extent;
            covered += extent;
          }
          EXPECT_EQ(covered, shape[spec->splitDim]);
        }
        int64_t held = 0, expected = 0;
        for (auto [group, piece] : llvm::zip_equal(spec->groups, pieces)) {
          expected += group.duplicateDegree() * group.partialDegree() * piece;
          for (int64_t device : group.devices) {
            std::optional<Shard> shard = getShard(spec->attr, shape, device);
            if (!fits) {
              EXPECT_EQ(shard, std::nullopt) << "device " << device;
              continue;
            }
            if (!shard || !inBounds(*shard, shape)) {
              ADD_FAILURE()
                  << "device " << device
                  << (shard ? " has a shard out of bounds" : " has no shard");
              return checked;
            }
            held += shard->getNumElements();
          }
        }
        if (fits)
          EXPECT_EQ(held, expected);
        if (HasFailure())
          return checked;
      }
    }
    return checked;
  }
};

TEST_F(HSPMDShapeFitTest, ShardsExistWhereTheShapeFits) {
  seed(0xf175);
  EXPECT_GT(checkOtherShapes(/*fits=*/true), 100);
}

// getShard runs verifyLayoutForShape's checks, the members' split degrees
// included (see HSPMDLayoutTest's ShardOfShapeWhoseLocalSplitDoesNotFit).
TEST_F(HSPMDShapeFitTest, NoShardWhereTheShapeDoesNotFit) {
  seed(0xf175);
  EXPECT_GT(checkOtherShapes(/*fits=*/false), 100);
}

//===----------------------------------------------------------------------===//
// Property 9: the runtime's layout core (runtime/layout) agrees with the
// compiler's layout arithmetic, and its shards put back what they cut.
//===----------------------------------------------------------------------===//

/// A random shape: the layout's own, or one of random rank and sizes (which
/// the layout may not fit).
class LayoutCoreTest : public HSPMDPropertyTest {
protected:
  std::vector<int64_t> shapeFor(const LayoutSpec &spec, int attempt) {
    if (attempt == 0)
      return std::vector<int64_t>(spec.shape.begin(), spec.shape.end());
    std::vector<int64_t> shape;
    int64_t rank = uniform(0, kMaxRank);
    for (int64_t i = 0; i < rank; ++i)
      shape.push_back(uniform(1, kMaxDimSize));
    return shape;
  }
  const GenOptions everything{{Relation::Single, Relation::Split,
                               Relation::Partial, Relation::Replicated},
                              /*duplicates=*/true,
                              /*partials=*/true,
                              /*uneven=*/true};
};

TEST_F(LayoutCoreTest, ShardsEqualGetShard) {
  seed(0xc0de);
  int64_t compared = 0, refused = 0, partial = 0, replicated = 0, uneven = 0;
  for (int iteration = 0; iteration < 300 && !HasFailure(); ++iteration) {
    std::optional<LayoutSpec> spec = generate(everything);
    if (!spec)
      return;
    loom::layout::Layout core = toLayoutCore(spec->attr);
    // The core spells the layout as the dialect prints it.
    EXPECT_EQ(core.str(), spec->text);
    for (int attempt = 0; attempt < 4; ++attempt) {
      std::vector<int64_t> shape = shapeFor(*spec, attempt);
      SCOPED_TRACE("iteration " + std::to_string(iteration) + ": " +
                   spec->text + " on " + loom::layout::toString(shape));
      llvm::SmallVector<int64_t> devices = spec->allDevices();
      devices.push_back(1000); // in no layout
      for (int64_t device : devices) {
        std::optional<Shard> expected = getShard(spec->attr, shape, device);
        absl::StatusOr<loom::layout::Shard> actual =
            loom::layout::getShard(core, shape, device);
        ASSERT_EQ(expected.has_value(), actual.ok())
            << "device " << device << ": " << actual.status();
        if (!expected) {
          ++refused;
          EXPECT_FALSE(actual.status().message().empty());
          continue;
        }
        ++compared;
        uneven += hasUnevenSplits(spec->attr, shape);
        partial += expected->numPartials > 1;
        replicated += expected->numReplicas > 1;
        EXPECT_EQ(llvm::ArrayRef<int64_t>(actual->offsets),
                  llvm::ArrayRef<int64_t>(expected->offsets));
        EXPECT_EQ(llvm::ArrayRef<int64_t>(actual->sizes),
                  llvm::ArrayRef<int64_t>(expected->sizes));
        EXPECT_EQ(actual->partialIndex, expected->partialIndex);
        EXPECT_EQ(actual->numPartials, expected->numPartials);
        EXPECT_EQ(actual->replicaIndex, expected->replicaIndex);
        EXPECT_EQ(actual->numReplicas, expected->numReplicas);
        EXPECT_EQ(actual->reduction.has_value(),
                  expected->reduction.has_value());
        if (actual->reduction && expected->reduction)
          EXPECT_EQ(*actual->reduction, toLayoutCore(*expected->reduction));
      }
      // The shape check agrees with verifyLayoutForShape.
      ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
      bool fits = succeeded(verifyLayoutForShape(
          spec->attr, llvm::ArrayRef<int64_t>(shape),
          [&]() { return emitError(UnknownLoc::get(&ctx)); }));
      EXPECT_EQ(fits, loom::layout::checkLayout(core, shape).ok());
    }
  }
  // Every kind of shard, and refusals, were compared.
  EXPECT_GT(compared, 2000);
  EXPECT_GT(refused, 300);
  EXPECT_GT(partial, 200);
  EXPECT_GT(replicated, 200);
  EXPECT_GT(uneven, 300);
}

// Cutting a global array into every device's shard and putting it back
// gives the array bitwise (f64 small integers, so that a mean of equal
// contributions is exact), and a replica changed in one element is caught.
TEST_F(LayoutCoreTest, CutShardsAssembleBack) {
  using loom::layout::DType;
  seed(0xa55e);
  int64_t roundTrips = 0, faultsCaught = 0;
  for (int iteration = 0; iteration < 300 && !HasFailure(); ++iteration) {
    std::optional<LayoutSpec> spec = generate(everything);
    if (!spec)
      return;
    SCOPED_TRACE("iteration " + std::to_string(iteration) + ": " + spec->text);
    loom::layout::Layout core = toLayoutCore(spec->attr);
    std::vector<int64_t> shape(spec->shape.begin(), spec->shape.end());
    std::vector<double> global(spec->numElements());
    for (double &value : global)
      value = static_cast<double>(uniform(-50, 50));
    std::vector<std::vector<double>> pieces;
    std::vector<loom::layout::Shard> held;
    for (int64_t device : spec->allDevices()) {
      absl::StatusOr<loom::layout::Shard> shard =
          loom::layout::getShard(core, shape, device);
      ASSERT_TRUE(shard.ok()) << shard.status();
      pieces.emplace_back(shard->getNumElements());
      loom::layout::cutShard(global.data(), shape, DType::F64, *shard,
                             pieces.back().data());
      held.push_back(*shard);
    }
    auto assembleAll = [&](std::vector<double> &out) {
      std::vector<loom::layout::ShardData> data;
      for (auto [i, device] : llvm::enumerate(spec->allDevices()))
        data.push_back({device, pieces[i].data(), held[i].sizes});
      return loom::layout::assemble(core, shape, DType::F64, data, out.data());
    };
    std::vector<double> back(global.size(), -1);
    absl::Status status = assembleAll(back);
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(back, global);
    ++roundTrips;
    // A replica (of a complete block) that differs in one element.
    for (auto [i, shard] : llvm::enumerate(held)) {
      if (shard.numReplicas < 2 || shard.numPartials > 1 ||
          shard.getNumElements() == 0)
        continue;
      pieces[i][0] += 1.0;
      EXPECT_FALSE(assembleAll(back).ok());
      pieces[i][0] -= 1.0;
      ++faultsCaught;
      break;
    }
    // A shard of the wrong shape is refused with the device named.
    if (!held.empty() && !held[0].sizes.empty()) {
      held[0].sizes[0] += 1;
      absl::Status wrong = assembleAll(back);
      EXPECT_FALSE(wrong.ok());
      EXPECT_NE(wrong.message().find("device " +
                                     std::to_string(spec->allDevices()[0])),
                std::string::npos)
          << wrong;
      held[0].sizes[0] -= 1;
    }
  }
  EXPECT_EQ(roundTrips, 300);
  EXPECT_GT(faultsCaught, 80);
}

// Tables a corrupt program could carry: refused with a status, never a
// crash (shares that overflow, truncation, unknown codes, trailing data),
// and every valid layout round-trips.
TEST_F(LayoutCoreTest, LayoutTablesDecodeOrRefuse) {
  seed(0x7ab1e);
  for (int iteration = 0; iteration < 200 && !HasFailure(); ++iteration) {
    std::optional<LayoutSpec> spec = generate(everything);
    if (!spec)
      return;
    loom::layout::Layout core = toLayoutCore(spec->attr);
    std::vector<int64_t> table = loom::layout::encodeLayout(core);
    absl::StatusOr<loom::layout::Layout> back =
        loom::layout::decodeLayout(table.data(), table.size());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->str(), core.str());
    // Every truncation is refused.
    for (size_t n = 0; n < table.size(); ++n)
      EXPECT_FALSE(loom::layout::decodeLayout(table.data(), n).ok()) << n;
    table.push_back(0);
    EXPECT_FALSE(
        loom::layout::decodeLayout(table.data(), table.size()).ok());
  }
  // Four shares of 2^62 overflow the total.
  std::vector<int64_t> overflow = {0, 0, 0, 0, 4, int64_t(1) << 62,
                                   int64_t(1) << 62, int64_t(1) << 62,
                                   int64_t(1) << 62, 4};
  for (int64_t device = 0; device < 4; ++device)
    for (int64_t value : {int64_t(1), device, int64_t(0)})
      overflow.push_back(value);
  absl::StatusOr<loom::layout::Layout> wrapped =
      loom::layout::decodeLayout(overflow.data(), overflow.size());
  ASSERT_FALSE(wrapped.ok());
  EXPECT_NE(wrapped.status().message().find("overflow"), std::string::npos)
      << wrapped.status();
  // An unknown relation code.
  std::vector<int64_t> unknown = {7, 0, 0, 0, 0, 1, 1, 0, 0};
  EXPECT_FALSE(loom::layout::decodeLayout(unknown.data(), unknown.size()).ok());
}

// Replicas in different groups agree within a tolerance only where both
// are finite, and bf16 replicas get the f32 tolerance as documented.
TEST_F(LayoutCoreTest, CrossGroupReplicaTolerance) {
  using loom::layout::DType;
  loom::layout::Layout layout;
  layout.relation = loom::layout::Relation::Replicated;
  layout.members = {{{0}, {}}, {{1}, {}}};
  auto agree = [&](auto a, auto b, DType type) {
    std::vector<decltype(a)> out(1);
    std::vector<loom::layout::ShardData> shards = {{0, &a, {1}}, {1, &b, {1}}};
    return loom::layout::assemble(layout, {1}, type, shards, out.data()).ok();
  };
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(agree(1.0, 1.0 + 1e-13, DType::F64));
  EXPECT_FALSE(agree(1.0, 1.0 + 1e-9, DType::F64));
  EXPECT_FALSE(agree(inf, 1.0, DType::F64));
  EXPECT_FALSE(agree(inf, -inf, DType::F64));
  EXPECT_TRUE(agree(inf, inf, DType::F64)); // bitwise equal
  EXPECT_TRUE(agree(uint16_t(0x3f80), uint16_t(0x3f80), DType::BF16));
  // bf16: one ulp near 1 (2^-7) is admitted, two are not; near zero the
  // absolute 1e-7 admits what the relative bound would not.
  EXPECT_TRUE(agree(uint16_t(0x3f80), uint16_t(0x3f81), DType::BF16));
  EXPECT_FALSE(agree(uint16_t(0x3f80), uint16_t(0x3f83), DType::BF16));
  EXPECT_TRUE(agree(uint16_t(0x0001), uint16_t(0x0002), DType::BF16));
}

} // namespace
