//===- HSPMDLayoutTest.cpp - Unit tests of the hspmd layout helpers -------===//
//
// Exact, hand-computed expectations for the attribute queries, the shard
// arithmetic (getShard, getGroupExtents), the shape checks
// (verifyLayoutForShape), layout equivalence, the textual syntax and the
// attribute verifiers.
//
//===----------------------------------------------------------------------===//

#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/hspmd/IR/HSPMDOps.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <optional>
#include <set>
#include <ostream>
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

/// Builds the expected shard.
Shard makeShard(llvm::ArrayRef<int64_t> offsets, llvm::ArrayRef<int64_t> sizes,
                int64_t partialIndex = 0, int64_t numPartials = 1,
                std::optional<ReductionKind> reduction = std::nullopt,
                int64_t replicaIndex = 0, int64_t numReplicas = 1) {
  Shard shard;
  shard.offsets.assign(offsets.begin(), offsets.end());
  shard.sizes.assign(sizes.begin(), sizes.end());
  shard.partialIndex = partialIndex;
  shard.numPartials = numPartials;
  shard.reduction = reduction;
  shard.replicaIndex = replicaIndex;
  shard.numReplicas = numReplicas;
  return shard;
}

std::string printAttr(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

class HSPMDLayoutTest : public ::testing::Test {
protected:
  HSPMDLayoutTest() : ctx(MLIRContext::Threading::DISABLED) {
    ctx.loadDialect<HSPMDDialect>();
  }

  /// Parses `text` (a full attribute, e.g. `#hspmd.union<...>`); fails the
  /// test when it does not parse.
  Attribute parse(llvm::StringRef text) {
    std::vector<std::string> errors;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      errors.push_back(diag.str());
      return success();
    });
    Attribute attr = parseAttribute(text, &ctx);
    EXPECT_TRUE(attr) << "failed to parse " << text.str() << ": "
                      << (errors.empty() ? "" : errors.front());
    return attr;
  }

  UnionAttr parseUnion(llvm::StringRef body) {
    Attribute attr = parse(("#hspmd.union<" + body + ">").str());
    auto layout = dyn_cast_or_null<UnionAttr>(attr);
    EXPECT_TRUE(layout) << "not a union: " << body.str();
    return layout;
  }

  DistStatesAttr parseStates(llvm::StringRef body) {
    Attribute attr = parse(("#hspmd.states<" + body + ">").str());
    auto states = dyn_cast_or_null<DistStatesAttr>(attr);
    EXPECT_TRUE(states) << "not states: " << body.str();
    return states;
  }

  /// Parses `text` expecting a failure; returns the first diagnostic.
  std::string parseError(llvm::StringRef text) {
    std::vector<std::string> errors;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      errors.push_back(diag.str());
      return success();
    });
    Attribute attr = parseAttribute(text, &ctx);
    EXPECT_FALSE(attr) << "unexpectedly parsed " << text.str();
    EXPECT_FALSE(errors.empty()) << "no diagnostic for " << text.str();
    return errors.empty() ? std::string() : errors.front();
  }

  /// Runs verifyLayoutForShape and returns the diagnostics it emitted;
  /// `ok` receives whether it succeeded.
  std::vector<std::string> verify(Attribute layout,
                                  llvm::ArrayRef<int64_t> shape, bool &ok) {
    std::vector<std::string> errors;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      errors.push_back(diag.str());
      return success();
    });
    Location loc = UnknownLoc::get(&ctx);
    ok = succeeded(
        verifyLayoutForShape(layout, shape, [&]() { return emitError(loc); }));
    return errors;
  }

  /// Expects verifyLayoutForShape to succeed without any diagnostic.
  void expectFits(Attribute layout, llvm::ArrayRef<int64_t> shape) {
    ASSERT_TRUE(layout);
    bool ok = false;
    std::vector<std::string> errors = verify(layout, shape, ok);
    EXPECT_TRUE(ok) << printAttr(layout);
    EXPECT_TRUE(errors.empty())
        << printAttr(layout) << ": " << (errors.empty() ? "" : errors.front());
  }

  /// Expects verifyLayoutForShape to fail with exactly one diagnostic
  /// containing `message`.
  void expectDoesNotFit(Attribute layout, llvm::ArrayRef<int64_t> shape,
                        llvm::StringRef message) {
    ASSERT_TRUE(layout);
    bool ok = true;
    std::vector<std::string> errors = verify(layout, shape, ok);
    EXPECT_FALSE(ok) << printAttr(layout);
    ASSERT_EQ(errors.size(), 1u) << printAttr(layout);
    EXPECT_NE(errors.front().find(message.str()), std::string::npos)
        << "diagnostic '" << errors.front() << "' lacks '" << message.str()
        << "'";
  }

  /// Builds an attribute with `build` (a getChecked call) expecting the
  /// verifier to reject it; returns the diagnostic.
  template <typename BuildFn> std::string rejection(BuildFn build) {
    std::vector<std::string> errors;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      errors.push_back(diag.str());
      return success();
    });
    Location loc = UnknownLoc::get(&ctx);
    Attribute attr = build([&]() { return emitError(loc); });
    EXPECT_FALSE(attr) << "verifier accepted " << printAttr(attr);
    EXPECT_EQ(errors.size(), 1u);
    return errors.empty() ? std::string() : errors.front();
  }

  DeviceGroupAttr group(llvm::ArrayRef<int64_t> devices) {
    return DeviceGroupAttr::get(&ctx, devices);
  }
  DistStatesAttr states(llvm::ArrayRef<Axis> axes) {
    return DistStatesAttr::get(&ctx, axes);
  }

  MLIRContext ctx;
};

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "'" << (haystack) << "' lacks '" << (needle) << "'"

//===----------------------------------------------------------------------===//
// Attribute queries
//===----------------------------------------------------------------------===//

TEST_F(HSPMDLayoutTest, DistStatesDegrees) {
  DistStatesAttr s = parseStates("[S0:2, D:3]");
  ASSERT_TRUE(s);
  EXPECT_EQ(s.getNumDevices(), 6);
  EXPECT_EQ(s.getDuplicateDegree(), 3);
  EXPECT_EQ(s.getPartialDegree(), 1);
  EXPECT_EQ(s.getPartialKind(), std::nullopt);
  EXPECT_EQ(s.getSplitDegree(0), 2);
  EXPECT_EQ(s.getSplitDegree(1), 1);
  EXPECT_EQ(s.getMinRank(), 1);

  DistStatesAttr p = parseStates("[P(max):4, S2:3, S0:2]");
  ASSERT_TRUE(p);
  EXPECT_EQ(p.getNumDevices(), 24);
  EXPECT_EQ(p.getDuplicateDegree(), 1);
  EXPECT_EQ(p.getPartialDegree(), 4);
  EXPECT_EQ(p.getPartialKind(), ReductionKind::Max);
  EXPECT_EQ(p.getSplitDegree(0), 2);
  EXPECT_EQ(p.getSplitDegree(1), 1);
  EXPECT_EQ(p.getSplitDegree(2), 3);
  EXPECT_EQ(p.getMinRank(), 3);

  DistStatesAttr empty = parseStates("[]");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty.getNumDevices(), 1);
  EXPECT_EQ(empty.getDuplicateDegree(), 1);
  EXPECT_EQ(empty.getPartialDegree(), 1);
  EXPECT_EQ(empty.getPartialKind(), std::nullopt);
  EXPECT_EQ(empty.getMinRank(), 0);
  EXPECT_TRUE(empty.getCoordinates(0).empty());
  EXPECT_EQ(empty.getIndex({}), 0);

  // A degree-1 partial still names its kind.
  DistStatesAttr p1 = states({Axis::partial(1, ReductionKind::Mean)});
  EXPECT_EQ(p1.getPartialDegree(), 1);
  EXPECT_EQ(p1.getPartialKind(), ReductionKind::Mean);
}

TEST_F(HSPMDLayoutTest, DistStatesCoordinatesMixedRadix) {
  DistStatesAttr s = parseStates("[S0:2, D:3]");
  ASSERT_TRUE(s);
  // First axis slowest: index = s0 * 3 + d.
  const std::vector<std::vector<int64_t>> expected = {{0, 0}, {0, 1}, {0, 2},
                                                      {1, 0}, {1, 1}, {1, 2}};
  for (int64_t index = 0; index < 6; ++index) {
    llvm::SmallVector<int64_t> coords = s.getCoordinates(index);
    EXPECT_EQ(std::vector<int64_t>(coords.begin(), coords.end()),
              expected[index])
        << "index " << index;
    EXPECT_EQ(s.getIndex(coords), index);
  }
  EXPECT_EQ(s.getCoordinates(4), (llvm::SmallVector<int64_t>{1, 1}));

  DistStatesAttr t = parseStates("[D:2, P(sum):3, S1:4]");
  ASSERT_TRUE(t);
  for (int64_t index = 0; index < 24; ++index) {
    llvm::SmallVector<int64_t> coords = t.getCoordinates(index);
    EXPECT_EQ(coords, (llvm::SmallVector<int64_t>{index / 12, index / 4 % 3,
                                                  index % 4}));
    EXPECT_EQ(t.getIndex(coords), index);
  }
}

TEST_F(HSPMDLayoutTest, AxisPrinting) {
  EXPECT_EQ(Axis::split(3, 4).str(), "S3:4");
  EXPECT_EQ(Axis::duplicate(2).str(), "D:2");
  EXPECT_EQ(Axis::partial(8, ReductionKind::Min).str(), "P(min):8");
  EXPECT_TRUE(Axis::split(1, 2).sameKindAs(Axis::split(1, 4)));
  EXPECT_FALSE(Axis::split(1, 2).sameKindAs(Axis::split(0, 2)));
  EXPECT_TRUE(Axis::partial(2, ReductionKind::Sum)
                  .sameKindAs(Axis::partial(3, ReductionKind::Max)));
  EXPECT_NE(Axis::partial(2, ReductionKind::Sum),
            Axis::partial(2, ReductionKind::Max));
  // The reduction of a non-partial axis is ignored.
  Axis d = Axis::duplicate(2);
  d.reduction = ReductionKind::Max;
  EXPECT_EQ(d, Axis::duplicate(2));
}

