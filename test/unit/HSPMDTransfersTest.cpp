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

  /// Plans the exchange `from` -> `to` for `shape` and checks it by
  /// executing it on values: group g of a partial `from` holds the
  /// contribution (g + 1) * 1000000 + e of element e (a complete `from`
  /// holds e). Every reduction must sum one contribution per group from
  /// devices that hold it; every element must be reduced once; every
  /// target device must end with exactly its block of reduced values, built
  /// from its reductions and what it received (or what it held, for a
  /// complete `from`); the byte counts must be those of the reductions'
  /// rings and the transfers.
  ExchangePlan checkedExchange(StringRef fromText, StringRef toText,
                               ArrayRef<int64_t> shape, int64_t elementBytes) {
    UnionAttr from = layout(fromText), to = layout(toText);
    std::string why;
    FailureOr<ExchangePlan> plan =
        planExchange(from, to, shape, elementBytes, why);
    EXPECT_TRUE(succeeded(plan)) << why;
    if (failed(plan))
      return {};
    bool partial =
        from.getRelation() == UnionRelation::Partial && from.getNumGroups() > 1;
    int64_t rank = shape.size(), numGroups = from.getNumGroups();
    auto forEach = [&](ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
                       llvm::function_ref<void(ArrayRef<int64_t>)> fn) {
      SmallVector<int64_t> index(offsets);
      int64_t count = 1;
      for (int64_t size : sizes)
        count *= size;
      for (int64_t n = 0; n < count; ++n) {
        fn(index);
        for (int64_t d = rank - 1; d >= 0; --d) {
          if (++index[d] < offsets[d] + sizes[d])
            break;
          index[d] = offsets[d];
        }
      }
    };
    auto linear = [&](ArrayRef<int64_t> index) {
      int64_t value = 0;
      for (int64_t d = 0; d < rank; ++d)
        value = value * shape[d] + index[d];
      return value;
    };
    auto holds = [&](int64_t device, ArrayRef<int64_t> index) {
      std::optional<Shard> shard = getShard(from, shape, device);
      if (!shard)
        return false;
      for (int64_t d = 0; d < rank; ++d)
        if (index[d] < shard->offsets[d] ||
            index[d] >= shard->offsets[d] + shard->sizes[d])
          return false;
      return true;
    };
    auto expected = [&](int64_t e) {
      if (!partial)
        return e;
      int64_t sum = 0;
      for (int64_t g = 0; g < numGroups; ++g)
        sum += (g + 1) * 1000000 + e;
      return sum;
    };

    std::map<int64_t, int64_t> sent, received;
    // device -> element -> value after the reductions.
    std::map<int64_t, std::map<int64_t, int64_t>> reduced;
    std::map<int64_t, int> timesReduced;
    for (const Reduction &r : plan->reductions) {
      EXPECT_TRUE(partial) << "a reduction of complete values";
      EXPECT_EQ(static_cast<int64_t>(r.devices.size()), numGroups);
      if (static_cast<int64_t>(r.devices.size()) != numGroups)
        return *plan;
      for (auto [g, device] : llvm::enumerate(r.devices))
        EXPECT_EQ(from.getMemberOf(device), static_cast<int64_t>(g))
            << "representatives are in group order";
      forEach(r.offsets, r.sizes, [&](ArrayRef<int64_t> index) {
        int64_t e = linear(index), sum = 0;
        for (auto [g, device] : llvm::enumerate(r.devices)) {
          EXPECT_TRUE(holds(device, index))
              << "device " << device << " reduces element " << e
              << " it does not hold";
          sum += (static_cast<int64_t>(g) + 1) * 1000000 + e;
        }
        ++timesReduced[e];
        for (int64_t device : r.devices)
          reduced[device][e] = sum;
      });
      int64_t elements = 1;
      for (int64_t size : r.sizes)
        elements *= size;
      for (auto [position, device] : llvm::enumerate(r.devices)) {
        int64_t bytes =
            getRingAllReduceBytes(elements, numGroups, position, elementBytes);
        sent[device] += bytes;
        received[device] += bytes;
      }
    }
    int64_t numElements = 1;
    for (int64_t size : shape)
      numElements *= size;
    if (partial)
      for (int64_t e = 0; e < numElements; ++e)
        EXPECT_EQ(timesReduced[e], 1) << "element " << e;

    for (int64_t device : to.getAllDevices()) {
      Shard want = *getShard(to, shape, device);
      std::map<int64_t, int64_t> have; // element -> value
      std::map<int64_t, int> times;
      std::set<int64_t> wanted;
      forEach(want.offsets, want.sizes,
              [&](ArrayRef<int64_t> index) { wanted.insert(linear(index)); });
      // What the device has before the transfers.
      for (int64_t e : wanted) {
        if (partial && reduced[device].count(e)) {
          have[e] = reduced[device][e];
          ++times[e];
        }
      }
      if (!partial)
        forEach(want.offsets, want.sizes, [&](ArrayRef<int64_t> index) {
          if (holds(device, index)) {
            have[linear(index)] = linear(index);
            ++times[linear(index)];
          }
        });
      for (const Transfer &t : plan->transfers) {
        if (t.destination != device)
          continue;
        forEach(t.offsets, t.sizes, [&](ArrayRef<int64_t> index) {
          int64_t e = linear(index);
          EXPECT_TRUE(wanted.count(e)) << "device " << device
                                       << " receives an element it does "
                                          "not need";
          EXPECT_EQ(times[e], 0)
              << "device " << device << " receives an element it has";
          if (partial) {
            EXPECT_TRUE(reduced[t.source].count(e))
                << "device " << t.source << " sends element " << e
                << " it has not reduced";
            have[e] = reduced[t.source][e];
          } else {
            EXPECT_TRUE(holds(t.source, index));
            have[e] = e;
          }
          ++times[e];
        });
        int64_t elements = 1;
        for (int64_t size : t.sizes)
          elements *= size;
        EXPECT_EQ(t.bytes, elements * elementBytes);
        sent[t.source] += t.bytes;
        received[t.destination] += t.bytes;
      }
      for (int64_t e : wanted) {
        EXPECT_EQ(times[e], 1) << "device " << device << " element " << e;
        EXPECT_EQ(have[e], expected(e))
            << "device " << device << " element " << e;
      }
    }
    int64_t total = 0;
    for (auto &[device, bytes] : sent) {
      EXPECT_EQ(plan->sent.count(device) ? plan->sent[device] : 0, bytes)
          << "device " << device;
      total += bytes;
    }
    for (auto &[device, bytes] : plan->sent)
      EXPECT_EQ(sent[device], bytes) << "device " << device;
    for (auto &[device, bytes] : received)
      EXPECT_EQ(plan->received.count(device) ? plan->received[device] : 0,
                bytes)
          << "device " << device;
    for (auto &[device, bytes] : plan->received)
      EXPECT_EQ(received[device], bytes) << "device " << device;
    EXPECT_EQ(plan->totalBytes, total);
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
  EXPECT_EQ(plan.transfers[2].sizes, (std::vector<int64_t>{8, 4}));
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

TEST_F(HSPMDTransfersTest, UnevenBlocksInsideAGroup) {
  // Balanced 3/3/2 rows to explicit 4/2/2: only row 3 moves (device 1 to
  // device 0), 4 floats.
  TransferPlan plan = checked("#hspmd.union<{[0, 1, 2]: [S0:3]}>",
                              "#hspmd.union<{[0, 1, 2]: [S0:[4, 2, 2]]}>",
                              {8, 4});
  ASSERT_EQ(plan.transfers.size(), 1u);
  EXPECT_EQ(plan.transfers[0].source, 1);
  EXPECT_EQ(plan.transfers[0].destination, 0);
  EXPECT_EQ(plan.totalBytes, 4 * 4);
  // Heads 2/1/1 of 32 columns gathered: every device receives the 32 - own
  // columns it lacks, nothing more.
  plan = checked("#hspmd.union<{[0, 1, 2]: [S1:[16, 8, 8]]}>",
                 "#hspmd.union<{[0, 1, 2]: [D:3]}>", {2, 32});
  EXPECT_EQ(plan.totalBytes, 2 * 4 * ((32 - 16) + (32 - 8) + (32 - 8)));
  // Uneven on both sides, with replicas: a block already held stays.
  checked("#hspmd.union<{[0, 1, 2, 3, 4, 5]: [D:2, S1:3]}>",
          "#hspmd.union<{[0, 1, 2, 3, 4, 5]: [S1:[1, 3, 1, 2, 2, 1]]}>",
          {3, 10});
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
                           layout("#hspmd.union<{[2]: [D:1]}>"), {1}, 4, why)));
  EXPECT_NE(why.find("does not fit the shape"), std::string::npos) << why;
  EXPECT_TRUE(failed(planTransfers(layout("#hspmd.union<{[0, 1]: [S0:2]}>"),
                                   layout("#hspmd.union<{[2, 3]: [S0:2]}>"),
                                   {64}, 4, why, /*maxCells=*/1)));
  EXPECT_NE(why.find("more than 1 cells"), std::string::npos) << why;
}

