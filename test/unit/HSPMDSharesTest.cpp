//===- HSPMDSharesTest.cpp - Share selection for asymmetric sharding -----===//

#include "dialects/hspmd/IR/HSPMDShares.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

using namespace mlir;
using namespace loom::hspmd;

namespace {

SmallVector<int64_t> shares(ArrayRef<GroupCapacity> groups, int64_t total,
                            int64_t alignment) {
  std::string why;
  FailureOr<SmallVector<int64_t>> result =
      selectShares(groups, total, alignment, why);
  EXPECT_TRUE(succeeded(result)) << why;
  return succeeded(result) ? *result : SmallVector<int64_t>();
}

std::string error(ArrayRef<GroupCapacity> groups, int64_t total,
                  int64_t alignment) {
  std::string why;
  EXPECT_TRUE(failed(selectShares(groups, total, alignment, why)));
  return why;
}

constexpr int64_t kLots = int64_t{1} << 40;

TEST(HSPMDSharesTest, ProportionalToSpeed) {
  // A group 3x faster takes 3/4 of the batch.
  EXPECT_EQ(shares({{3.0, kLots}, {1.0, kLots}}, 64, 1),
            (SmallVector<int64_t>{48, 16}));
  // 2:1:1 over three groups.
  EXPECT_EQ(shares({{2.0, kLots}, {1.0, kLots}, {1.0, kLots}}, 64, 4),
            (SmallVector<int64_t>{32, 16, 16}));
}

TEST(HSPMDSharesTest, CapacityHoldsAGroupAndTheRestGoesByspeed) {
  // The fast group would take 75 of 100 but holds 40: the other two share
  // the remaining 60 by speed (2:1).
  EXPECT_EQ(shares({{6.0, 40}, {2.0, kLots}, {1.0, kLots}}, 100, 1),
            (SmallVector<int64_t>{40, 40, 20}));
}

TEST(HSPMDSharesTest, RoundsToTheAlignmentAndKeepsTheTotal) {
  // 5:3 of 64 in blocks of 8: 40 and 24 exactly; 1:1:1 of 96 in blocks of
  // 16: two each, the largest remainders (all equal) to the earlier.
  EXPECT_EQ(shares({{5.0, kLots}, {3.0, kLots}}, 64, 8),
            (SmallVector<int64_t>{40, 24}));
  EXPECT_EQ(shares({{1.0, kLots}, {1.0, kLots}, {1.0, kLots}}, 96, 16),
            (SmallVector<int64_t>{32, 32, 32}));
  EXPECT_EQ(shares({{1.0, kLots}, {1.0, kLots}, {1.0, kLots}}, 64, 16),
            (SmallVector<int64_t>{32, 16, 16}));
}

TEST(HSPMDSharesTest, EveryGroupGetsAtLeastOneUnit) {
  // A very slow group still takes one aligned unit.
  EXPECT_EQ(shares({{1000.0, kLots}, {1.0, kLots}}, 32, 8),
            (SmallVector<int64_t>{24, 8}));
}

TEST(HSPMDSharesTest, BadInputIsReported) {
  EXPECT_NE(error({}, 8, 1).find("no groups"), std::string::npos);
  EXPECT_NE(
      error({{1.0, kLots}}, 10, 4).find("not a multiple of the alignment"),
      std::string::npos);
  EXPECT_NE(error({{0.0, kLots}}, 8, 1).find("speeds must be positive"),
            std::string::npos);
  EXPECT_NE(error({{1.0, 10}, {1.0, 10}}, 32, 1)
                .find("the groups hold at most 20 of the 32 units"),
            std::string::npos);
  EXPECT_NE(error({{1.0, 4}, {1.0, kLots}}, 32, 8)
                .find("less than one aligned unit of 8"),
            std::string::npos);
  EXPECT_NE(error({{1.0, kLots}, {1.0, kLots}, {1.0, kLots}}, 16, 8)
                .find("every group needs at least one"),
            std::string::npos);
}

/// On random inputs: the shares are aligned, within capacity, at least one
/// unit, sum to the total, and no unit can move from a group to another
/// with room and make the slower of the two finish earlier (the rounded
/// water-filling is within one aligned unit of balanced).
TEST(HSPMDSharesTest, RandomInputsAreBalancedWithinOneUnit) {
  std::mt19937_64 rng(7);
  int64_t checked = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    int64_t n = 1 + rng() % 5, alignment = 1 + rng() % 8;
    int64_t units = n + rng() % 200;
    SmallVector<GroupCapacity> groups;
    for (int64_t i = 0; i < n; ++i)
      groups.push_back({0.25 + (rng() % 100) / 10.0,
                        static_cast<int64_t>((1 + rng() % units) * alignment +
                                             rng() % alignment)});
    int64_t room = 0;
    for (const GroupCapacity &g : groups)
      room += g.capacity / alignment;
    std::string why;
    FailureOr<SmallVector<int64_t>> result =
        selectShares(groups, units * alignment, alignment, why);
    if (room < units) {
      EXPECT_TRUE(failed(result));
      continue;
    }
    ASSERT_TRUE(succeeded(result)) << why;
    ++checked;
    EXPECT_EQ(std::accumulate(result->begin(), result->end(), int64_t{0}),
              units * alignment);
    for (int64_t i = 0; i < n; ++i) {
      int64_t s = (*result)[i];
      EXPECT_EQ(s % alignment, 0);
      EXPECT_GE(s, alignment);
      EXPECT_LE(s, groups[i].capacity);
    }
    // Balance: moving one aligned unit from i to j (j has room, i keeps
    // one) never lowers max(time_i, time_j) by more than one unit's time.
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        if (i == j || (*result)[i] <= alignment ||
            (*result)[j] + alignment > groups[j].capacity)
          continue;
        double before = std::max((*result)[i] / groups[i].speed,
                                 (*result)[j] / groups[j].speed);
        double after = std::max(((*result)[i] - alignment) / groups[i].speed,
                                ((*result)[j] + alignment) / groups[j].speed);
        double unit = alignment / std::min(groups[i].speed, groups[j].speed);
        EXPECT_GE(after, before - unit - 1e-9)
            << "trial " << trial << ": moving a unit from " << i << " to " << j
            << " helps";
      }
  }
  EXPECT_GT(checked, 1000);
}