TEST_F(HSPMDLayoutTest, DeviceGroupQueries) {
  DeviceGroupAttr g = group({4, 7, 5});
  EXPECT_EQ(g.size(), 3);
  EXPECT_EQ(g.indexOf(4), 0);
  EXPECT_EQ(g.indexOf(7), 1);
  EXPECT_EQ(g.indexOf(5), 2);
  EXPECT_EQ(g.indexOf(6), -1);
  EXPECT_EQ(g.indexOf(0), -1);
  EXPECT_TRUE(g.overlaps(group({1, 5})));
  EXPECT_TRUE(group({1, 5}).overlaps(g));
  EXPECT_FALSE(g.overlaps(group({0, 1, 2, 3, 6})));
  EXPECT_FALSE(group({0, 1, 2, 3, 6}).overlaps(g));
  EXPECT_TRUE(g.overlaps(g));
}

TEST_F(HSPMDLayoutTest, UnionQueries) {
  UnionAttr u = parseUnion(
      "split(0) shares [3, 1]: {[3, 0, 1, 2]: [S0:2, S1:2]}, {[5, 4]: [S1:2]}");
  ASSERT_TRUE(u);
  EXPECT_EQ(u.getNumGroups(), 2);
  EXPECT_EQ(u.getRelation(), UnionRelation::Split);
  EXPECT_EQ(u.getSplitDim(), 0);
  EXPECT_EQ(u.getShares(), (llvm::ArrayRef<int64_t>{3, 1}));
  EXPECT_FALSE(u.getExplicitSizes());
  EXPECT_EQ(u.getAllDevices(), (llvm::SmallVector<int64_t>{3, 0, 1, 2, 5, 4}));
  EXPECT_EQ(u.getMemberOf(3), 0);
  EXPECT_EQ(u.getMemberOf(2), 0);
  EXPECT_EQ(u.getMemberOf(5), 1);
  EXPECT_EQ(u.getMemberOf(4), 1);
  EXPECT_EQ(u.getMemberOf(6), -1);

  UnionAttr single = parseUnion("{[0, 1, 2, 3]: [S0:2, S1:2]}");
  ASSERT_TRUE(single);
  EXPECT_EQ(single.getNumGroups(), 1);
  EXPECT_EQ(single.getRelation(), UnionRelation::Replicated);
  EXPECT_EQ(single,
            UnionAttr::get(&ctx, group({0, 1, 2, 3}),
                           states({Axis::split(0, 2), Axis::split(1, 2)})));
}

TEST_F(HSPMDLayoutTest, StrategySetQueries) {
  auto set = dyn_cast_or_null<StrategySetAttr>(
      parse("#hspmd.strategies<[\"tp\" = <{[0, 1, 2, 3]: [S1:4]}>, "
            "\"dp\" = <{[0, 1, 2, 3]: [S0:4]}>], optimizer = \"dp\">"));
  ASSERT_TRUE(set);
  EXPECT_EQ(set.getNumStrategies(), 2);
  EXPECT_EQ(set.getOptimizerIndex(), 1);
  UnionAttr tp = parseUnion("{[0, 1, 2, 3]: [S1:4]}");
  UnionAttr dp = parseUnion("{[0, 1, 2, 3]: [S0:4]}");
  EXPECT_EQ(set.lookup("tp"), tp);
  EXPECT_EQ(set.lookup("dp"), dp);
  EXPECT_FALSE(set.lookup("pp"));
  EXPECT_FALSE(set.lookup(""));
  EXPECT_EQ(set.getOptimizerLayout(), dp);
}

TEST_F(HSPMDLayoutTest, ClusterLookup) {
  auto cluster = dyn_cast_or_null<ClusterAttr>(
      parse("#hspmd.cluster<[#hspmd.device<0, \"h200\", speed = 1.0, mem = "
            "141, node = 0>, #hspmd.device<7, \"910b\", speed = 0.5, mem = "
            "64, node = 1>]>"));
  ASSERT_TRUE(cluster);
  DeviceAttr d7 = cluster.lookup(7);
  ASSERT_TRUE(d7);
  EXPECT_EQ(d7.getId(), 7);
  EXPECT_EQ(d7.getKind(), "910b");
  EXPECT_EQ(d7.getSpeed().convertToDouble(), 0.5);
  EXPECT_EQ(d7.getMemory(), 64);
  EXPECT_EQ(d7.getNode(), 1);
  DeviceAttr d0 = cluster.lookup(0);
  ASSERT_TRUE(d0);
  EXPECT_EQ(d0.getKind(), "h200");
  EXPECT_FALSE(cluster.lookup(1));
  EXPECT_FALSE(cluster.lookup(-1));
}

//===----------------------------------------------------------------------===//
// getShard
//===----------------------------------------------------------------------===//

TEST_F(HSPMDLayoutTest, ShardSingleGroupTwoSplits) {
  // The group order maps device ids to indices: 3 -> 0, 1 -> 1, 0 -> 2,
  // 2 -> 3.
  UnionAttr u = parseUnion("{[3, 1, 0, 2]: [S0:2, S1:2]}");
  ASSERT_TRUE(u);
  EXPECT_EQ(getShard(u, {8, 8}, 3), makeShard({0, 0}, {4, 4}));
  EXPECT_EQ(getShard(u, {8, 8}, 1), makeShard({0, 4}, {4, 4}));
  EXPECT_EQ(getShard(u, {8, 8}, 0), makeShard({4, 0}, {4, 4}));
  EXPECT_EQ(getShard(u, {8, 8}, 2), makeShard({4, 4}, {4, 4}));
  EXPECT_EQ(getShard(u, {8, 8}, 2)->getNumElements(), 16);
}

TEST_F(HSPMDLayoutTest, ShardPartialAndSplit) {
  UnionAttr u = parseUnion("{[0, 1, 2, 3]: [P(sum):2, S1:2]}");
  ASSERT_TRUE(u);
  auto sum = ReductionKind::Sum;
  EXPECT_EQ(getShard(u, {8, 8}, 0), makeShard({0, 0}, {8, 4}, 0, 2, sum));
  EXPECT_EQ(getShard(u, {8, 8}, 1), makeShard({0, 4}, {8, 4}, 0, 2, sum));
  EXPECT_EQ(getShard(u, {8, 8}, 2), makeShard({0, 0}, {8, 4}, 1, 2, sum));
  EXPECT_EQ(getShard(u, {8, 8}, 3), makeShard({0, 4}, {8, 4}, 1, 2, sum));
  // A one-member union's relation is moot: `replicated:` spells the same
  // attribute, and a one-member partial union holds the same shards.
  EXPECT_EQ(parseUnion("replicated: {[0, 1, 2, 3]: [P(sum):2, S1:2]}"), u);
  UnionAttr p = parseUnion("partial(sum): {[0, 1, 2, 3]: [P(sum):2, S1:2]}");
  ASSERT_TRUE(p);
  EXPECT_NE(p, u);
  for (int64_t device = 0; device < 4; ++device)
    EXPECT_EQ(getShard(p, {8, 8}, device), getShard(u, {8, 8}, device))
        << "device " << device;
}

TEST_F(HSPMDLayoutTest, ShardSplitUnionOfPartials) {
  // Every member of a split union holds partial maxima, with different
  // degrees: group 0 rows [0, 6) as 3 contributions, group 1 rows [6, 8) as
  // 2 contributions with dimension 1 split in two.
  UnionAttr u = parseUnion("split(0) sizes [6, 2]: {[0, 1, 2]: [P(max):3]}, "
                           "{[3, 4, 5, 6]: [S1:2, P(max):2]}");
  ASSERT_TRUE(u);
  auto max = ReductionKind::Max;
  EXPECT_EQ(getShard(u, {8, 4}, 0), makeShard({0, 0}, {6, 4}, 0, 3, max));
  EXPECT_EQ(getShard(u, {8, 4}, 1), makeShard({0, 0}, {6, 4}, 1, 3, max));
  EXPECT_EQ(getShard(u, {8, 4}, 2), makeShard({0, 0}, {6, 4}, 2, 3, max));
  EXPECT_EQ(getShard(u, {8, 4}, 3), makeShard({6, 0}, {2, 2}, 0, 2, max));
  EXPECT_EQ(getShard(u, {8, 4}, 4), makeShard({6, 0}, {2, 2}, 1, 2, max));
  EXPECT_EQ(getShard(u, {8, 4}, 5), makeShard({6, 2}, {2, 2}, 0, 2, max));
  EXPECT_EQ(getShard(u, {8, 4}, 6), makeShard({6, 2}, {2, 2}, 1, 2, max));
  // A degree-1 partial axis on every member leaves nothing pending.
  UnionAttr complete = parseUnion(
      "split(0): {[0]: [P(min):1]}, {[1, 2]: [S0:2, P(min):1]}");
  ASSERT_TRUE(complete);
  EXPECT_EQ(getShard(complete, {8}, 0), makeShard({0}, {4}));
  EXPECT_EQ(getShard(complete, {8}, 2), makeShard({6}, {2}));
}

