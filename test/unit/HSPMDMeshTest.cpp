//===- HSPMDMeshTest.cpp - Unit tests of the group mesh model -------------===//
//
// Hand-computed meshes and mesh layouts (refineMesh, toMeshLayout, toStates)
// and a property test: states generated on a random mesh read back through
// the mesh layout to equivalent states, and the shard each device holds,
// computed here from the mesh layout alone, equals getShard's.
//
//===----------------------------------------------------------------------===//

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDMesh.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <ostream>
#include <random>
#include <string>

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

class HSPMDMeshTest : public ::testing::Test {
protected:
  HSPMDMeshTest() { context.loadDialect<HSPMDDialect>(); }

  DistStatesAttr states(const std::string &body) {
    Attribute attr = parseAttribute("#hspmd.states<" + body + ">", &context);
    auto result = dyn_cast_or_null<DistStatesAttr>(attr);
    EXPECT_TRUE(result) << body;
    return result;
  }

  MLIRContext context;
};

Mesh mesh(std::initializer_list<int64_t> sizes) { return Mesh{{sizes}}; }

std::string str(FailureOr<DistStatesAttr> attr) {
  if (failed(attr))
    return "failure";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << *attr;
  return text;
}

TEST_F(HSPMDMeshTest, RefineNestedStrides) {
  // [S0:4] cuts at 1, 4; [S0:2, S1:2] at 1, 2, 4.
  FailureOr<Mesh> refined =
      refineMesh({states("[S0:4]"), states("[S0:2, S1:2]")});
  ASSERT_TRUE(succeeded(refined));
  EXPECT_EQ(refined->str(), "[2, 2]");
  // [D:2, S1:4] cuts at 1, 4, 8; [S0:4, P(sum):2] at 1, 2, 8.
  refined = refineMesh({states("[D:2, S1:4]"), states("[S0:4, P(sum):2]")});
  ASSERT_TRUE(succeeded(refined));
  EXPECT_EQ(refined->str(), "[2, 2, 2]");
  // Degree-1 axes are ignored.
  refined = refineMesh({states("[S0:1, D:3, S1:1, S2:2]")});
  ASSERT_TRUE(succeeded(refined));
  EXPECT_EQ(refined->str(), "[3, 2]");
  // One device, or nothing at all: the empty mesh.
  refined = refineMesh({states("[]"), states("[D:1]")});
  ASSERT_TRUE(succeeded(refined));
  EXPECT_EQ(refined->str(), "[]");
  refined = refineMesh({});
  ASSERT_TRUE(succeeded(refined));
  EXPECT_EQ(refined->getNumDevices(), 1);
}

TEST_F(HSPMDMeshTest, RefineFailures) {
  // Strides 3 and 2 on 6 devices do not divide one another.
  EXPECT_TRUE(failed(refineMesh({states("[S0:2, S1:3]"), states("[S0:3, S1:2]")})));
  // Different device counts.
  EXPECT_TRUE(failed(refineMesh({states("[S0:2]"), states("[S0:4]")})));
  // 4 and 6 on 12 devices: cut points 1, 3, 12 and 1, 2, 12.
  EXPECT_TRUE(failed(refineMesh({states("[S0:4, D:3]"), states("[S0:6, D:2]")})));
}

// Explicit blocks read as their proportions along one mesh axis, which no
// finer mesh may cut again; they never merge with a neighbour.
TEST_F(HSPMDMeshTest, ExplicitBlocks) {
  FailureOr<MeshLayout> layout =
      toMeshLayout(states("[D:2, S1:[16, 8, 8]]"), mesh({2, 3}));
  ASSERT_TRUE(succeeded(layout));
  EXPECT_EQ(layout->str(), "(D, S1[2:1:1])");
  EXPECT_NE(layout->roles[1], MeshRole::split(1));
  EXPECT_EQ(layout->roles[1], MeshRole::split(1, {2, 1, 1}));
  EXPECT_TRUE(failed(toMeshLayout(states("[S0:[3, 1, 2, 2]]"), mesh({2, 2}))));
  // Equal blocks are an even split, on any mesh.
  layout = toMeshLayout(states("[S0:[2, 2, 2, 2]]"), mesh({2, 2}));
  ASSERT_TRUE(succeeded(layout));
  EXPECT_EQ(layout->str(), "(S0, S0)");
  EXPECT_FALSE(isRepresentable(
      {MeshRole::split(0, {1, 2}), MeshRole::split(0, {1, 2})}));
  EXPECT_TRUE(isRepresentable({MeshRole::split(0), MeshRole::split(0)}));
}