TEST_F(HSPMDTransfersTest, RingAllReduceBytes) {
  // 10 elements over 3: chunks 4, 3, 3; member j sends the others' chunks
  // once and its own twice.
  EXPECT_EQ(getRingAllReduceBytes(10, 3, 0, 1), 6 + 2 * 4);
  EXPECT_EQ(getRingAllReduceBytes(10, 3, 1, 1), 7 + 2 * 3);
  EXPECT_EQ(getRingAllReduceBytes(10, 3, 2, 4), (7 + 2 * 3) * 4);
  // Two members: each sends the whole box once.
  EXPECT_EQ(getRingAllReduceBytes(1024, 2, 0, 8), 1024 * 8);
  EXPECT_EQ(getRingAllReduceBytes(1024, 2, 1, 8), 1024 * 8);
  EXPECT_EQ(getRingAllReduceBytes(1024, 1, 0, 8), 0);
}

TEST_F(HSPMDTransfersTest, ExchangeReducesPartialTensorParallelGroups) {
  // TP4 on {0..3} and TP2 on {4, 5} each hold a partial sum of a [32, 128]
  // f64 gradient; replicated afterwards with the same inner layouts. Every
  // [32, 32] column block is all-reduced between the device of TP4 and the
  // device of TP2 that hold it, and then everyone already has its block.
  ExchangePlan plan = checkedExchange(
      "#hspmd.union<partial(sum): {[0, 1, 2, 3]: [S1:4]}, {[4, 5]: [S1:2]}>",
      "#hspmd.union<replicated: {[0, 1, 2, 3]: [S1:4]}, {[4, 5]: [S1:2]}>",
      {32, 128}, 8);
  const int64_t cellBytes = 32 * 32 * 8;
  ASSERT_EQ(plan.reductions.size(), 4u);
  for (int64_t j = 0; j < 4; ++j) {
    const Reduction &r = plan.reductions[j];
    EXPECT_EQ(r.offsets, (std::vector<int64_t>{0, 32 * j}));
    EXPECT_EQ(r.sizes, (std::vector<int64_t>{32, 32}));
    EXPECT_EQ(r.devices, (std::vector<int64_t>{j, 4 + j / 2}));
    // Two members: each sends half, then its reduced half.
    EXPECT_EQ(getRingAllReduceBytes(32 * 32, 2, 0, 8), cellBytes);
    EXPECT_EQ(getRingAllReduceBytes(32 * 32, 2, 1, 8), cellBytes);
  }
  EXPECT_TRUE(plan.transfers.empty());
  for (int64_t j = 0; j < 4; ++j) {
    EXPECT_EQ(plan.sent[j], cellBytes);
    EXPECT_EQ(plan.received[j], cellBytes);
  }
  EXPECT_EQ(plan.sent[4], 2 * cellBytes);
  EXPECT_EQ(plan.sent[5], 2 * cellBytes);
  // The least any all-reduce of two contributions per cell can send: 2 *
  // cellBytes per cell.
  EXPECT_EQ(plan.totalBytes, 4 * 2 * cellBytes);
}