TEST_F(HSPMDLayoutTest, ShardDuplicateThenSplit) {
  UnionAttr u = parseUnion("{[0, 1, 2, 3]: [D:2, S0:2]}");
  ASSERT_TRUE(u);
  auto none = std::nullopt;
  EXPECT_EQ(getShard(u, {8, 8}, 0),
            makeShard({0, 0}, {4, 8}, 0, 1, none, 0, 2));
  EXPECT_EQ(getShard(u, {8, 8}, 1),
            makeShard({4, 0}, {4, 8}, 0, 1, none, 0, 2));
  EXPECT_EQ(getShard(u, {8, 8}, 2),
            makeShard({0, 0}, {4, 8}, 0, 1, none, 1, 2));
  EXPECT_EQ(getShard(u, {8, 8}, 3),
            makeShard({4, 0}, {4, 8}, 0, 1, none, 1, 2));
}

TEST_F(HSPMDLayoutTest, ShardAsymmetricShares) {
  UnionAttr u = parseUnion(
      "split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}");
  ASSERT_TRUE(u);
  // Group 0 holds rows [0, 48), group 1 rows [48, 64).
  EXPECT_EQ(getShard(u, {64, 128}, 0), makeShard({0, 0}, {24, 64}));
  EXPECT_EQ(getShard(u, {64, 128}, 1), makeShard({0, 64}, {24, 64}));
  EXPECT_EQ(getShard(u, {64, 128}, 2), makeShard({24, 0}, {24, 64}));
  EXPECT_EQ(getShard(u, {64, 128}, 3), makeShard({24, 64}, {24, 64}));
  EXPECT_EQ(getShard(u, {64, 128}, 4), makeShard({48, 0}, {16, 64}));
  EXPECT_EQ(getShard(u, {64, 128}, 5), makeShard({48, 64}, {16, 64}));
}

TEST_F(HSPMDLayoutTest, ShardExplicitSizes) {
  UnionAttr u = parseUnion("split(0) sizes [40, 24]: {[0, 1, 2, 3]: [S0:2, "
                           "S1:2]}, {[4, 5]: [S1:2]}");
  ASSERT_TRUE(u);
  EXPECT_EQ(getShard(u, {64, 128}, 0), makeShard({0, 0}, {20, 64}));
  EXPECT_EQ(getShard(u, {64, 128}, 1), makeShard({0, 64}, {20, 64}));
  EXPECT_EQ(getShard(u, {64, 128}, 2), makeShard({20, 0}, {20, 64}));
  EXPECT_EQ(getShard(u, {64, 128}, 3), makeShard({20, 64}, {20, 64}));
  EXPECT_EQ(getShard(u, {64, 128}, 4), makeShard({40, 0}, {24, 64}));
  EXPECT_EQ(getShard(u, {64, 128}, 5), makeShard({40, 64}, {24, 64}));
}

TEST_F(HSPMDLayoutTest, ShardEqualSplitAcrossGroupsOfDimension1) {
  // No shares: equal pieces; the groups split dimension 1, and group 1 also
  // splits dimension 1 locally.
  UnionAttr u =
      parseUnion("split(1): {[2]: []}, {[0, 1]: [S1:2]}, {[3]: [D:1]}");
  ASSERT_TRUE(u);
  EXPECT_EQ(getShard(u, {2, 12}, 2), makeShard({0, 0}, {2, 4}));
  EXPECT_EQ(getShard(u, {2, 12}, 0), makeShard({0, 4}, {2, 2}));
  EXPECT_EQ(getShard(u, {2, 12}, 1), makeShard({0, 6}, {2, 2}));
  EXPECT_EQ(getShard(u, {2, 12}, 3), makeShard({0, 8}, {2, 4}));
}

TEST_F(HSPMDLayoutTest, ShardPartialAcrossGroups) {
  // Group 0 holds two contributions, group 1 one: three in all.
  UnionAttr u = parseUnion("partial(sum): {[0, 1, 2, 3]: [P(sum):2, S1:2]}, "
                           "{[4, 5]: [S1:2]}");
  ASSERT_TRUE(u);
  auto sum = ReductionKind::Sum;
  EXPECT_EQ(getShard(u, {8, 8}, 0), makeShard({0, 0}, {8, 4}, 0, 3, sum));
  EXPECT_EQ(getShard(u, {8, 8}, 1), makeShard({0, 4}, {8, 4}, 0, 3, sum));
  EXPECT_EQ(getShard(u, {8, 8}, 2), makeShard({0, 0}, {8, 4}, 1, 3, sum));
  EXPECT_EQ(getShard(u, {8, 8}, 3), makeShard({0, 4}, {8, 4}, 1, 3, sum));
  EXPECT_EQ(getShard(u, {8, 8}, 4), makeShard({0, 0}, {8, 4}, 2, 3, sum));
  EXPECT_EQ(getShard(u, {8, 8}, 5), makeShard({0, 4}, {8, 4}, 2, 3, sum));

  // Partial across groups with local duplicates and the first group
  // contributing once: indices 0 (group 0), 1..3 (group 1).
  UnionAttr m = parseUnion("partial(max) shares [1, 3]: {[6, 7]: [D:2]}, "
                           "{[0, 1, 2]: [P(max):3]}");
  ASSERT_TRUE(m);
  auto max = ReductionKind::Max;
  EXPECT_EQ(getShard(m, {5}, 6), makeShard({0}, {5}, 0, 4, max, 0, 2));
  EXPECT_EQ(getShard(m, {5}, 7), makeShard({0}, {5}, 0, 4, max, 1, 2));
  EXPECT_EQ(getShard(m, {5}, 0), makeShard({0}, {5}, 1, 4, max));
  EXPECT_EQ(getShard(m, {5}, 1), makeShard({0}, {5}, 2, 4, max));
  EXPECT_EQ(getShard(m, {5}, 2), makeShard({0}, {5}, 3, 4, max));
}

TEST_F(HSPMDLayoutTest, ShardPartialUnionOfSingleDevices) {
  // A partial union whose groups have no local partial still reports the
  // reduction.
  UnionAttr u = parseUnion("partial(mean): {[1]: []}, {[0]: []}");
  ASSERT_TRUE(u);
  auto mean = ReductionKind::Mean;
  EXPECT_EQ(getShard(u, {3, 3}, 1), makeShard({0, 0}, {3, 3}, 0, 2, mean));
  EXPECT_EQ(getShard(u, {3, 3}, 0), makeShard({0, 0}, {3, 3}, 1, 2, mean));
}

TEST_F(HSPMDLayoutTest, ShardReplicatedUnion) {
  // Every element is held by 2 + 2 + 1 = 5 devices.
  UnionAttr u = parseUnion("replicated: {[0, 1]: [D:2]}, "
                           "{[2, 3, 4, 5]: [S0:2, D:2]}, {[6]: []}");
  ASSERT_TRUE(u);
  auto none = std::nullopt;
  EXPECT_EQ(getShard(u, {8, 4}, 0),
            makeShard({0, 0}, {8, 4}, 0, 1, none, 0, 5));
  EXPECT_EQ(getShard(u, {8, 4}, 1),
            makeShard({0, 0}, {8, 4}, 0, 1, none, 1, 5));
  EXPECT_EQ(getShard(u, {8, 4}, 2),
            makeShard({0, 0}, {4, 4}, 0, 1, none, 2, 5));
  EXPECT_EQ(getShard(u, {8, 4}, 3),
            makeShard({0, 0}, {4, 4}, 0, 1, none, 3, 5));
  EXPECT_EQ(getShard(u, {8, 4}, 4),
            makeShard({4, 0}, {4, 4}, 0, 1, none, 2, 5));
  EXPECT_EQ(getShard(u, {8, 4}, 5),
            makeShard({4, 0}, {4, 4}, 0, 1, none, 3, 5));
  EXPECT_EQ(getShard(u, {8, 4}, 6),
            makeShard({0, 0}, {8, 4}, 0, 1, none, 4, 5));
}

TEST_F(HSPMDLayoutTest, ShardOfDeviceOutsideLayout) {
  UnionAttr u = parseUnion(
      "split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}");
  ASSERT_TRUE(u);
  EXPECT_EQ(getShard(u, {64, 128}, 6), std::nullopt);
  EXPECT_EQ(getShard(u, {64, 128}, -1), std::nullopt);
}

TEST_F(HSPMDLayoutTest, ShardOfDynamicShape) {
  UnionAttr single = parseUnion("{[0, 1]: [S1:2]}");
  ASSERT_TRUE(single);
  EXPECT_EQ(getShard(single, {ShapedType::kDynamic, 8}, 0), std::nullopt);
  EXPECT_EQ(getShard(single, {8, ShapedType::kDynamic}, 1), std::nullopt);
  UnionAttr split = parseUnion("split(0): {[0]: []}, {[1]: []}");
  ASSERT_TRUE(split);
  EXPECT_EQ(getShard(split, {ShapedType::kDynamic}, 0), std::nullopt);
}

TEST_F(HSPMDLayoutTest, ShardOfShapeTheUnionDoesNotFit) {
  UnionAttr u = parseUnion("split(0) shares [3, 1]: {[0]: []}, {[1]: []}");
  ASSERT_TRUE(u);
  EXPECT_EQ(getShard(u, {6, 2}, 0), std::nullopt); // 4 does not divide 6
  EXPECT_EQ(getShard(u, {}, 0), std::nullopt);     // no dimension 0
  UnionAttr sizes = parseUnion("split(1) sizes [2, 3]: {[0]: []}, {[1]: []}");
  ASSERT_TRUE(sizes);
  EXPECT_EQ(getShard(sizes, {1, 6}, 1), std::nullopt); // 2 + 3 != 6
  EXPECT_EQ(getShard(sizes, {1, 5}, 1), makeShard({0, 2}, {1, 3}));
}