TEST_F(HSPMDMeshTest, ToMeshLayout) {
  FailureOr<MeshLayout> layout = toMeshLayout(states("[S0:4]"), mesh({2, 2}));
  ASSERT_TRUE(succeeded(layout));
  EXPECT_EQ(layout->str(), "(S0, S0)");
  layout = toMeshLayout(states("[S0:2, S1:2]"), mesh({2, 2}));
  ASSERT_TRUE(succeeded(layout));
  EXPECT_EQ(layout->str(), "(S0, S1)");
  layout = toMeshLayout(states("[P(max):2, D:1, S1:6]"), mesh({2, 3, 2}));
  ASSERT_TRUE(succeeded(layout));
  EXPECT_EQ(layout->str(), "(P(max), S1, S1)");
  layout = toMeshLayout(states("[]"), mesh({}));
  ASSERT_TRUE(succeeded(layout));
  EXPECT_EQ(layout->str(), "()");
  // A degree that straddles mesh axes, or a device count that differs.
  EXPECT_TRUE(failed(toMeshLayout(states("[S0:3, S1:2]"), mesh({2, 3}))));
  EXPECT_TRUE(failed(toMeshLayout(states("[S0:4]"), mesh({2, 2, 2}))));
  EXPECT_TRUE(failed(toMeshLayout(states("[S0:8]"), mesh({2, 2}))));
}

TEST_F(HSPMDMeshTest, ToStates) {
  MeshLayout layout{{MeshRole::split(0), MeshRole::split(0)}};
  EXPECT_EQ(str(toStates(layout, mesh({2, 2}), &context)),
            "#hspmd.states<[S0:4]>");
  layout = {{MeshRole::partial(ReductionKind::Sum), MeshRole::duplicate(),
             MeshRole::duplicate(), MeshRole::split(2)}};
  EXPECT_EQ(str(toStates(layout, mesh({2, 3, 2, 5}), &context)),
            "#hspmd.states<[P(sum):2, D:6, S2:5]>");
  // Equal roles that are not adjacent have no spelling.
  layout = {{MeshRole::split(0), MeshRole::duplicate(), MeshRole::split(0)}};
  EXPECT_TRUE(failed(toStates(layout, mesh({2, 2, 2}), &context)));
  EXPECT_FALSE(isRepresentable(layout.roles));
  layout = {{MeshRole::partial(ReductionKind::Sum),
             MeshRole::partial(ReductionKind::Max)}};
  EXPECT_TRUE(failed(toStates(layout, mesh({2, 2}), &context)));
  EXPECT_FALSE(isRepresentable(layout.roles));
  // ... unless the axis in between has size 1.
  layout = {{MeshRole::split(0), MeshRole::duplicate(), MeshRole::split(0)}};
  EXPECT_EQ(str(toStates(layout, mesh({2, 1, 2}), &context)),
            "#hspmd.states<[S0:4]>");
  // The rank must match the mesh.
  EXPECT_TRUE(failed(toStates(layout, mesh({2, 2}), &context)));
}

//===----------------------------------------------------------------------===//
// Property test
//===----------------------------------------------------------------------===//

/// The shard of device `index` of a tensor of `shape` held as `layout` on
/// `mesh`, computed from the mesh layout alone: mesh axes in order, a split
/// cutting its dimension's current block by the axis size.
Shard meshShard(const MeshLayout &layout, const Mesh &mesh,
                ArrayRef<int64_t> shape, int64_t index) {
  Shard shard;
  shard.offsets.assign(shape.size(), 0);
  shard.sizes.assign(shape.begin(), shape.end());
  SmallVector<int64_t> coords = mesh.getCoordinates(index);
  for (auto [role, size, coord] :
       llvm::zip_equal(layout.roles, mesh.sizes, coords)) {
    if (role.isSplit()) {
      int64_t chunk = shard.sizes[role.dim] / size;
      shard.offsets[role.dim] += coord * chunk;
      shard.sizes[role.dim] = chunk;
    } else if (role.isPartial()) {
      shard.partialIndex = shard.partialIndex * size + coord;
      shard.numPartials *= size;
      shard.reduction = role.reduction;
    } else {
      shard.replicaIndex = shard.replicaIndex * size + coord;
      shard.numReplicas *= size;
    }
  }
  if (shard.numPartials == 1)
    shard.reduction = std::nullopt;
  return shard;
}

