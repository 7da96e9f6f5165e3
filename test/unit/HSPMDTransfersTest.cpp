//===- HSPMDTransfersTest.cpp - Send/recv plans between layouts ----------===//

#include "dialects/hspmd/IR/HSPMDTransfers.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

using namespace mlir;
using namespace loom::hspmd;

namespace {

class HSPMDTransfersTest : public ::testing::Test {
protected:
  HSPMDTransfersTest() { context.loadDialect<HSPMDDialect>(); }

  UnionAttr layout(StringRef text) {
    auto attr = dyn_cast_or_null<UnionAttr>(parseAttribute(text, &context));
    EXPECT_TRUE(attr) << text.str();
    return attr;
  }

  /// Plans `from` -> `to` for `shape` (f32) and checks it by moving the
  /// elements of a global tensor 0, 1, 2, ...: every target device must
  /// end with exactly its block, built from what it held and what it
  /// received; and what it received must be exactly what it lacked.
  TransferPlan checked(StringRef fromText, StringRef toText,
                       ArrayRef<int64_t> shape) {
    UnionAttr from = layout(fromText), to = layout(toText);
    std::string why;
    FailureOr<TransferPlan> plan = planTransfers(from, to, shape, 4, why);
    EXPECT_TRUE(succeeded(plan)) << why;
    if (failed(plan))
      return {};
    int64_t rank = shape.size();
    auto linear = [&](ArrayRef<int64_t> index) {
      int64_t value = 0;
      for (int64_t d = 0; d < rank; ++d)
        value = value * shape[d] + index[d];
      return value;
    };
    // Every element of a box, by its global index.
    auto forEach = [&](ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
                       llvm::function_ref<void(int64_t)> fn) {
      SmallVector<int64_t> index(offsets);
      int64_t count = 1;
      for (int64_t size : sizes)
        count *= size;
      for (int64_t n = 0; n < count; ++n) {
        fn(linear(index));
        for (int64_t d = rank - 1; d >= 0; --d) {
          if (++index[d] < offsets[d] + sizes[d])
            break;
          index[d] = offsets[d];
        }
      }
    };
    for (int64_t device : to.getAllDevices()) {
      Shard want = *getShard(to, shape, device);
      std::map<int64_t, int> have; // element -> times present
      int64_t lacked = 0;
      std::set<int64_t> wanted;
      forEach(want.offsets, want.sizes, [&](int64_t e) { wanted.insert(e); });
      std::set<int64_t> held;
      if (std::optional<Shard> own = getShard(from, shape, device))
        forEach(own->offsets, own->sizes, [&](int64_t e) {
          if (wanted.count(e))
            held.insert(e);
        });
      for (int64_t e : wanted)
        lacked += held.count(e) ? 0 : 1;
      int64_t receivedElements = 0;
      for (const Transfer &t : plan->transfers) {
        if (t.destination != device)
          continue;
        Shard source = *getShard(from, shape, t.source);
        forEach(t.offsets, t.sizes, [&](int64_t e) {
          EXPECT_TRUE(wanted.count(e)) << "device " << device
                                       << " receives an element it does "
                                          "not need";
          EXPECT_FALSE(held.count(e))
              << "device " << device << " receives an element it holds";
          ++have[e];
          ++receivedElements;
        });
        // The sender holds what it sends.
        for (int64_t d = 0; d < rank; ++d) {
          EXPECT_GE(t.offsets[d], source.offsets[d]);
          EXPECT_LE(t.offsets[d] + t.sizes[d],
                    source.offsets[d] + source.sizes[d]);
        }
      }
      for (int64_t e : held)
        ++have[e];
      for (int64_t e : wanted)
        EXPECT_EQ(have[e], 1) << "device " << device << " element " << e;
      EXPECT_EQ(receivedElements, lacked) << "device " << device;
      EXPECT_EQ(plan->received.count(device) ? plan->received[device] : 0,
                lacked * 4);
    }
    return *plan;
  }