// A split that its degree does not divide is balanced: the first size mod
// degree blocks are one larger. Explicit sizes give any blocks.
TEST_F(HSPMDLayoutTest, ShardOfUnevenSplits) {
  UnionAttr balanced = parseUnion("{[0, 1, 2]: [S0:3]}");
  ASSERT_TRUE(balanced);
  EXPECT_EQ(getShard(balanced, {8, 8}, 0), makeShard({0, 0}, {3, 8}));
  EXPECT_EQ(getShard(balanced, {8, 8}, 1), makeShard({3, 0}, {3, 8}));
  EXPECT_EQ(getShard(balanced, {8, 8}, 2), makeShard({6, 0}, {2, 8}));
  // Member 0's 3 rows over 2 devices: 2 and 1.
  UnionAttr share = parseUnion("split(0) shares [3, 1]: {[0, 1]: [S0:2]}, "
                               "{[2]: []}");
  ASSERT_TRUE(share);
  EXPECT_EQ(getShard(share, {4}, 1), makeShard({2}, {1}));
  EXPECT_EQ(getShard(share, {4}, 2), makeShard({3}, {1}));
  // Heads kept whole: 32 columns as 16, 8, 8, on the inner axis.
  UnionAttr heads = parseUnion("{[0, 1, 2, 3, 4, 5]: [D:2, S1:[16, 8, 8]]}");
  ASSERT_TRUE(heads);
  for (int64_t device = 0; device < 6; ++device) {
    std::optional<Shard> shard = getShard(heads, {4, 32}, device);
    ASSERT_TRUE(shard);
    int64_t block = device % 3;
    EXPECT_EQ(shard->offsets, (llvm::SmallVector<int64_t>{0, block ? 8 + 8 * block : 0}));
    EXPECT_EQ(shard->sizes, (llvm::SmallVector<int64_t>{4, block ? 8 : 16}));
    EXPECT_EQ(shard->replicaIndex, device / 3);
    EXPECT_EQ(shard->numReplicas, 2);
  }
  EXPECT_TRUE(hasUnevenSplits(heads, {4, 32}));
  EXPECT_TRUE(hasUnevenSplits(balanced, {8, 8}));
  EXPECT_FALSE(hasUnevenSplits(balanced, {9, 8}));
  EXPECT_TRUE(hasUnevenSplits(share, {4}));
  EXPECT_FALSE(hasUnevenSplits(share, {8}));
  // Sizes print as they parse.
  std::string text;
  llvm::raw_string_ostream(text) << heads;
  EXPECT_EQ(text, "#hspmd.union<{[0, 1, 2, 3, 4, 5]: [D:2, S1:[16, 8, 8]]}>");
  // Equal sizes are another spelling of the same blocks.
  UnionAttr even = parseUnion("{[0, 1]: [S1:2]}");
  UnionAttr listed = parseUnion("{[0, 1]: [S1:[4, 4]]}");
  EXPECT_NE(even, listed);
  EXPECT_TRUE(areEquivalent(even, listed, {2, 8}));
  EXPECT_FALSE(areEquivalent(listed, parseUnion("{[0, 1]: [S1:[5, 3]]}"),
                             {2, 8}));
}

// getShard runs the checks of verifyLayoutForShape: blocks that do not
// cover the dimension, or a member's split of a dimension beyond the rank,
// give no shard rather than a wrong or out-of-range one.
TEST_F(HSPMDLayoutTest, ShardOfShapeWhoseLocalSplitDoesNotFit) {
  // Explicit sizes that miss two rows.
  UnionAttr short_ = parseUnion("{[0, 1, 2]: [S0:[2, 2, 2]]}");
  ASSERT_TRUE(short_);
  EXPECT_EQ(getShard(short_, {8, 8}, 2), std::nullopt);
  // 2 rows cannot make 3 blocks.
  EXPECT_EQ(getShard(parseUnion("{[0, 1, 2]: [S0:3]}"), {2, 8}, 0),
            std::nullopt);
  // Dimension 2 of a rank-2 tensor.
  UnionAttr beyond = parseUnion("{[0, 1]: [S2:2]}");
  ASSERT_TRUE(beyond);
  EXPECT_EQ(getShard(beyond, {8, 8}, 1), std::nullopt);
  UnionAttr far = parseUnion("{[0, 1]: [S7:2]}");
  ASSERT_TRUE(far);
  EXPECT_EQ(getShard(far, {8, 8}, 0), std::nullopt);
  // The largest split dimension allowed.
  UnionAttr largest = parseUnion("{[0, 1]: [S2147483647:2]}");
  ASSERT_TRUE(largest);
  EXPECT_EQ(getShard(largest, {8, 8}, 0), std::nullopt);
  expectDoesNotFit(largest, llvm::ArrayRef<int64_t>{8, 8},
                   "splits dimension 2147483647 but the tensor has rank 2");
  // The same layouts on shapes they fit.
  EXPECT_EQ(getShard(short_, {6, 8}, 2), makeShard({4, 0}, {2, 8}));
  EXPECT_EQ(getShard(beyond, {8, 8, 4}, 1), makeShard({0, 0, 2}, {8, 8, 2}));
}

// Explicit sizes give one size per group: `split(0) sizes []` (or
// explicitSizes = true with no shares) would print without `sizes` and read
// back as an equal split, and would have no extent to give any group.
TEST_F(HSPMDLayoutTest, ExplicitSizesNeedSizes) {
  EXPECT_CONTAINS(rejection([&](auto emit) {
                    return UnionAttr::getChecked(
                        emit, &ctx, UnionRelation::Split, 0, ReductionKind::Sum,
                        {}, true, {group({0}), group({1})},
                        {states({}), states({})});
                  }),
                  "union has 2 groups but 0 shares");
  EXPECT_CONTAINS(
      parseError("#hspmd.union<split(0) sizes []: {[0]: []}, {[1]: []}>"),
      "union has 2 groups but 0 shares");
  // A one-member union too.
  EXPECT_CONTAINS(parseError("#hspmd.union<split(0) sizes []: {[0]: []}>"),
                  "union has 1 groups but 0 shares");
  // Too few or too many sizes.
  EXPECT_CONTAINS(
      parseError("#hspmd.union<split(0) sizes [4]: {[0]: []}, {[1]: []}>"),
      "union has 2 groups but 1 shares");
  EXPECT_CONTAINS(parseError("#hspmd.union<split(0) sizes [4, 4, 4]: {[0]: "
                             "[]}, {[1]: []}>"),
                  "union has 2 groups but 3 shares");
  // One size per group is fine, and an empty `shares []` is no shares at
  // all (an equal split).
  UnionAttr sizes = parseUnion("split(0) sizes [4, 4]: {[0]: []}, {[1]: []}");
  ASSERT_TRUE(sizes);
  EXPECT_EQ(getGroupExtents(sizes, 8), (llvm::SmallVector<int64_t>{4, 4}));
  UnionAttr noShares =
      parseUnion("split(0) shares []: {[0]: []}, {[1]: []}");
  ASSERT_TRUE(noShares);
  EXPECT_EQ(noShares, parseUnion("split(0): {[0]: []}, {[1]: []}"));
}

TEST_F(HSPMDLayoutTest, ShardOfScalar) {
  UnionAttr u = parseUnion("{[4, 9]: [D:2]}");
  ASSERT_TRUE(u);
  auto none = std::nullopt;
  std::optional<Shard> first = getShard(u, {}, 4);
  EXPECT_EQ(first, makeShard({}, {}, 0, 1, none, 0, 2));
  EXPECT_EQ(getShard(u, {}, 9), makeShard({}, {}, 0, 1, none, 1, 2));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->getNumElements(), 1);
}

TEST_F(HSPMDLayoutTest, ShardPrinting) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << makeShard({4, 0}, {4, 8}, 1, 2, ReductionKind::Sum, 0, 3);
  EXPECT_EQ(text, "shard 4x8 at [4, 0], partial 1/2 (sum), replica 0/3");
  text.clear();
  os << makeShard({}, {});
  EXPECT_EQ(text, "shard scalar at []");
}

//===----------------------------------------------------------------------===//
// getGroupExtents
//===----------------------------------------------------------------------===//

TEST_F(HSPMDLayoutTest, GroupExtents) {
  UnionAttr ratio =
      parseUnion("split(0) shares [3, 1]: {[0, 1]: [S1:2]}, {[2]: []}");
  ASSERT_TRUE(ratio);
  EXPECT_EQ(getGroupExtents(ratio, 64), (llvm::SmallVector<int64_t>{48, 16}));
  EXPECT_EQ(getGroupExtents(ratio, 4), (llvm::SmallVector<int64_t>{3, 1}));
  EXPECT_EQ(getGroupExtents(ratio, 0), (llvm::SmallVector<int64_t>{0, 0}));
  EXPECT_TRUE(failed(getGroupExtents(ratio, 62)));
  EXPECT_TRUE(failed(getGroupExtents(ratio, 3)));

  UnionAttr sizes =
      parseUnion("split(1) sizes [40, 24, 1]: {[0]: []}, {[1]: []}, {[2]: []}");
  ASSERT_TRUE(sizes);
  EXPECT_EQ(getGroupExtents(sizes, 65),
            (llvm::SmallVector<int64_t>{40, 24, 1}));
  EXPECT_TRUE(failed(getGroupExtents(sizes, 64)));
  EXPECT_TRUE(failed(getGroupExtents(sizes, 66)));

  UnionAttr equal = parseUnion("split(0): {[0]: []}, {[1]: []}, {[2]: []}");
  ASSERT_TRUE(equal);
  EXPECT_EQ(getGroupExtents(equal, 12), (llvm::SmallVector<int64_t>{4, 4, 4}));
  EXPECT_TRUE(failed(getGroupExtents(equal, 10)));

  // Not a split union.
  UnionAttr replicated = parseUnion("replicated: {[0]: []}, {[1]: []}");
  ASSERT_TRUE(replicated);
  EXPECT_TRUE(failed(getGroupExtents(replicated, 12)));
  UnionAttr partial =
      parseUnion("partial(sum) shares [1, 1]: {[0]: []}, {[1]: []}");
  ASSERT_TRUE(partial);
  EXPECT_TRUE(failed(getGroupExtents(partial, 12)));
}