TEST_F(HSPMDMeshTest, RoundTripAndShardsOnRandomMeshes) {
  std::mt19937_64 rng(20261129);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  constexpr int64_t kRank = 3;
  const ReductionKind kinds[] = {ReductionKind::Sum, ReductionKind::Max,
                                 ReductionKind::Min, ReductionKind::Mean};
  int64_t checkedDevices = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Mesh fine;
    int64_t rank = pick(0, 4);
    for (int64_t i = 0; i < rank; ++i)
      fine.sizes.push_back(pick(2, 3));

    // Cut the mesh into runs of consecutive axes, one states axis per run,
    // each naming a distinct thing (dimension split, D or P).
    SmallVector<MeshRole> identities = {MeshRole::duplicate(),
                                        MeshRole::partial(kinds[pick(0, 3)])};
    for (int64_t d = 0; d < kRank; ++d)
      identities.push_back(MeshRole::split(d));
    std::shuffle(identities.begin(), identities.end(), rng);
    SmallVector<Axis> axes;
    MeshLayout expected;
    SmallVector<int64_t> splitDegree(kRank, 1);
    int64_t next = 0, used = 0;
    while (next < rank) {
      int64_t left = static_cast<int64_t>(identities.size()) - used;
      if (pick(0, 3) == 0 && left > rank - next) {
        // A degree-1 axis, which covers no mesh axis.
        MeshRole role = identities[used++];
        axes.push_back(role.isSplit()     ? Axis::split(role.dim, 1)
                       : role.isPartial() ? Axis::partial(1, role.reduction)
                                          : Axis::duplicate(1));
        continue;
      }
      ASSERT_LT(used, static_cast<int64_t>(identities.size()));
      MeshRole role = identities[used++];
      int64_t runLength = pick(1, rank - next), degree = 1;
      for (int64_t i = 0; i < runLength; ++i) {
        degree *= fine.sizes[next + i];
        expected.roles.push_back(role);
      }
      next += runLength;
      if (role.isSplit()) {
        axes.push_back(Axis::split(role.dim, degree));
        splitDegree[role.dim] = degree;
      } else if (role.isPartial()) {
        axes.push_back(Axis::partial(degree, role.reduction));
      } else {
        axes.push_back(Axis::duplicate(degree));
      }
    }
    DistStatesAttr original = DistStatesAttr::get(&context, axes);
    std::string trace;
    llvm::raw_string_ostream traceOs(trace);
    traceOs << "states " << original << " on mesh " << fine.str();
    SCOPED_TRACE(trace);

    // The states' own mesh is coarser than (or equal to) the fine one, and
    // the fine one refines it: reading the states on either works.
    FailureOr<Mesh> own = refineMesh({original});
    ASSERT_TRUE(succeeded(own));
    EXPECT_EQ(own->getNumDevices(), fine.getNumDevices());
    EXPECT_LE(own->getRank(), fine.getRank());
    FailureOr<MeshLayout> onOwn = toMeshLayout(original, *own);
    ASSERT_TRUE(succeeded(onOwn));

    FailureOr<MeshLayout> layout = toMeshLayout(original, fine);
    ASSERT_TRUE(succeeded(layout));
    EXPECT_EQ(*layout, expected);
    EXPECT_TRUE(isRepresentable(layout->roles));

    FailureOr<DistStatesAttr> back = toStates(*layout, fine, &context);
    ASSERT_TRUE(succeeded(back));
    FailureOr<DistStatesAttr> backOwn = toStates(*onOwn, *own, &context);
    ASSERT_TRUE(succeeded(backOwn));
    EXPECT_EQ(*back, *backOwn);

    // A shape every split divides, with a random extra factor.
    SmallVector<int64_t> shape;
    for (int64_t d = 0; d < kRank; ++d)
      shape.push_back(splitDegree[d] * pick(1, 3));
    SmallVector<int64_t> devices;
    for (int64_t i = 0; i < fine.getNumDevices(); ++i)
      devices.push_back(100 + i);
    auto group = DeviceGroupAttr::get(&context, devices);
    auto lhs = UnionAttr::get(&context, group, original);
    auto rhs = UnionAttr::get(&context, group, *back);
    EXPECT_TRUE(areEquivalent(lhs, rhs, shape));
    for (int64_t i = 0; i < fine.getNumDevices(); ++i) {
      std::optional<Shard> shard = getShard(lhs, shape, devices[i]);
      ASSERT_TRUE(shard.has_value());
      EXPECT_EQ(meshShard(*layout, fine, shape, i), *shard) << "device " << i;
      ++checkedDevices;
    }
  }
  EXPECT_GT(checkedDevices, 1000);
}

} // namespace