TEST(HSPMDSharesTest, CapacityFromTheCluster) {
  MLIRContext context;
  context.loadDialect<HSPMDDialect>();
  auto device = [&](int64_t id, double speed, int64_t gib) {
    return DeviceAttr::get(&context, id, "gpu", llvm::APFloat(speed), gib, 0);
  };
  auto cluster = ClusterAttr::get(
      &context, {device(0, 1.0, 80), device(1, 1.0, 40), device(2, 0.5, 64)});
  std::string why;
  FailureOr<GroupCapacity> fast =
      getGroupCapacity(cluster, DeviceGroupAttr::get(&context, {0, 1}),
                       int64_t{1} << 30, int64_t{8} << 30, why);
  ASSERT_TRUE(succeeded(fast)) << why;
  // Speeds add up; the 40 GiB device (32 free) bounds both: 64 GiB of units.
  EXPECT_DOUBLE_EQ(fast->speed, 2.0);
  EXPECT_EQ(fast->capacity, 64);
  EXPECT_TRUE(failed(getGroupCapacity(
      cluster, DeviceGroupAttr::get(&context, {3}), 1, 0, why)));
  EXPECT_NE(why.find("device 3 is not in the cluster"), std::string::npos);
  EXPECT_TRUE(
      failed(getGroupCapacity(cluster, DeviceGroupAttr::get(&context, {2}), 1,
                              int64_t{65} << 30, why)));
  EXPECT_NE(why.find("less than the"), std::string::npos);
}

} // namespace