//===----------------------------------------------------------------------===//
// verifyLayoutForShape
//===----------------------------------------------------------------------===//

TEST_F(HSPMDLayoutTest, VerifyLayoutForShapeAccepts) {
  expectFits(parseUnion("{[0, 1, 2, 3]: [S0:2, S1:2]}"),
             llvm::ArrayRef<int64_t>{8, 8});
  expectFits(parseUnion("split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, "
                        "{[4, 5]: [S1:2]}"),
             llvm::ArrayRef<int64_t>{64, 128});
  expectFits(parseUnion("split(0) sizes [40, 24]: {[0, 1, 2, 3]: [S0:2, "
                        "S1:2]}, {[4, 5]: [S0:2]}"),
             llvm::ArrayRef<int64_t>{64, 6});
  expectFits(parseUnion("{[0, 1]: [D:2]}"), llvm::ArrayRef<int64_t>{});
  expectFits(parseUnion("partial(sum): {[0, 1]: [P(sum):2]}, {[2]: []}"),
             llvm::ArrayRef<int64_t>{7});
  // Dynamic sizes skip the checks that need them.
  expectFits(parseUnion("{[0, 1, 2]: [S0:3]}"),
             llvm::ArrayRef<int64_t>{ShapedType::kDynamic, 5});
  expectFits(parseUnion("split(0) shares [3, 1]: {[0, 1, 2]: [S0:3]}, "
                        "{[4, 5]: [S0:2]}"),
             llvm::ArrayRef<int64_t>{ShapedType::kDynamic});
  // The group's share, not the whole dimension, must divide: 48 / 3 but
  // not 64 / 3.
  expectFits(parseUnion("split(0) shares [3, 1]: {[0, 1, 2]: [S0:3]}, "
                        "{[4]: []}"),
             llvm::ArrayRef<int64_t>{64});
  // A strategy set: every strategy fits.
  expectFits(parse("#hspmd.strategies<[\"tp\" = <{[0, 1]: [S1:2]}>, \"dp\" "
                   "= <{[0, 1]: [S0:2]}>], optimizer = \"dp\">"),
             llvm::ArrayRef<int64_t>{4, 6});
}

TEST_F(HSPMDLayoutTest, VerifyLayoutForShapeRejects) {
  // The union's split dimension is out of range.
  expectDoesNotFit(parseUnion("split(2): {[0]: []}, {[1]: []}"),
                   llvm::ArrayRef<int64_t>{4, 4},
                   "union splits dimension 2 but the tensor has rank 2");
  // A member's split dimension is out of range.
  expectDoesNotFit(parseUnion("{[0, 1]: [S2:2]}"),
                   llvm::ArrayRef<int64_t>{4, 4},
                   "axis S2:2 of union member 0 splits dimension 2 but the "
                   "tensor has rank 2");
  expectDoesNotFit(parseUnion("{[0, 1]: [S0:2]}"), llvm::ArrayRef<int64_t>{},
                   "splits dimension 0 but the tensor has rank 0");
  // A split that would leave a block empty.
  expectDoesNotFit(parseUnion("{[0, 1, 2]: [S0:3]}"),
                   llvm::ArrayRef<int64_t>{2, 8},
                   "dimension 0: a dimension of size 2 cannot be split 3 ways "
                   "(S0:3) without an empty block");
  expectDoesNotFit(parseUnion("split(0) shares [3, 1]: {[0, 1]: [S1:2]}, "
                              "{[2, 3, 4]: [S1:[2, 1, 2]]}"),
                   llvm::ArrayRef<int64_t>{8, 4},
                   "dimension 1: the block sizes of S1:[2, 1, 2] sum to 5 but "
                   "the dimension they cut has size 4");
  // A share that a member's explicit blocks do not cover: member 1 holds
  // 16 of the 64 rows.
  expectDoesNotFit(parseUnion("split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, "
                              "S1:2]}, {[4, 5, 6]: [S0:[6, 6, 6]]}"),
                   llvm::ArrayRef<int64_t>{64, 128},
                   "union member 1's share of dimension 0 (size 16): the "
                   "block sizes of S0:[6, 6, 6] sum to 18");
  expectDoesNotFit(parseUnion("split(0) shares [1, 3]: {[0, 1]: [S0:2]}, "
                              "{[2]: []}"),
                   llvm::ArrayRef<int64_t>{4},
                   "union member 0's share of dimension 0 (size 1): a "
                   "dimension of size 1 cannot be split 2 ways");
  // Sizes that do not cover the dimension.
  expectDoesNotFit(parseUnion("split(0) sizes [40, 20]: {[0]: []}, {[1]: []}"),
                   llvm::ArrayRef<int64_t>{64},
                   "sizes [40, 20] cover 60 of dimension 0 of size 64");
  // A ratio that does not divide.
  expectDoesNotFit(parseUnion("split(0) shares [3, 1]: {[0]: []}, {[1]: []}"),
                   llvm::ArrayRef<int64_t>{62},
                   "shares [3, 1] do not divide dimension 0 of size 62");
  // Equal pieces that do not divide.
  expectDoesNotFit(parseUnion("split(0): {[0]: []}, {[1]: []}, {[2]: []}"),
                   llvm::ArrayRef<int64_t>{10},
                   "dimension 0 of size 10 cannot be split equally among 3 "
                   "groups");
  // A dynamic dimension skips only its own checks.
  expectDoesNotFit(parseUnion("{[0, 1, 2]: [S0:3, S1:1]}"),
                   llvm::ArrayRef<int64_t>{2, ShapedType::kDynamic},
                   "dimension 0: a dimension of size 2 cannot be split 3 "
                   "ways");
  // A strategy set names the strategy that does not fit.
  expectDoesNotFit(parse("#hspmd.strategies<[\"tp\" = <{[0, 1]: [S1:2]}>, "
                         "\"dp\" = <{[0, 1]: [S0:2]}>], optimizer = \"dp\">"),
                   llvm::ArrayRef<int64_t>{1, 6},
                   "strategy 'dp': dimension 0: a dimension of size 1 cannot "
                   "be split 2 ways");
  // Anything else is not a layout.
  expectDoesNotFit(parse("#hspmd.states<[S0:2]>"), llvm::ArrayRef<int64_t>{4},
                   "expected a #hspmd.union or #hspmd.strategies layout");
}

//===----------------------------------------------------------------------===//
// areEquivalent / haveSameDevices
//===----------------------------------------------------------------------===//

TEST_F(HSPMDLayoutTest, EquivalentSpellings) {
  llvm::SmallVector<int64_t> shape = {64, 128};
  auto expectEquivalent = [&](UnionAttr a, UnionAttr b, bool expected) {
    ASSERT_TRUE(a && b);
    EXPECT_EQ(areEquivalent(a, b, shape), expected)
        << printAttr(a) << " vs " << printAttr(b);
    EXPECT_EQ(areEquivalent(b, a, shape), expected)
        << printAttr(b) << " vs " << printAttr(a);
  };
  UnionAttr s0 = parseUnion("{[0, 1]: [S0:2]}");
  expectEquivalent(s0, s0, true);
  // A degree-1 axis spells nothing, a degree-1 partial axis included.
  expectEquivalent(s0, parseUnion("{[0, 1]: [S0:2, D:1]}"), true);
  expectEquivalent(s0, parseUnion("{[0, 1]: [P(sum):1, S0:2, S1:1]}"), true);
  expectEquivalent(
      s0, parseUnion("partial(sum): {[0, 1]: [P(sum):1, S0:2, S1:1]}"), true);
  expectEquivalent(s0, parseUnion("split(1): {[0, 1]: [P(max):1, S0:2]}"),
                   true);
  // Shares 6:2 are 3:1, and so are sizes 48 and 16 of 64.
  UnionAttr ratio = parseUnion(
      "split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}");
  expectEquivalent(ratio,
                   parseUnion("split(0) shares [6, 2]: {[0, 1, 2, 3]: [S0:2, "
                              "S1:2]}, {[4, 5]: [S1:2]}"),
                   true);
  expectEquivalent(ratio,
                   parseUnion("split(0) sizes [48, 16]: {[0, 1, 2, 3]: [S0:2, "
                              "S1:2]}, {[4, 5]: [S1:2]}"),
                   true);
  expectEquivalent(ratio,
                   parseUnion("split(0) sizes [40, 24]: {[0, 1, 2, 3]: [S0:2, "
                              "S1:2]}, {[4, 5]: [S1:2]}"),
                   false);
  // Equal pieces are shares 1:1.
  expectEquivalent(parseUnion("split(1): {[0]: []}, {[1]: []}"),
                   parseUnion("split(1) shares [1, 1]: {[0]: []}, {[1]: []}"),
                   true);
  // One group per device replicated is a duplicate axis; which replica a
  // device is does not matter.
  expectEquivalent(parseUnion("replicated: {[0]: []}, {[1]: []}"),
                   parseUnion("{[0, 1]: [D:2]}"), true);
  expectEquivalent(parseUnion("{[0, 1]: [D:2]}"), parseUnion("{[1, 0]: [D:2]}"),
                   true);
  // One group per device partial is a partial axis.
  expectEquivalent(parseUnion("partial(sum): {[0]: []}, {[1]: []}"),
                   parseUnion("{[0, 1]: [P(sum):2]}"), true);
  expectEquivalent(parseUnion("partial(sum): {[0]: []}, {[1]: []}"),
                   parseUnion("partial(sum): {[0, 1]: [P(sum):2]}"), true);
  expectEquivalent(parseUnion("partial(max): {[0]: []}, {[1]: []}"),
                   parseUnion("{[0, 1]: [P(sum):2]}"), false);
  // Partial contributions are not replicas.
  expectEquivalent(parseUnion("partial(sum): {[0]: []}, {[1]: []}"),
                   parseUnion("replicated: {[0]: []}, {[1]: []}"), false);
  // The order of the axes changes which device holds which block.
  expectEquivalent(parseUnion("{[0, 1, 2, 3]: [S0:2, S1:2]}"),
                   parseUnion("{[0, 1, 2, 3]: [S1:2, S0:2]}"), false);
  expectEquivalent(parseUnion("{[0, 1, 2, 3]: [S0:2, D:2]}"),
                   parseUnion("{[0, 1, 2, 3]: [D:2, S0:2]}"), false);
  // So does the order of the devices.
  expectEquivalent(s0, parseUnion("{[1, 0]: [S0:2]}"), false);
  // Different device sets are never equivalent.
  expectEquivalent(s0, parseUnion("{[0, 2]: [S0:2]}"), false);
  expectEquivalent(parseUnion("{[0, 1]: [D:2]}"),
                   parseUnion("replicated: {[0, 1]: [D:2]}, {[2]: []}"), false);
}