TEST_F(HSPMDTransfersTest, ExchangeOfAScalarIsOnePiece) {
  // A 0-d partial sum on two replicas and a single device: one reduction
  // of the one element (between 0 and 2), then 0 sends it to 1.
  ExchangePlan plan = checkedExchange(
      "#hspmd.union<partial(sum): {[0, 1]: [D:2]}, {[2]: []}>",
      "#hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>", {}, 8);
  ASSERT_EQ(plan.reductions.size(), 1u);
  EXPECT_EQ(plan.reductions[0].devices, (std::vector<int64_t>{0, 2}));
  ASSERT_EQ(plan.transfers.size(), 1u);
  EXPECT_EQ(plan.transfers[0].source, 0);
  EXPECT_EQ(plan.transfers[0].destination, 1);
  EXPECT_EQ(plan.sent[0], 16);
  EXPECT_EQ(plan.received[1], 8);
  EXPECT_EQ(plan.sent[2], 8);
  EXPECT_EQ(plan.totalBytes, 24);
}

TEST_F(HSPMDTransfersTest, ExchangeSendsTheSumToReplicasThatDidNotReduce) {
  // A group of two replicas and a single device: the [8, 4] f32 tensor is
  // cut into two [4, 4] row halves (P = 2, along the larger dimension); 0
  // reduces the first with 2, 1 the second (64 bytes each way per half),
  // then 0 and 1 send each other the half they reduced.
  ExchangePlan plan = checkedExchange(
      "#hspmd.union<partial(sum): {[0, 1]: [D:2]}, {[2]: []}>",
      "#hspmd.union<replicated: {[0, 1]: [D:2]}, {[2]: []}>", {8, 4}, 4);
  ASSERT_EQ(plan.reductions.size(), 2u);
  for (int64_t j = 0; j < 2; ++j) {
    EXPECT_EQ(plan.reductions[j].offsets, (std::vector<int64_t>{4 * j, 0}));
    EXPECT_EQ(plan.reductions[j].sizes, (std::vector<int64_t>{4, 4}));
    EXPECT_EQ(plan.reductions[j].devices, (std::vector<int64_t>{j, 2}));
  }
  ASSERT_EQ(plan.transfers.size(), 2u);
  EXPECT_EQ(plan.transfers[0].source, 1);
  EXPECT_EQ(plan.transfers[0].destination, 0);
  EXPECT_EQ(plan.transfers[0].offsets, (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(plan.transfers[0].bytes, 64);
  EXPECT_EQ(plan.transfers[1].source, 0);
  EXPECT_EQ(plan.transfers[1].destination, 1);
  EXPECT_EQ(plan.transfers[1].offsets, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(plan.transfers[1].bytes, 64);
  for (int64_t device = 0; device < 3; ++device) {
    EXPECT_EQ(plan.sent[device], 128) << device;
    EXPECT_EQ(plan.received[device], 128) << device;
  }
  // As much as one representative per group (0 would send 128 + 128), but
  // shared.
  EXPECT_EQ(plan.totalBytes, 3 * 128);
}

TEST_F(HSPMDTransfersTest, ExchangeSharesACellAmongTheReplicasOfAGroup) {
  // The end-to-end case: a norm weight's gradient of 32 f64 elements,
  // replicated over {0, 1, 2, 3} and over {4, 5}, each group a partial sum.
  // P = 4 pieces of 8 elements; piece i is reduced by i and 4 + i % 2 (a
  // ring of two: 64 bytes each way), then each device of a group sends the
  // pieces it reduced to the group's other replicas.
  ExchangePlan plan = checkedExchange(
      "#hspmd.union<partial(sum): {[0, 1, 2, 3]: [D:4]}, {[4, 5]: [D:2]}>",
      "#hspmd.union<replicated: {[0, 1, 2, 3]: [D:4]}, {[4, 5]: [D:2]}>",
      {32}, 8);
  const int64_t pieceBytes = 8 * 8;
  ASSERT_EQ(plan.reductions.size(), 4u);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(plan.reductions[i].offsets, (std::vector<int64_t>{8 * i}));
    EXPECT_EQ(plan.reductions[i].sizes, (std::vector<int64_t>{8}));
    EXPECT_EQ(plan.reductions[i].devices,
              (std::vector<int64_t>{i, 4 + i % 2}));
  }
  EXPECT_EQ(getRingAllReduceBytes(8, 2, 0, 8), pieceBytes);
  // 0..3: each piece to the 3 others (12); 4 and 5: their two pieces to
  // each other (4, not adjacent, so not merged).
  ASSERT_EQ(plan.transfers.size(), 16u);
  std::map<std::pair<int64_t, int64_t>, int64_t> pairBytes;
  for (const Transfer &t : plan.transfers) {
    EXPECT_EQ(t.bytes, pieceBytes);
    EXPECT_EQ(t.sizes, (std::vector<int64_t>{8}));
    int64_t piece = t.offsets[0] / 8;
    EXPECT_EQ(t.source, t.source < 4 ? piece : 4 + piece % 2);
    EXPECT_EQ(t.source < 4, t.destination < 4) << "inside the group";
    pairBytes[{t.source, t.destination}] += t.bytes;
  }
  for (int64_t a = 0; a < 4; ++a)
    for (int64_t b = 0; b < 4; ++b)
      if (a != b)
        EXPECT_EQ((pairBytes[{a, b}]), pieceBytes) << a << " -> " << b;
  EXPECT_EQ((pairBytes[{4, 5}]), 2 * pieceBytes);
  EXPECT_EQ((pairBytes[{5, 4}]), 2 * pieceBytes);
  // Every device: one piece's ring (64) + 3 sends of 64 for 0..3; two
  // pieces' rings (128) + 2 sends of 64 for 4 and 5; received the same.
  for (int64_t device = 0; device < 4; ++device) {
    EXPECT_EQ(plan.sent[device], pieceBytes + 3 * pieceBytes) << device;
    EXPECT_EQ(plan.received[device], pieceBytes + 3 * pieceBytes) << device;
  }
  for (int64_t device : {4, 5}) {
    EXPECT_EQ(plan.sent[device], 2 * pieceBytes + 2 * pieceBytes) << device;
    EXPECT_EQ(plan.received[device], 2 * pieceBytes + 2 * pieceBytes)
        << device;
  }
  int64_t most = 0, least = INT64_MAX;
  for (int64_t device = 0; device < 4; ++device) {
    most = std::max(most, plan.sent[device]);
    least = std::min(least, plan.sent[device]);
  }
  EXPECT_EQ(most, least) << "group {0, 1, 2, 3} shares the work evenly";
  // The same total as one representative per group (0 and 4 reduce 256
  // bytes each way, 0 sends 3 * 256, 4 sends 256: 1536), but 0 sent 1024
  // there and 256 here.
  EXPECT_EQ(plan.totalBytes, 6 * 4 * pieceBytes);
  EXPECT_EQ(plan.totalBytes, 1536);
}

TEST_F(HSPMDTransfersTest, ExchangeCutsCellsIntoNearEqualPieces) {
  // 10 rows over 4 replicas: pieces of 3, 3, 2, 2 rows (the cut goes along
  // the larger dimension), reduced by 0, 1, 2, 3 with 4.
  ExchangePlan plan = checkedExchange(
      "#hspmd.union<partial(sum): {[0, 1, 2, 3]: [D:4]}, {[4]: []}>",
      "#hspmd.union<replicated: {[0, 1, 2, 3]: [D:4]}, {[4]: []}>", {10, 3},
      4);
  ASSERT_EQ(plan.reductions.size(), 4u);
  int64_t rows[] = {3, 3, 2, 2}, offset = 0;
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(plan.reductions[i].offsets, (std::vector<int64_t>{offset, 0}));
    EXPECT_EQ(plan.reductions[i].sizes, (std::vector<int64_t>{rows[i], 3}));
    EXPECT_EQ(plan.reductions[i].devices, (std::vector<int64_t>{i, 4}));
    offset += rows[i];
  }
  // Along the larger dimension, the second here: 6 columns into 4 pieces
  // of 2, 2, 1, 1.
  plan = checkedExchange(
      "#hspmd.union<partial(sum): {[0, 1, 2, 3]: [D:4]}, {[4]: []}>",
      "#hspmd.union<replicated: {[0, 1, 2, 3]: [D:4]}, {[4]: []}>", {2, 6}, 4);
  ASSERT_EQ(plan.reductions.size(), 4u);
  int64_t columns[] = {2, 2, 1, 1};
  offset = 0;
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(plan.reductions[i].offsets, (std::vector<int64_t>{0, offset}));
    EXPECT_EQ(plan.reductions[i].sizes,
              (std::vector<int64_t>{2, columns[i]}));
    offset += columns[i];
  }
  // Three elements: at most three pieces; 3 reduces nothing and receives
  // all three.
  plan = checkedExchange(
      "#hspmd.union<partial(sum): {[0, 1, 2, 3]: [D:4]}, {[4]: []}>",
      "#hspmd.union<replicated: {[0, 1, 2, 3]: [D:4]}, {[4]: []}>", {3}, 4);
  ASSERT_EQ(plan.reductions.size(), 3u);
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(plan.reductions[i].devices, (std::vector<int64_t>{i, 4}));
  EXPECT_EQ(plan.sent[3], 0);
  EXPECT_EQ(plan.received[3], 3 * 4);
}