  MLIRContext context;
};

TEST_F(HSPMDTransfersTest, TensorParallel2To4OnMoreDevices) {
  // [8, 16] columns split over {0, 1} -> over {0, 1, 2, 3}: device 0 keeps
  // its first quarter; 1, 2 and 3 each lack a [8, 4] block (128 bytes).
  TransferPlan plan = checked("#hspmd.union<{[0, 1]: [S1:2]}>",
                              "#hspmd.union<{[0, 1, 2, 3]: [S1:4]}>", {8, 16});
  EXPECT_EQ(plan.totalBytes, 3 * 8 * 4 * 4);
  ASSERT_EQ(plan.transfers.size(), 3u);
  EXPECT_EQ(plan.transfers[0].source, 0);
  EXPECT_EQ(plan.transfers[0].destination, 1);
  EXPECT_EQ(plan.transfers[1].source, 1);
  EXPECT_EQ(plan.transfers[2].source, 1);
  EXPECT_EQ(plan.transfers[2].sizes, (SmallVector<int64_t>{8, 4}));
}

TEST_F(HSPMDTransfersTest, ReplicasShareTheSending) {
  // Replicated on {0, 1}, split over {2, 3, 4, 5}: four blocks, each sender
  // sends two.
  TransferPlan plan = checked("#hspmd.union<{[0, 1]: [D:2]}>",
                              "#hspmd.union<{[2, 3, 4, 5]: [S0:4]}>", {8, 4});
  EXPECT_EQ(plan.sent[0], plan.sent[1]);
  EXPECT_EQ(plan.totalBytes, 8 * 4 * 4);
}

TEST_F(HSPMDTransfersTest, UnequalSharesAcrossGroups) {
  // A 3:1 batch split over a group of 3 and one of 1 -> an even split over
  // 4: the refinement cuts at the union of both sets of boundaries.
  checked("#hspmd.union<split(0) shares [3, 1]: {[0, 1, 2]: [S0:3]}, "
          "{[3]: [D:1]}>",
          "#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>", {12, 5});
  checked("#hspmd.union<{[0, 1, 2, 3]: [S1:2, S0:2]}>",
          "#hspmd.union<split(1) sizes [5, 3]: {[4, 5]: [S0:2]}, "
          "{[0]: [D:1]}>",
          {6, 8});
}

TEST_F(HSPMDTransfersTest, NothingMovesWhenEveryoneHoldsWhatItNeeds) {
  TransferPlan plan = checked("#hspmd.union<{[0, 1]: [D:2]}>",
                              "#hspmd.union<{[0, 1]: [S0:2]}>", {4, 4});
  EXPECT_TRUE(plan.transfers.empty());
  EXPECT_EQ(plan.totalBytes, 0);
}

TEST_F(HSPMDTransfersTest, PartialSumsAndBadShapesAreRefused) {
  std::string why;
  EXPECT_TRUE(
      failed(planTransfers(layout("#hspmd.union<{[0, 1]: [P(sum):2]}>"),
                           layout("#hspmd.union<{[2]: [D:1]}>"), {4}, 4, why)));
  EXPECT_NE(why.find("partial sums on device 0"), std::string::npos) << why;
  EXPECT_TRUE(
      failed(planTransfers(layout("#hspmd.union<{[0, 1]: [S0:2]}>"),
                           layout("#hspmd.union<{[2]: [D:1]}>"), {5}, 4, why)));
  EXPECT_NE(why.find("does not fit the shape"), std::string::npos) << why;
  EXPECT_TRUE(failed(planTransfers(layout("#hspmd.union<{[0, 1]: [S0:2]}>"),
                                   layout("#hspmd.union<{[2, 3]: [S0:2]}>"),
                                   {64}, 4, why, /*maxCells=*/1)));
  EXPECT_NE(why.find("more than 1 cells"), std::string::npos) << why;
}

/// Random pairs of single-group layouts on random device sets.
TEST_F(HSPMDTransfersTest, RandomLayoutsMoveExactlyWhatIsLacking) {
  std::mt19937_64 rng(11);
  const char *states[] = {
      "[S0:2]",      "[S1:2]", "[D:2]",  "[S0:2, S1:2]", "[S1:2, S0:2]",
      "[D:2, S0:2]", "[S0:4]", "[S1:4]", "[D:4]",        "[S0:2, D:2]"};
  int64_t sizes[] = {2, 2, 2, 4, 4, 4, 4, 4, 4, 4};
  for (int trial = 0; trial < 60; ++trial) {
    int a = rng() % 10, b = rng() % 10;
    auto group = [&](int64_t n) {
      std::string text = "[";
      int64_t start = rng() % 3;
      for (int64_t i = 0; i < n; ++i)
        text += (i ? ", " : "") + std::to_string(start + i);
      return text + "]";
    };
    std::string from =
        "#hspmd.union<{" + group(sizes[a]) + ": " + states[a] + "}>";
    std::string to =
        "#hspmd.union<{" + group(sizes[b]) + ": " + states[b] + "}>";
    SCOPED_TRACE(from + " -> " + to);
    checked(from, to, {8, 12});
  }
}

} // namespace