TEST_F(HSPMDLayoutTest, SameDevices) {
  UnionAttr a = parseUnion(
      "split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}");
  UnionAttr b = parseUnion("{[5, 3, 1, 0, 2, 4]: [S1:6]}");
  UnionAttr c = parseUnion("{[0, 1, 2, 3, 4, 6]: [S1:6]}");
  UnionAttr d = parseUnion("{[0, 1, 2, 3, 4]: [S0:5]}");
  ASSERT_TRUE(a && b && c && d);
  EXPECT_TRUE(haveSameDevices(a, a));
  EXPECT_TRUE(haveSameDevices(a, b));
  EXPECT_TRUE(haveSameDevices(b, a));
  EXPECT_FALSE(haveSameDevices(a, c));
  EXPECT_FALSE(haveSameDevices(a, d));
  EXPECT_FALSE(haveSameDevices(d, a));
  EXPECT_FALSE(areEquivalent(a, b, {64, 128}));
}

//===----------------------------------------------------------------------===//
// Textual syntax
//===----------------------------------------------------------------------===//

TEST_F(HSPMDLayoutTest, PrintParseRoundTrip) {
  const char *texts[] = {
      "#hspmd.group<[4, 5, 6, 7]>",
      "#hspmd.states<[]>",
      "#hspmd.states<[S0:2, D:2]>",
      "#hspmd.states<[P(sum):2, S1:2]>",
      "#hspmd.states<[P(mean):1, D:3, S12:1]>",
      "#hspmd.union<{[0, 1, 2, 3]: [S0:2, S1:2]}>",
      "#hspmd.union<split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, "
      "{[4, 5]: [S1:2]}>",
      "#hspmd.union<split(1) sizes [40, 24]: {[0]: []}, {[1]: []}>",
      "#hspmd.union<split(2): {[0]: []}, {[1]: [D:1]}>",
      "#hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>",
      "#hspmd.union<partial(max): {[0, 1]: [P(max):2]}, {[2]: []}>",
      "#hspmd.union<partial(mean) shares [2, 2]: {[0]: []}, {[1]: []}>",
      "#hspmd.union<split(0): {[7]: [S1:1]}>",
      "#hspmd.strategies<[\"tp\" = #hspmd.union<{[0, 1, 2, 3]: [S1:4]}>, "
      "\"dp\" = #hspmd.union<{[0, 1, 2, 3]: [S0:4]}>], optimizer = \"dp\">",
      "#hspmd.device<0, \"h200\", speed = 1.0, mem = 141, node = 0>",
      "#hspmd.device<3, \"910b\", speed = 0.5, mem = 64, node = 1>",
      "#hspmd.cluster<[#hspmd.device<0, \"h200\", speed = 1.0, mem = 141, "
      "node = 0>, #hspmd.device<1, \"910b\", speed = 2.5, mem = 64, node = "
      "1>]>",
  };
  for (const char *text : texts) {
    Attribute attr = parse(text);
    ASSERT_TRUE(attr) << text;
    std::string printed = printAttr(attr);
    EXPECT_EQ(printed, text);
    EXPECT_EQ(parse(printed), attr) << printed;
  }
}

TEST_F(HSPMDLayoutTest, PrintNormalisesSpelling) {
  // Whitespace and the short form of a strategy's union are normalised.
  Attribute set = parse("#hspmd.strategies<[\"a\"=<{[0,1]:[S0:2]}>], "
                        "optimizer=\"a\">");
  ASSERT_TRUE(set);
  EXPECT_EQ(printAttr(set), "#hspmd.strategies<[\"a\" = #hspmd.union<{[0, "
                            "1]: [S0:2]}>], optimizer = \"a\">");
  // A union built in C++ prints what the parser reads back.
  UnionAttr built =
      UnionAttr::get(&ctx, UnionRelation::Split, 0, ReductionKind::Sum, {3, 1},
                     false, {group({0, 1, 2, 3}), group({4, 5})},
                     {states({Axis::split(0, 2), Axis::split(1, 2)}),
                      states({Axis::split(1, 2)})});
  EXPECT_EQ(printAttr(built), "#hspmd.union<split(0) shares [3, 1]: {[0, 1, "
                              "2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}>");
  EXPECT_EQ(parse(printAttr(built)), built);
}