TEST_F(HSPMDTransfersTest, ExchangeReducesOnTheReplicasThatNeedTheCell) {
  // Replicated on {0, 1, 2, 3} and on {4, 5} -> split over each group (a
  // reduce-scatter): each quarter is held by all of 0..3 but needed by one
  // of them (and by one of 4, 5), so that one reduces it, with the one of
  // 4, 5 that needs it, and nothing is sent afterwards: 4 rings of two over
  // 8 f64 elements.
  ExchangePlan plan = checkedExchange(
      "#hspmd.union<partial(sum): {[0, 1, 2, 3]: [D:4]}, {[4, 5]: [D:2]}>",
      "#hspmd.union<replicated: {[0, 1, 2, 3]: [S0:4]}, {[4, 5]: [S0:2]}>",
      {32}, 8);
  ASSERT_EQ(plan.reductions.size(), 4u);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(plan.reductions[i].offsets, (std::vector<int64_t>{8 * i}));
    EXPECT_EQ(plan.reductions[i].devices,
              (std::vector<int64_t>{i, 4 + i / 2}));
  }
  EXPECT_TRUE(plan.transfers.empty());
  EXPECT_EQ(plan.totalBytes, 4 * 2 * 8 * 8);
}

TEST_F(HSPMDTransfersTest, ExchangeBalancesRepresentativesAmongReplicas) {
  // The same partial source, split by rows over {0, 1, 2, 3}: 0 and 1 each
  // reduce, with 2, the row block they need (32 bytes each way per block);
  // rows 4-5, which only 2 needs, and rows 6-7, which 3 (outside the
  // source) needs, are held by 0 and 1 and needed by neither, so both
  // share them: cut into two [2, 2] column pieces, the left ones reduced by
  // 0 and the right ones by 1 (merged into [4, 2] boxes), and 3 receives
  // each piece of rows 6-7 from its less loaded representative.
  ExchangePlan plan =
      checkedExchange("#hspmd.union<partial(sum): {[0, 1]: [D:2]}, {[2]: []}>",
                      "#hspmd.union<{[0, 1, 2, 3]: [S0:4]}>", {8, 4}, 4);
  ASSERT_EQ(plan.reductions.size(), 4u);
  for (int64_t j = 0; j < 2; ++j) {
    EXPECT_EQ(plan.reductions[j].offsets, (std::vector<int64_t>{2 * j, 0}));
    EXPECT_EQ(plan.reductions[j].sizes, (std::vector<int64_t>{2, 4}));
    EXPECT_EQ(plan.reductions[j].devices, (std::vector<int64_t>{j, 2}));
    EXPECT_EQ(plan.reductions[2 + j].offsets,
              (std::vector<int64_t>{4, 2 * j}));
    EXPECT_EQ(plan.reductions[2 + j].sizes, (std::vector<int64_t>{4, 2}));
    EXPECT_EQ(plan.reductions[2 + j].devices, (std::vector<int64_t>{j, 2}));
  }
  ASSERT_EQ(plan.transfers.size(), 2u);
  for (int64_t j = 0; j < 2; ++j) {
    EXPECT_EQ(plan.transfers[j].source, j);
    EXPECT_EQ(plan.transfers[j].destination, 3);
    EXPECT_EQ(plan.transfers[j].offsets, (std::vector<int64_t>{6, 2 * j}));
    EXPECT_EQ(plan.transfers[j].bytes, 16);
  }
  EXPECT_EQ(plan.sent[0], 32 + 32 + 16);
  EXPECT_EQ(plan.sent[1], 32 + 32 + 16);
  EXPECT_EQ(plan.sent[2], 4 * 32);
  EXPECT_EQ(plan.received[3], 32);
  EXPECT_EQ(plan.totalBytes, 9 * 32);
}