TEST_F(HSPMDLayoutTest, ParserRejections) {
  EXPECT_CONTAINS(parseError("#hspmd.states<[X:2]>"), "unknown axis 'X'");
  EXPECT_CONTAINS(parseError("#hspmd.states<[P:2]>"),
                  "partial axis needs a reduction kind");
  EXPECT_CONTAINS(parseError("#hspmd.states<[P(prod):2]>"),
                  "unknown reduction kind 'prod'");
  EXPECT_CONTAINS(parseError("#hspmd.states<[S0:2, S0:2]>"),
                  "axis S0:2 repeats S0:2");
  EXPECT_CONTAINS(parseError("#hspmd.states<[S99999999999999999999:2]>"),
                  "split dimension in 'S99999999999999999999' is out of "
                  "range");
  EXPECT_CONTAINS(parseError("#hspmd.union<{[0]: []}, {[1]: []}>"),
                  "a union of 2 groups needs a relation");
  EXPECT_CONTAINS(parseError("#hspmd.union<partial(avg): {[0]: []}>"),
                  "unknown reduction kind 'avg'");
  EXPECT_CONTAINS(parseError("#hspmd.union<{[0, 0]: [D:2]}>"),
                  "device 0 appears twice in group [0, 0]");
  EXPECT_CONTAINS(parseError("#hspmd.strategies<[\"a\" = <{[0]: []}>], "
                             "optimizer = \"b\">"),
                  "optimizer strategy 'b' is not in the set");
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

TEST_F(HSPMDLayoutTest, DeviceGroupVerifier) {
  EXPECT_CONTAINS(rejection([&](auto emit) {
                    return DeviceGroupAttr::getChecked(emit, &ctx, {});
                  }),
                  "device group is empty");
  EXPECT_CONTAINS(rejection([&](auto emit) {
                    return DeviceGroupAttr::getChecked(emit, &ctx, {0, -2});
                  }),
                  "device id -2 is negative");
  EXPECT_CONTAINS(rejection([&](auto emit) {
                    return DeviceGroupAttr::getChecked(emit, &ctx, {1, 2, 1});
                  }),
                  "device 1 appears twice");
}

TEST_F(HSPMDLayoutTest, DistStatesVerifier) {
  auto reject = [&](llvm::ArrayRef<Axis> axes) {
    return rejection([&](auto emit) {
      return DistStatesAttr::getChecked(emit, &ctx, axes);
    });
  };
  EXPECT_CONTAINS(reject({Axis::split(0, 0)}),
                  "axis S0:0 has degree 0; expected at least 1");
  EXPECT_CONTAINS(reject({Axis::duplicate(-1)}), "has degree -1");
  // Split dimensions are in [0, INT32_MAX].
  EXPECT_CONTAINS(reject({Axis::split(-1, 2)}),
                  "split of dimension -1 is out of range");
  EXPECT_CONTAINS(reject({Axis::duplicate(2), Axis::split(2147483648, 1)}),
                  "split of dimension 2147483648 is out of range");
  EXPECT_CONTAINS(reject({Axis::split(INT64_MIN, 1)}),
                  "split of dimension -9223372036854775808 is out of range");
  EXPECT_CONTAINS(parseError("#hspmd.states<[S2147483648:2]>"),
                  "split of dimension 2147483648 is out of range");
  // Only split axes name a dimension.
  EXPECT_CONTAINS(reject({Axis{AxisKind::Duplicate, 3, 2, ReductionKind::Sum, {}}}),
                  "axis D:2 names dimension 3; only split axes name a "
                  "dimension");
  EXPECT_CONTAINS(reject({Axis::split(0, 2),
                          Axis{AxisKind::Partial, 0, 2, ReductionKind::Max, {}}}),
                  "axis P(max):2 names dimension 0; only split axes name a "
                  "dimension");
  EXPECT_CONTAINS(reject({Axis{AxisKind::Duplicate, -2, 1, ReductionKind::Sum, {}}}),
                  "axis D:1 names dimension -2");
  // The degrees' product, the group size, must fit in 64 bits.
  EXPECT_CONTAINS(reject({Axis::split(0, int64_t{1} << 32),
                          Axis::split(1, int64_t{1} << 31)}),
                  "the degrees of the axes overflow a 64-bit device count");
  EXPECT_CONTAINS(reject({Axis::duplicate(3), Axis::split(0, INT64_MAX)}),
                  "the degrees of the axes overflow a 64-bit device count");
  EXPECT_CONTAINS(
      parseError("#hspmd.states<[S0:7, S1:7905747460161236407]>"),
      "the degrees of the axes overflow a 64-bit device count");
  EXPECT_CONTAINS(parseError("#hspmd.union<{[0]: [S0:7, "
                             "S1:7905747460161236407]}>"),
                  "the degrees of the axes overflow a 64-bit device count");
  EXPECT_CONTAINS(
      reject({Axis::split(1, 2), Axis::duplicate(2), Axis::split(1, 3)}),
      "axis S1:3 repeats S1:2");
  EXPECT_CONTAINS(reject({Axis::duplicate(2), Axis::duplicate(1)}),
                  "axis D:1 repeats D:2");
  EXPECT_CONTAINS(reject({Axis::partial(2, ReductionKind::Sum),
                          Axis::partial(2, ReductionKind::Max)}),
                  "axis P(max):2 repeats P(sum):2");
  auto accept = [&](llvm::ArrayRef<Axis> axes) {
    return DistStatesAttr::getChecked(
        [&]() { return emitError(UnknownLoc::get(&ctx)); }, &ctx, axes);
  };
  // Different split dimensions are different axes.
  EXPECT_TRUE(accept({Axis::split(0, 2), Axis::split(1, 2), Axis::duplicate(1),
                      Axis::partial(1, ReductionKind::Min)}));
  // The bounds themselves are fine.
  DistStatesAttr largestDim = accept({Axis::split(2147483647, 2)});
  ASSERT_TRUE(largestDim);
  EXPECT_EQ(largestDim.getMinRank(), int64_t{2147483648});
  DistStatesAttr largestCount =
      accept({Axis::split(0, 3037000499), Axis::split(1, 3037000499)});
  ASSERT_TRUE(largestCount);
  EXPECT_EQ(largestCount.getNumDevices(), int64_t{9223372030926249001});
  DistStatesAttr maxCount =
      accept({Axis::duplicate(1), Axis::partial(INT64_MAX, ReductionKind::Sum)});
  ASSERT_TRUE(maxCount);
  EXPECT_EQ(maxCount.getNumDevices(), INT64_MAX);
}

TEST_F(HSPMDLayoutTest, UnionVerifier) {
  DeviceGroupAttr g01 = group({0, 1}), g12 = group({1, 2}), g2 = group({2}),
                  g3 = group({3}), g23 = group({2, 3}), g4 = group({4});
  DistStatesAttr s2 = states({Axis::split(0, 2)}), none = states({}),
                 pSum2 = states({Axis::partial(2, ReductionKind::Sum)}),
                 pSum1 = states({Axis::partial(1, ReductionKind::Sum)}),
                 pMax1 = states({Axis::partial(1, ReductionKind::Max)}),
                 sSum2 = states({Axis::split(1, 2),
                                 Axis::partial(1, ReductionKind::Sum)});
  auto reject = [&](UnionRelation relation, int64_t splitDim,
                    ReductionKind reduction, llvm::ArrayRef<int64_t> shares,
                    bool explicitSizes, llvm::ArrayRef<DeviceGroupAttr> groups,
                    llvm::ArrayRef<DistStatesAttr> memberStates) {
    return rejection([&](auto emit) {
      return UnionAttr::getChecked(emit, &ctx, relation, splitDim, reduction,
                                   shares, explicitSizes, groups, memberStates);
    });
  };
  auto split = UnionRelation::Split, replicated = UnionRelation::Replicated,
       partial = UnionRelation::Partial;
  auto sum = ReductionKind::Sum, mean = ReductionKind::Mean,
       max = ReductionKind::Max;

  EXPECT_CONTAINS(reject(split, 0, sum, {}, false, {}, {}),
                  "union has no member");
  EXPECT_CONTAINS(reject(split, 0, sum, {}, false, {g01, g2}, {s2}),
                  "union has 2 groups but 1 states");
  EXPECT_CONTAINS(reject(split, 0, sum, {}, false, {g01, g12}, {s2, s2}),
                  "union members 0 and 1 overlap: groups [0, 1] and [1, 2]");
  EXPECT_CONTAINS(reject(split, 0, sum, {}, false, {g01, g2}, {s2, s2}),
                  "union member 1 has 1 devices but its states span 2");
  // The union's split dimension is in [0, INT32_MAX].
  EXPECT_CONTAINS(reject(split, -1, sum, {}, false, {g01, g2}, {s2, none}),
                  "split of dimension -1 is out of range");
  EXPECT_CONTAINS(
      reject(split, 2147483648, sum, {}, false, {g01, g2}, {s2, none}),
      "split of dimension 2147483648 is out of range");
  EXPECT_CONTAINS(parseError("#hspmd.union<split(2147483648): {[0]: []}, "
                             "{[1]: []}>"),
                  "split of dimension 2147483648 is out of range");
  EXPECT_CONTAINS(parseError("#hspmd.union<split(-3): {[0]: []}, {[1]: []}>"),
                  "split of dimension -3 is out of range");
  EXPECT_CONTAINS(
      reject(replicated, -1, sum, {1, 1}, false, {g01, g2}, {s2, none}),
      "a replicated union takes no shares");
  EXPECT_CONTAINS(reject(partial, -1, sum, {1, 1}, true, {g01, g2}, {s2, none}),
                  "explicit sizes need a split relation");
  EXPECT_CONTAINS(
      reject(split, 0, sum, {3, 1, 1}, false, {g01, g2}, {s2, none}),
      "union has 2 groups but 3 shares");
  EXPECT_CONTAINS(reject(split, 0, sum, {3, 0}, false, {g01, g2}, {s2, none}),
                  "share 0 is not positive");
  EXPECT_CONTAINS(reject(split, 0, sum, {}, true, {g01, g2}, {s2, none}),
                  "union has 2 groups but 0 shares");
  // The total of the shares (or sizes) must fit in 64 bits.
  EXPECT_CONTAINS(
      reject(split, 0, sum, {INT64_MAX, 1}, false, {g01, g2}, {s2, none}),
      "shares [9223372036854775807, 1] overflow a 64-bit total");
  EXPECT_CONTAINS(
      reject(split, 0, sum, {INT64_MAX / 2 + 1, INT64_MAX / 2 + 1}, true,
             {g01, g2}, {s2, none}),
      "shares [4611686018427387904, 4611686018427387904] overflow a 64-bit "
      "total");
  EXPECT_CONTAINS(
      reject(partial, -1, sum, {1, INT64_MAX, 2}, false, {g01, g2, g3},
             {s2, none, none}),
      "shares [1, 9223372036854775807, 2] overflow a 64-bit total");
  EXPECT_CONTAINS(parseError("#hspmd.union<split(0) shares "
                             "[9223372036854775807, 1]: {[0]: []}, {[1]: []}>"),
                  "shares [9223372036854775807, 1] overflow a 64-bit total");
  EXPECT_CONTAINS(parseError("#hspmd.union<split(0) sizes "
                             "[1, 9223372036854775807]: {[0]: []}, {[1]: []}>"),
                  "shares [1, 9223372036854775807] overflow a 64-bit total");
  // A non-positive share is reported before the total.
  EXPECT_CONTAINS(
      reject(split, 0, sum, {INT64_MAX, -1}, false, {g01, g2}, {s2, none}),
      "share -1 is not positive");

  // A replicated union of several groups holds complete values: no member
  // is partial, not even with degree 1.
  const char *replicatedPartial =
      "; replicated groups hold complete values, use partial(<kind>) to "
      "combine contributions across groups";
  EXPECT_CONTAINS(
      reject(replicated, -1, sum, {}, false, {g01, g2}, {pSum2, none}),
      std::string("union member 0 of a replicated union is partial (sum)") +
          replicatedPartial);
  EXPECT_CONTAINS(
      reject(replicated, -1, sum, {}, false, {g2, g3, g01}, {none, pMax1, s2}),
      std::string("union member 1 of a replicated union is partial (max)") +
          replicatedPartial);
  EXPECT_CONTAINS(parseError("#hspmd.union<replicated: {[0, 1]: [D:2]}, "
                             "{[2, 3]: [P(mean):2]}>"),
                  "union member 1 of a replicated union is partial (mean)");
  // Contributions across groups are what partial(<kind>) is for.
  EXPECT_TRUE(UnionAttr::getChecked(
      [&]() { return emitError(UnknownLoc::get(&ctx)); }, &ctx, partial, -1,
      sum, {}, false, {g01, g2}, {pSum2, none}));
  // A single member is the whole layout (what a union without a relation
  // stores), so it may be partial.
  EXPECT_TRUE(UnionAttr::getChecked(
      [&]() { return emitError(UnknownLoc::get(&ctx)); }, &ctx, replicated,
      -1, sum, {}, false, {g01}, {pSum2}));
  EXPECT_TRUE(UnionAttr::get(&ctx, g2, pMax1));

  // The members of a split union hold the same kind of pending reduction,
  // or none; the first member that differs from member 0 is named.
  EXPECT_CONTAINS(reject(split, 0, sum, {}, false, {g01, g2}, {pSum2, none}),
                  "union members 0 and 1 of a split union disagree on the "
                  "pending reduction (sum vs none)");
  EXPECT_CONTAINS(reject(split, 0, sum, {}, false, {g2, g01}, {none, pSum2}),
                  "union members 0 and 1 of a split union disagree on the "
                  "pending reduction (none vs sum)");
  EXPECT_CONTAINS(
      reject(split, 1, sum, {}, false, {g01, g23, g4}, {pSum2, pSum2, pMax1}),
      "union members 0 and 2 of a split union disagree on the pending "
      "reduction (sum vs max)");
  EXPECT_CONTAINS(reject(split, 0, sum, {1, 1}, true, {g2, g3}, {pMax1, none}),
                  "(max vs none)");
  EXPECT_CONTAINS(parseError("#hspmd.union<split(0): {[0, 1]: [P(min):2]}, "
                             "{[2, 3]: [P(mean):2]}>"),
                  "union members 0 and 1 of a split union disagree on the "
                  "pending reduction (min vs mean)");
  // Degrees may differ; so may the union's (unused) reduction.
  EXPECT_TRUE(UnionAttr::getChecked(
      [&]() { return emitError(UnknownLoc::get(&ctx)); }, &ctx, split, 0, max,
      {}, false, {g01, g23, g4}, {pSum2, sSum2, pSum1}));
  EXPECT_CONTAINS(reject(partial, -1, max, {}, false, {g01, g2}, {pSum2, none}),
                  "union member 0 is partial with sum but the union is "
                  "partial with max");
  EXPECT_CONTAINS(
      reject(partial, -1, mean, {3, 1}, false, {g2, g3}, {none, none}),
      "a mean-partial across groups with unequal shares [3, 1] "
      "averages averages");
  // Equal shares are a fine mean.
  EXPECT_TRUE(UnionAttr::getChecked(
      [&]() { return emitError(UnknownLoc::get(&ctx)); }, &ctx, partial, -1,
      mean, {2, 2}, false, {g2, g3}, {none, none}));
}

TEST_F(HSPMDLayoutTest, StrategySetAndClusterVerifiers) {
  UnionAttr tp = parseUnion("{[0, 1]: [S1:2]}");
  ASSERT_TRUE(tp);
  StringAttr a = StringAttr::get(&ctx, "a"), empty = StringAttr::get(&ctx, "");
  EXPECT_CONTAINS(rejection([&](auto emit) {
                    return StrategySetAttr::getChecked(emit, &ctx, {}, {}, 0);
                  }),
                  "strategy set is empty");
  EXPECT_CONTAINS(
      rejection([&](auto emit) {
        return StrategySetAttr::getChecked(emit, &ctx, {a, a}, {tp, tp}, 0);
      }),
      "strategy 'a' is named twice");
  EXPECT_CONTAINS(rejection([&](auto emit) {
                    return StrategySetAttr::getChecked(emit, &ctx, {empty},
                                                       {tp}, 0);
                  }),
                  "strategy 0 has an empty name");
  EXPECT_CONTAINS(rejection([&](auto emit) {
                    return StrategySetAttr::getChecked(emit, &ctx, {a}, {tp},
                                                       1);
                  }),
                  "optimizer strategy index 1 is out of range for 1");

  auto device = [&](int64_t id) {
    return DeviceAttr::get(&ctx, id, llvm::StringRef("cpu"), llvm::APFloat(1.0),
                           int64_t{8}, int64_t{0});
  };
  EXPECT_CONTAINS(rejection([&](auto emit) {
                    return ClusterAttr::getChecked(emit, &ctx, {});
                  }),
                  "cluster has no device");
  EXPECT_CONTAINS(rejection([&](auto emit) {
                    return ClusterAttr::getChecked(
                        emit, &ctx, {device(0), device(1), device(0)});
                  }),
                  "device id 0 appears twice in the cluster");
  auto rejectDevice = [&](int64_t id, llvm::StringRef kind, double speed,
                          int64_t memory, int64_t node) {
    return rejection([&](auto emit) {
      return DeviceAttr::getChecked(emit, &ctx, id, kind, llvm::APFloat(speed),
                                    memory, node);
    });
  };
  EXPECT_CONTAINS(rejectDevice(0, "cpu", 0.0, 8, 0), "device 0 has speed 0");
  EXPECT_CONTAINS(rejectDevice(0, "cpu", -1.0, 8, 0), "device 0 has speed -1");
  EXPECT_CONTAINS(rejectDevice(0, "", 1.0, 8, 0), "device 0 has an empty kind");
  EXPECT_CONTAINS(rejectDevice(2, "cpu", 1.0, 0, 0),
                  "device 2 has memory 0 GiB");
  EXPECT_CONTAINS(rejectDevice(-3, "cpu", 1.0, 8, 0),
                  "device id -3 is negative");
  EXPECT_CONTAINS(rejectDevice(4, "cpu", 1.0, 8, -1),
                  "device 4 is on negative node -1");
}

} // namespace