TEST_F(HSPMDTransfersTest, ExchangeMergesCellsWithTheSameRepresentatives) {
  // Two TP2 groups -> TP4 over all four devices: the column quarters of a
  // half have the same representatives and merge into one [4, 64]
  // reduction; 1 and 2 receive their quarter from their own group's
  // representative.
  ExchangePlan plan = checkedExchange(
      "#hspmd.union<partial(sum): {[0, 1]: [S1:2]}, {[2, 3]: [S1:2]}>",
      "#hspmd.union<{[0, 1, 2, 3]: [S1:4]}>", {4, 128}, 4);
  ASSERT_EQ(plan.reductions.size(), 2u);
  EXPECT_EQ(plan.reductions[0].offsets, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(plan.reductions[0].sizes, (std::vector<int64_t>{4, 64}));
  EXPECT_EQ(plan.reductions[0].devices, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(plan.reductions[1].offsets, (std::vector<int64_t>{0, 64}));
  EXPECT_EQ(plan.reductions[1].devices, (std::vector<int64_t>{1, 3}));
  ASSERT_EQ(plan.transfers.size(), 2u);
  EXPECT_EQ(plan.transfers[0].source, 0);
  EXPECT_EQ(plan.transfers[0].destination, 1);
  EXPECT_EQ(plan.transfers[1].source, 3);
  EXPECT_EQ(plan.transfers[1].destination, 2);
  EXPECT_EQ(plan.totalBytes, 4 * 4 * 64 * 4 + 2 * 4 * 32 * 4);
}

TEST_F(HSPMDTransfersTest, ExchangeOverThreeGroupsToOtherDevices) {
  // Three contributions (rings of three, chunks of unequal size) and target
  // devices outside the source.
  checkedExchange("#hspmd.union<partial(sum): {[0, 1]: [S0:2]}, {[2]: []}, "
                  "{[3, 4, 5]: [D:3]}>",
                  "#hspmd.union<split(1) sizes [3, 4]: {[6, 1]: [S0:2]}, "
                  "{[2, 7]: [D:2]}>",
                  {6, 7}, 2);
  checkedExchange("#hspmd.union<partial(sum) shares [3, 1, 2]: "
                  "{[0, 1, 2]: [S1:3]}, {[3]: []}, {[4, 5]: [S0:2]}>",
                  "#hspmd.union<{[5, 4, 3, 2, 1, 0]: [S0:2, S1:3]}>", {4, 9},
                  4);
}

TEST_F(HSPMDTransfersTest, ExchangeOfCompleteValuesIsASendRecvPlan) {
  StringRef from = "#hspmd.union<split(0) shares [3, 1]: "
                   "{[0, 1, 2]: [S0:3]}, {[3]: [D:1]}>";
  StringRef to = "#hspmd.union<{[3, 2, 1, 0]: [S0:4]}>";
  ExchangePlan plan = checkedExchange(from, to, {12, 5}, 4);
  std::string why;
  FailureOr<TransferPlan> transfers =
      planTransfers(layout(from), layout(to), {12, 5}, 4, why);
  ASSERT_TRUE(succeeded(transfers)) << why;
  EXPECT_TRUE(plan.reductions.empty());
  ASSERT_EQ(plan.transfers.size(), transfers->transfers.size());
  for (auto [a, b] : llvm::zip_equal(plan.transfers, transfers->transfers)) {
    EXPECT_EQ(a.source, b.source);
    EXPECT_EQ(a.destination, b.destination);
    EXPECT_EQ(a.offsets, b.offsets);
    EXPECT_EQ(a.sizes, b.sizes);
    EXPECT_EQ(a.bytes, b.bytes);
  }
  EXPECT_EQ(plan.sent, transfers->sent);
  EXPECT_EQ(plan.received, transfers->received);
  EXPECT_EQ(plan.totalBytes, transfers->totalBytes);
  EXPECT_GT(plan.totalBytes, 0);
}

TEST_F(HSPMDTransfersTest, ExchangeRefusesWhatItCannotReduce) {
  StringRef partial = "#hspmd.union<partial(sum): {[0, 1]: [D:2]}, {[2]: []}>";
  std::string why;
  EXPECT_TRUE(failed(planExchange(layout(partial),
                                  layout("#hspmd.union<{[0, 1]: [P(sum):2]}>"),
                                  {4}, 4, why)));
  EXPECT_NE(why.find("the target layout holds partial sums on device 0"),
            std::string::npos)
      << why;
  EXPECT_TRUE(failed(planExchange(
      layout("#hspmd.union<partial(sum): {[0, 1]: [P(sum):2]}, {[2]: []}>"),
      layout("#hspmd.union<{[0, 1, 2]: [D:3]}>"), {4}, 4, why)));
  EXPECT_NE(why.find("group 0 of the partial(sum) source layout holds partial "
                     "sums inside the group (#hspmd.states<[P(sum):2]>)"),
            std::string::npos)
      << why;
  EXPECT_TRUE(failed(planExchange(
      layout("#hspmd.union<partial(max): {[0, 1]: [D:2]}, {[2]: []}>"),
      layout("#hspmd.union<{[0, 1, 2]: [D:3]}>"), {4}, 4, why)));
  EXPECT_NE(why.find("partial(max)"), std::string::npos) << why;
  EXPECT_TRUE(failed(planExchange(
      layout("#hspmd.union<partial(sum): {[0, 1]: [S0:2]}, {[2]: []}>"),
      layout("#hspmd.union<{[0, 1, 2]: [D:3]}>"), {1}, 4, why)));
  EXPECT_NE(why.find("the source layout does not fit the shape"),
            std::string::npos)
      << why;
  EXPECT_TRUE(failed(planExchange(
      layout(partial), layout("#hspmd.union<{[0, 1]: [S0:2]}>"), {64}, 4, why,
      /*maxCells=*/1)));
  EXPECT_NE(why.find("more than 1 cells"), std::string::npos) << why;
}

/// Random partial sums over two or three groups on disjoint devices, to
/// random single-group layouts on random device sets.
TEST_F(HSPMDTransfersTest, RandomExchangesDeliverTheSums) {
  std::mt19937_64 rng(23);
  const char *states[] = {"[S0:2]", "[S1:2]",       "[D:2]",
                          "[]",     "[S0:2, S1:2]", "[D:2, S1:2]",
                          "[S1:4]", "[S0:2, D:2]",  "[D:3]"};
  int64_t sizes[] = {2, 2, 2, 1, 4, 4, 4, 4, 3};
  for (int trial = 0; trial < 40; ++trial) {
    int64_t next = 0;
    auto group = [&](int64_t n, int64_t start) {
      std::string text = "[";
      for (int64_t i = 0; i < n; ++i)
        text += (i ? ", " : "") + std::to_string(start + i);
      return text + "]";
    };
    int64_t numGroups = 2 + rng() % 2;
    std::string from = "#hspmd.union<partial(sum): ";
    for (int64_t g = 0; g < numGroups; ++g) {
      int s = rng() % 9;
      from +=
          (g ? ", {" : "{") + group(sizes[s], next) + ": " + states[s] + "}";
      next += sizes[s];
    }
    from += ">";
    int b = rng() % 8;
    std::string to = "#hspmd.union<{" + group(sizes[b], rng() % (next + 1)) +
                     ": " + states[b] + "}>";
    SCOPED_TRACE(from + " -> " + to);
    checkedExchange(from, to, {8, 12}, 4);
  }
}

/// Random partial sums over two or three groups -> replicated over the same
/// groups, each group's inner layout drawn again (of the same size): the
/// end-to-end case of a gradient summed across groups, with cells held by
/// several replicas of a group.
TEST_F(HSPMDTransfersTest, RandomExchangesToReplicatedGroups) {
  std::mt19937_64 rng(31);
  std::map<int64_t, SmallVector<const char *>> statesOfSize = {
      {1, {"[]"}},
      {2, {"[S0:2]", "[S1:2]", "[D:2]"}},
      {3, {"[D:3]", "[S1:3]"}},
      {4, {"[D:4]", "[S0:4]", "[S0:2, S1:2]", "[D:2, S1:2]", "[S0:2, D:2]"}}};
  int64_t groupSizes[] = {1, 2, 3, 4};
  for (int trial = 0; trial < 40; ++trial) {
    int64_t next = 0, numGroups = 2 + rng() % 2;
    std::string from = "#hspmd.union<partial(sum): ";
    std::string to = "#hspmd.union<replicated: ";
    for (int64_t g = 0; g < numGroups; ++g) {
      int64_t n = groupSizes[rng() % 4];
      std::string devices = "[";
      for (int64_t i = 0; i < n; ++i)
        devices += (i ? ", " : "") + std::to_string(next + i);
      devices += "]";
      next += n;
      auto &states = statesOfSize[n];
      from += (g ? ", {" : "{") + devices + ": " +
              states[rng() % states.size()] + "}";
      to += (g ? ", {" : "{") + devices + ": " +
            states[rng() % states.size()] + "}";
    }
    from += ">";
    to += ">";
    SCOPED_TRACE(from + " -> " + to);
    checkedExchange(from, to, {12, 6}, 4);
  }
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