// Collective sub-groups: devices that differ only in the digits of the
// collective's mesh axes, each in rank order (mixed radix over those axes).
TEST(HSPMDCollectiveTest, SubgroupsOfOneMiddleAxis) {
  // Mesh [2, 3, 2]: index = 6a + 2b + c; over axis 1 (b).
  auto groups = loom::hspmd::getCollectiveSubgroups({2, 3, 2}, {1});
  std::vector<std::vector<int64_t>> got;
  for (auto &group : groups)
    got.emplace_back(group.begin(), group.end());
  EXPECT_EQ(got, (std::vector<std::vector<int64_t>>{
                     {0, 2, 4}, {1, 3, 5}, {6, 8, 10}, {7, 9, 11}}));
}

TEST(HSPMDCollectiveTest, SubgroupsOfTwoOuterAxes) {
  // Over axes 0 and 2 (a, c): one sub-group per b, ranked by 2a + c.
  auto groups = loom::hspmd::getCollectiveSubgroups({2, 3, 2}, {0, 2});
  std::vector<std::vector<int64_t>> got;
  for (auto &group : groups)
    got.emplace_back(group.begin(), group.end());
  EXPECT_EQ(got, (std::vector<std::vector<int64_t>>{
                     {0, 1, 6, 7}, {2, 3, 8, 9}, {4, 5, 10, 11}}));
}

TEST(HSPMDCollectiveTest, SubgroupsPartitionTheGroup) {
  // Every device is in exactly one sub-group, and all sub-groups have the
  // product of the axes' sizes as their size.
  const std::vector<int64_t> mesh = {3, 2, 4, 2};
  for (unsigned mask = 1; mask < 16; ++mask) {
    llvm::SmallVector<int64_t> axes;
    int64_t size = 1;
    for (int64_t axis = 0; axis < 4; ++axis)
      if (mask & (1u << axis)) {
        axes.push_back(axis);
        size *= mesh[axis];
      }
    auto groups = loom::hspmd::getCollectiveSubgroups(mesh, axes);
    std::vector<int> seen(48, 0);
    for (auto &group : groups) {
      EXPECT_EQ(static_cast<int64_t>(group.size()), size);
      for (int64_t index : group)
        ++seen[index];
    }
    for (int count : seen)
      EXPECT_EQ(count, 1) << "mask " << mask;
  }
}

// areEquivalent compares one-group layouts on their common mesh, without
// visiting devices; it must agree with the definition (every device holds
// the same shard) on every pair of layouts of 8 devices over a 8x8x4 tensor
// with up to three axes of distinct kinds.
TEST_F(HSPMDLayoutTest, EquivalenceOnTheMeshMatchesEveryDevice) {
  const std::vector<std::string> kinds = {"S0", "S1", "S2", "D", "P(sum)",
                                          "P(max)"};
  std::vector<UnionAttr> layouts;
  // Degrees whose product is 8, as 1 to 3 axes, with distinct kinds.
  const std::vector<std::vector<int>> degreeLists = {
      {8}, {2, 4}, {4, 2}, {2, 2, 2}, {1, 8}, {8, 1}};
  for (const auto &degrees : degreeLists) {
    size_t n = degrees.size();
    std::vector<size_t> pick(n, 0);
    while (true) {
      std::set<std::string> used;
      bool distinct = true, onePartial = true;
      int partials = 0;
      for (size_t i = 0; i < n; ++i) {
        std::string kind = kinds[pick[i]];
        std::string base = kind[0] == 'P' ? "P" : kind;
        distinct &= used.insert(base).second;
        partials += kind[0] == 'P';
      }
      onePartial = partials <= 1;
      if (distinct && onePartial) {
        std::string body = "{[0, 1, 2, 3, 4, 5, 6, 7]: [";
        for (size_t i = 0; i < n; ++i)
          body += (i ? ", " : "") + kinds[pick[i]] + ":" +
                  std::to_string(degrees[i]);
        body += "]}";
        if (UnionAttr layout = dyn_cast_or_null<UnionAttr>(
                parseAttribute("#hspmd.union<" + body + ">", &ctx)))
          layouts.push_back(layout);
      }
      size_t i = 0;
      while (i < n && ++pick[i] == kinds.size())
        pick[i++] = 0;
      if (i == n)
        break;
    }
  }
  // Only layouts that fit the shape (a layout that does not is no layout of
  // it: equivalence is not defined there).
  const std::vector<int64_t> shape = {8, 8, 4};
  llvm::erase_if(layouts, [&](UnionAttr layout) {
    return !getShard(layout, shape, 0);
  });
  ASSERT_GT(layouts.size(), 100u);
  int compared = 0, equivalent = 0;
  for (UnionAttr a : layouts)
    for (UnionAttr b : layouts) {
      bool byDevice = true;
      for (int64_t device = 0; device < 8 && byDevice; ++device) {
        std::optional<Shard> sa = getShard(a, shape, device);
        std::optional<Shard> sb = getShard(b, shape, device);
        byDevice = sa && sb && sa->offsets == sb->offsets &&
                   sa->sizes == sb->sizes &&
                   sa->partialIndex == sb->partialIndex &&
                   sa->numPartials == sb->numPartials &&
                   sa->reduction == sb->reduction;
      }
      EXPECT_EQ(areEquivalent(a, b, shape), byDevice)
          << printAttr(a) << " vs " << printAttr(b);
      ++compared;
      equivalent += byDevice;
    }
  EXPECT_GT(equivalent, static_cast<int>(layouts.size()));
  EXPECT_GT(compared, 10000);
}
