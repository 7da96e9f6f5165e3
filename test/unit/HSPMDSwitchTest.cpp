//===- HSPMDSwitchTest.cpp - Strategy switch plans ------------------------===//
//
// layout::planSwitch on the switches the graph-switching issue names (TP2 ->
// TP4 on overlapping groups, DP2 -> TP4, a TP4 + TP2 heterogeneous union ->
// DP, two pipeline stages -> one) with their exact volumes, per-device bytes
// and bounds; random tensors carried through every plan land bit for bit;
// the relabelling against an exhaustive search over permutations.
//
//===----------------------------------------------------------------------===//

#include "runtime/layout/Shards.h"
#include "runtime/layout/Switch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

using namespace loom::layout;

namespace {

using Ints = std::vector<int64_t>;

Layout group(Ints devices, std::vector<Axis> axes) {
  return Layout::group(std::move(devices), std::move(axes));
}

/// A union of groups, each holding the whole tensor (replicated relation).
Layout replicatedUnion(std::vector<Member> members) {
  Layout layout;
  layout.relation = Relation::Replicated;
  layout.members = std::move(members);
  return layout;
}

SwitchTensor tensor(std::string name, Ints shape, Layout from, Layout to,
                    int64_t elementBytes = 8) {
  return {std::move(name), std::move(shape), elementBytes, std::move(from),
          std::move(to)};
}

SwitchPlan plan(const std::vector<SwitchTensor> &tensors,
                const Topology &topology = {}, bool relabel = false) {
  SwitchOptions options;
  options.relabel = relabel;
  absl::StatusOr<SwitchPlan> result = planSwitch(tensors, topology, options);
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? *result : SwitchPlan{};
}

int64_t numElements(const Ints &shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

/// Random f64 tensors cut into their source shards, carried through
/// `switchPlan`, compared bit for bit with the shards their targets hold.
void expectLandsExactly(const std::vector<SwitchTensor> &tensors,
                        const SwitchPlan &switchPlan, unsigned seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> value(-1, 1);
  std::vector<std::vector<double>> globals;
  std::vector<std::map<int64_t, std::vector<char>>> sources(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    ASSERT_EQ(tensors[t].elementBytes, 8);
    std::vector<double> global(numElements(tensors[t].shape));
    for (double &x : global)
      x = value(random);
    for (int64_t device : tensors[t].from.getDevices()) {
      absl::StatusOr<Shard> shard =
          getShard(tensors[t].from, tensors[t].shape, device);
      ASSERT_TRUE(shard.ok());
      std::vector<char> &data = sources[t][device];
      data.resize(shard->getNumElements() * 8);
      cutShard(global.data(), tensors[t].shape, DType::F64, *shard, data.data());
    }
    globals.push_back(std::move(global));
  }
  auto landed = executeSwitch(switchPlan, tensors, sources);
  ASSERT_TRUE(landed.ok()) << landed.status().message();
  for (size_t t = 0; t < tensors.size(); ++t) {
    const Layout &target = switchPlan.targets[t];
    ASSERT_EQ((*landed)[t].size(), target.getDevices().size());
    for (int64_t device : target.getDevices()) {
      absl::StatusOr<Shard> shard = getShard(target, tensors[t].shape, device);
      ASSERT_TRUE(shard.ok());
      std::vector<char> expected(shard->getNumElements() * 8);
      cutShard(globals[t].data(), tensors[t].shape, DType::F64, *shard,
               expected.data());
      EXPECT_EQ((*landed)[t].at(device), expected)
          << tensors[t].name << " on device " << device;
    }
  }
}

/// Every device of `to` lacks, summed over the tensors, what it does not
/// hold under `from` when it plays role `role` (exhaustive reference).
int64_t lackOf(const std::vector<SwitchTensor> &tensors, int64_t role,
               int64_t device) {
  int64_t bytes = 0;
  for (const SwitchTensor &t : tensors) {
    absl::StatusOr<Shard> block = getShard(t.to, t.shape, role);
    if (!block.ok())
      continue;
    // Element by element: whether the device holds it under `from`.
    absl::StatusOr<Shard> own = getShard(t.from, t.shape, device);
    int64_t elements = block->getNumElements();
    if (own.ok()) {
      Ints index(block->offsets);
      for (int64_t e = 0; e < block->getNumElements(); ++e) {
        bool inside = true;
        for (size_t d = 0; d < index.size(); ++d)
          inside &= index[d] >= own->offsets[d] &&
                    index[d] < own->offsets[d] + own->sizes[d];
        elements -= inside;
        for (size_t d = index.size(); d-- > 0;) {
          if (++index[d] < block->offsets[d] + block->sizes[d])
            break;
          index[d] = block->offsets[d];
        }
      }
    }
    bytes += elements * t.elementBytes;
  }
  return bytes;
}

// TP2 on devices 0, 1 to TP4 on 0-3 (the groups overlap), a [8, 16] f64
// weight split by columns: device 0 keeps columns 0-3 and alone holds 4-7
// (device 1's new block), device 1 alone holds 8-15 (devices 2 and 3's).
// Identity: 3 blocks of 256 bytes move, device 1 sends 512 (its forced
// bound). Relabelled, device 1 keeps the role of columns 8-11 and device 2
// takes the role of 4-7: 512 bytes, one renaming pair.
TEST(SwitchPlanTest, TensorParallelTwoToFourOnOverlappingGroups) {
  std::vector<SwitchTensor> tensors = {
      tensor("w", {8, 16}, group({0, 1}, {Axis::split(1, 2)}),
             group({0, 1, 2, 3}, {Axis::split(1, 4)}))};
  SwitchPlan identity = plan(tensors);
  EXPECT_EQ(identity.totalBytes, 768);
  EXPECT_EQ(identity.identityMinimum, 768);
  EXPECT_EQ(identity.relabelledMinimum, 512);
  EXPECT_EQ(identity.keptBytes, 256);
  EXPECT_EQ(identity.sent, (std::map<int64_t, int64_t>{{0, 256}, {1, 512}}));
  EXPECT_EQ(identity.received,
            (std::map<int64_t, int64_t>{{1, 256}, {2, 256}, {3, 256}}));
  EXPECT_EQ(identity.maxSent, 512);
  EXPECT_EQ(identity.maxSentBound, 512);
  EXPECT_EQ(identity.maxReceivedBound, 256);
  EXPECT_EQ(identity.messages.size(), 3u);
  expectLandsExactly(tensors, identity, 1);

  SwitchPlan relabelled = plan(tensors, {}, /*relabel=*/true);
  EXPECT_EQ(relabelled.totalBytes, 512);
  EXPECT_EQ(relabelled.relabelling,
            (std::map<int64_t, int64_t>{{0, 0}, {1, 2}, {2, 1}, {3, 3}}));
  EXPECT_EQ(relabelled.keptBytes, 512);
  EXPECT_EQ(relabelled.sent, (std::map<int64_t, int64_t>{{0, 256}, {1, 256}}));
  EXPECT_EQ(relabelled.maxSent, relabelled.maxSentBound);
  EXPECT_EQ(relabelled.targets[0].str(),
            "#hspmd.union<{[0, 2, 1, 3]: [S1:4]}>");
  expectLandsExactly(tensors, relabelled, 2);
  EXPECT_EQ(describeSwitch(relabelled),
            "volume 512 bytes (identity minimum 768, relabelled minimum 512), "
            "kept 512\n"
            "messages 2, largest sent 256 (bound 256), received 256 (bound "
            "256)\n"
            "cross-node 0 (bound 0), largest link 0 (bound 0)\n"
            "relabelling 1->2, 2->1\n");
}

// DP2 on 0, 1 to TP4 on 0-3: devices 0 and 1 keep their quarter, 2 and 3
// each receive theirs, one from each replica (balanced: 256 bytes each, the
// bound 512 / 2 holders).
TEST(SwitchPlanTest, DataParallelTwoToTensorParallelFour) {
  std::vector<SwitchTensor> tensors = {
      tensor("w", {8, 16}, group({0, 1}, {Axis::duplicate(2)}),
             group({0, 1, 2, 3}, {Axis::split(1, 4)}))};
  SwitchPlan p = plan(tensors, {}, /*relabel=*/true);
  EXPECT_EQ(p.totalBytes, 512);
  EXPECT_EQ(p.identityMinimum, 512);
  EXPECT_EQ(p.relabelledMinimum, 512);
  // Equal volumes: no device renamed.
  for (auto &[role, device] : p.relabelling)
    EXPECT_EQ(role, device);
  EXPECT_EQ(p.sent, (std::map<int64_t, int64_t>{{0, 256}, {1, 256}}));
  EXPECT_EQ(p.maxSentBound, 256);
  EXPECT_EQ(p.maxReceived, 256);
  expectLandsExactly(tensors, p, 3);
}

// A heterogeneous union (TP4 on the four h200 of node 0, TP2 on the two
// 910b of node 1, each group holding the whole [8, 16] f64 weight) to data
// parallel on all six. Every piece comes from the destination's own node:
// nothing crosses nodes (the bound is 0 too, each node holding everything).
// Node 0's devices lack 768 bytes each and send their quarter to the three
// others; node 1's lack 512 and send 512.
TEST(SwitchPlanTest, HeterogeneousTensorParallelToDataParallel) {
  Topology topology;
  for (int64_t d = 0; d < 6; ++d) {
    topology.nodeOf[d] = d < 4 ? 0 : 1;
    topology.kindOf[d] = d < 4 ? "h200" : "910b";
  }
  std::vector<SwitchTensor> tensors = {tensor(
      "w", {8, 16},
      replicatedUnion({{{0, 1, 2, 3}, {{Axis::split(1, 4)}}},
                       {{4, 5}, {{Axis::split(1, 2)}}}}),
      group({0, 1, 2, 3, 4, 5}, {Axis::duplicate(6)}))};
  SwitchPlan p = plan(tensors, topology);
  EXPECT_EQ(p.totalBytes, 4 * 768 + 2 * 512);
  EXPECT_EQ(p.received, (std::map<int64_t, int64_t>{
                            {0, 768}, {1, 768}, {2, 768}, {3, 768},
                            {4, 512}, {5, 512}}));
  EXPECT_EQ(p.sent, p.received);
  EXPECT_EQ(p.crossNodeBytes, 0);
  EXPECT_EQ(p.crossNodeBound, 0);
  EXPECT_EQ(p.maxSent, 768);
  EXPECT_EQ(p.maxSentBound, (4096 + 5) / 6);
  EXPECT_EQ(p.messages.size(), 4u * 3 + 2);
  expectLandsExactly(tensors, p, 4);

  // On one node the 910b would also send to the h200 (least loaded): the
  // preference for intra-node holders is what keeps node 1's bytes home.
  Topology flat;
  SwitchPlan anywhere = plan(tensors, flat);
  EXPECT_EQ(anywhere.totalBytes, p.totalBytes);
  bool crossed = false;
  for (const SwitchMessage &m : anywhere.messages)
    crossed |= (m.source < 4) != (m.destination < 4);
  EXPECT_TRUE(crossed);
}

// Two pipeline stages (stage 0's weight on 0, 1 and stage 1's on 2, 3,
// each replicated in its stage) to one stage of data parallel on all four:
// each device lacks the other stage's weight; one fused message per pair.
TEST(SwitchPlanTest, TwoPipelineStagesToOne) {
  std::vector<SwitchTensor> tensors = {
      tensor("stage0.w", {4, 8}, group({0, 1}, {Axis::duplicate(2)}),
             group({0, 1, 2, 3}, {Axis::duplicate(4)})),
      tensor("stage0.b", {8}, group({0, 1}, {Axis::duplicate(2)}),
             group({0, 1, 2, 3}, {Axis::duplicate(4)})),
      tensor("stage1.w", {4, 8}, group({2, 3}, {Axis::duplicate(2)}),
             group({0, 1, 2, 3}, {Axis::duplicate(4)})),
      tensor("stage1.b", {8}, group({2, 3}, {Axis::duplicate(2)}),
             group({0, 1, 2, 3}, {Axis::duplicate(4)}))};
  SwitchPlan p = plan(tensors, {}, /*relabel=*/true);
  int64_t stage = (32 + 8) * 8;
  EXPECT_EQ(p.totalBytes, 4 * stage);
  EXPECT_EQ(p.relabelledMinimum, 4 * stage);
  EXPECT_EQ(p.received, (std::map<int64_t, int64_t>{
                            {0, stage}, {1, stage}, {2, stage}, {3, stage}}));
  EXPECT_EQ(p.maxSent, p.maxSentBound);
  // Every device sends and receives once, both tensors of a stage in one
  // message.
  ASSERT_EQ(p.messages.size(), 4u);
  for (const SwitchMessage &m : p.messages) {
    EXPECT_EQ(m.pieces.size(), 2u);
    EXPECT_EQ(m.bytes, stage);
  }
  expectLandsExactly(tensors, p, 5);
}

// Across nodes: a weight held only on node 0 (TP2 on 0, 1) goes to TP4 on
// node 1 (devices 2-5). All of it crosses; the link 0 -> 1 carries it all
// (forced bound); the two senders share it.
TEST(SwitchPlanTest, CrossNodeLinksAndBounds) {
  Topology topology;
  for (int64_t d = 0; d < 6; ++d)
    topology.nodeOf[d] = d < 2 ? 0 : 1;
  std::vector<SwitchTensor> tensors = {
      tensor("w", {8, 16}, group({0, 1}, {Axis::split(1, 2)}),
             group({2, 3, 4, 5}, {Axis::split(1, 4)}))};
  SwitchPlan p = plan(tensors, topology);
  EXPECT_EQ(p.totalBytes, 1024);
  EXPECT_EQ(p.crossNodeBytes, 1024);
  EXPECT_EQ(p.crossNodeBound, 1024);
  EXPECT_EQ(p.maxLink, 1024);
  EXPECT_EQ(p.maxLinkBound, 1024);
  EXPECT_EQ(p.sent, (std::map<int64_t, int64_t>{{0, 512}, {1, 512}}));
  EXPECT_EQ(p.maxSentBound, 512);
  expectLandsExactly(tensors, p, 6);
}

// Uneven shares and balanced blocks: a 3:1 batch-dimension union to an
// 8-over-3 balanced split, relabelled, carried bit for bit.
TEST(SwitchPlanTest, UnevenSharesLandExactly) {
  Layout from;
  from.relation = Relation::Split;
  from.splitDim = 0;
  from.shares = {3, 1};
  from.members = {{{0, 1}, {{Axis::split(1, 2)}}}, {{2}, {{}}}};
  std::vector<SwitchTensor> tensors = {
      tensor("w", {8, 6}, from, group({2, 0, 1}, {Axis::split(0, 3)})),
      tensor("v", {5}, group({1}, {}), group({0, 1, 2}, {Axis::split(0, 3)}))};
  for (bool relabel : {false, true}) {
    SwitchPlan p = plan(tensors, {}, relabel);
    EXPECT_EQ(p.totalBytes,
              relabel ? p.relabelledMinimum : p.identityMinimum);
    EXPECT_LE(p.relabelledMinimum, p.identityMinimum);
    expectLandsExactly(tensors, p, relabel ? 7 : 8);
  }
}

// The Hungarian method against every permutation, on seeded random
// matrices up to 7 x 7 (with ties: small costs).
TEST(SwitchPlanTest, AssignmentMatchesExhaustiveSearch) {
  std::mt19937 random(11);
  for (int trial = 0; trial < 300; ++trial) {
    int n = 1 + trial % 7;
    std::uniform_int_distribution<int64_t> cost(0, trial % 2 ? 5 : 1000);
    std::vector<std::vector<int64_t>> matrix(n, std::vector<int64_t>(n));
    for (auto &row : matrix)
      for (int64_t &c : row)
        c = cost(random);
    absl::StatusOr<Ints> assignment = solveAssignment(matrix);
    ASSERT_TRUE(assignment.ok());
    Ints columns(*assignment);
    std::sort(columns.begin(), columns.end());
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(columns[i], i) << "not a permutation";
    int64_t total = 0;
    for (int i = 0; i < n; ++i)
      total += matrix[i][(*assignment)[i]];
    Ints perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    int64_t best = INT64_MAX;
    do {
      int64_t sum = 0;
      for (int i = 0; i < n; ++i)
        sum += matrix[i][perm[i]];
      best = std::min(best, sum);
    } while (std::next_permutation(perm.begin(), perm.end()));
    EXPECT_EQ(total, best) << "trial " << trial;
  }
  EXPECT_FALSE(solveAssignment({{1, 2}, {3}}).ok());
  EXPECT_FALSE(solveAssignment({{1, -2}, {3, 4}}).ok());
  EXPECT_TRUE(solveAssignment({}).ok());
}

// Relabelling on random layout pairs of 2-6 devices against an exhaustive
// search over the permutations of the target's devices (each scored by an
// element-by-element count of what the device lacks): the plan moves the
// exhaustive minimum, and the data land exactly.
TEST(SwitchPlanTest, RelabellingMatchesExhaustiveSearch) {
  std::mt19937 random(5);
  auto randomLayout = [&](int64_t n) {
    Ints devices(n);
    std::iota(devices.begin(), devices.end(), 0);
    std::shuffle(devices.begin(), devices.end(), random);
    std::vector<std::vector<Axis>> choices = {
        {Axis::split(0, n)}, {Axis::split(1, n)}, {Axis::duplicate(n)}};
    if (n == 4)
      choices.push_back({Axis::split(0, 2), Axis::split(1, 2)});
    if (n == 4)
      choices.push_back({Axis::duplicate(2), Axis::split(1, 2)});
    if (n == 6)
      choices.push_back({Axis::split(1, 3), Axis::duplicate(2)});
    return group(devices, choices[random() % choices.size()]);
  };
  int renamed = 0;
  for (int trial = 0; trial < 60; ++trial) {
    int64_t n = 2 + trial % 5;
    std::vector<SwitchTensor> tensors = {
        tensor("a", {12, 12}, randomLayout(n), randomLayout(n)),
        tensor("b", {6, 24}, randomLayout(n), randomLayout(n))};
    SwitchPlan p = plan(tensors, {}, /*relabel=*/true);
    Ints perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    int64_t best = INT64_MAX, identity = 0;
    for (int64_t r = 0; r < n; ++r)
      identity += lackOf(tensors, r, r);
    do {
      int64_t sum = 0;
      for (int64_t r = 0; r < n; ++r)
        sum += lackOf(tensors, r, perm[r]);
      best = std::min(best, sum);
    } while (std::next_permutation(perm.begin(), perm.end()));
    EXPECT_EQ(p.relabelledMinimum, best) << "trial " << trial;
    EXPECT_EQ(p.identityMinimum, identity) << "trial " << trial;
    EXPECT_EQ(p.totalBytes, best) << "trial " << trial;
    EXPECT_EQ(p.maxReceived, p.maxReceivedBound);
    EXPECT_GE(p.maxSent, p.maxSentBound);
    for (auto &[role, device] : p.relabelling)
      renamed += role != device;
    expectLandsExactly(tensors, p, 100 + trial);
  }
  // The search is not idle: some trials rename devices.
  EXPECT_GT(renamed, 0);
}

// Devices of another node or kind are not interchangeable: the relabelling
// stays inside each (node, kind) class even where swapping across would
// move less.
TEST(SwitchPlanTest, RelabellingKeepsNodesAndKinds) {
  std::vector<SwitchTensor> tensors = {
      tensor("w", {8, 8}, group({0, 1}, {Axis::split(0, 2)}),
             group({0, 1}, {Axis::split(0, 2)}), 8)};
  // Reversed order in the target: relabelling within one class undoes it.
  tensors[0].to = group({1, 0}, {Axis::split(0, 2)});
  SwitchPlan one = plan(tensors, {}, /*relabel=*/true);
  EXPECT_EQ(one.totalBytes, 0);
  Topology two;
  two.nodeOf = {{0, 0}, {1, 1}};
  SwitchPlan kept = plan(tensors, two, /*relabel=*/true);
  EXPECT_EQ(kept.totalBytes, 512);
  EXPECT_EQ(kept.relabelledMinimum, 512);
  Topology kinds;
  kinds.kindOf = {{0, "h200"}, {1, "910b"}};
  EXPECT_EQ(plan(tensors, kinds, /*relabel=*/true).totalBytes, 512);
}

TEST(SwitchPlanTest, BadInputNamesTheTensor) {
  std::vector<SwitchTensor> partial = {
      tensor("w", {4, 4}, group({0, 1}, {Axis::partial(2)}),
             group({0, 1}, {Axis::duplicate(2)}))};
  absl::StatusOr<SwitchPlan> p = planSwitch(partial, {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "tensor 'w': the source layout #hspmd.union<{[0, 1]: [P(sum):2]}> "
            "holds partial sums on device 0; a switch moves complete values");
  std::vector<SwitchTensor> misfit = {
      tensor("v", {4}, group({0, 1}, {Axis::split(1, 2)}),
             group({0, 1}, {Axis::duplicate(2)}))};
  p = planSwitch(misfit, {});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(std::string(p.status().message())
                .find("tensor 'v': the source layout"),
            std::string::npos)
      << p.status().message();
}

// A rank's side of the exchange (what the driver runs between MPI ranks):
// DP2 on devices 0, 1 to TP4 on 0-3 of a [4, 4] f64 weight. Each of devices
// 2 and 3 lacks its 4 columns (64 bytes) and is sent them in one message;
// 0 and 1 keep theirs. The packed buffers are the messages, in plan order,
// of the plan's sizes; unpacking them gives each device its target shard
// exactly; the wrong buffers or shards are errors, not a crash.
TEST(SwitchPlanTest, PackAndUnpackPerDevice) {
  std::vector<SwitchTensor> tensors = {
      tensor("w", {4, 4}, group({0, 1}, {Axis::duplicate(2)}),
             group({0, 1, 2, 3}, {Axis::split(1, 4)}))};
  SwitchPlan p = plan(tensors);
  ASSERT_EQ(p.messages.size(), 2u);
  EXPECT_EQ(p.totalBytes, 64);
  std::vector<double> global(16);
  std::iota(global.begin(), global.end(), 1.0);
  const char *bytes = reinterpret_cast<const char *>(global.data());
  auto own = [&](int64_t device) {
    std::vector<ShardBytes> shards(1);
    if (device < 2)
      shards[0] = {bytes, 128};
    return shards;
  };
  std::map<int64_t, std::vector<std::vector<char>>> inbox;
  for (int64_t device = 0; device < 4; ++device) {
    auto packed = packSwitch(p, tensors, device, own(device));
    ASSERT_TRUE(packed.ok()) << packed.status().message();
    size_t k = 0;
    for (const SwitchMessage &message : p.messages)
      if (message.source == device) {
        ASSERT_LT(k, packed->size());
        EXPECT_EQ(static_cast<int64_t>((*packed)[k].size()), message.bytes);
        inbox[message.destination].push_back((*packed)[k++]);
      }
    EXPECT_EQ(k, packed->size());
  }
  for (int64_t device = 0; device < 4; ++device) {
    auto shards = unpackSwitch(p, tensors, device, own(device), inbox[device]);
    ASSERT_TRUE(shards.ok()) << shards.status().message();
    std::vector<double> expected;
    for (int64_t row = 0; row < 4; ++row)
      expected.push_back(global[row * 4 + device]);
    ASSERT_EQ((*shards)[0].size(), 32u);
    EXPECT_EQ(std::memcmp((*shards)[0].data(), expected.data(), 32), 0)
        << "device " << device;
  }
  // Device 2 given no message, a short one, or a shard it does not hold.
  auto none = unpackSwitch(p, tensors, 2, own(2), {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(),
            "device 2 expects 32 bytes from device " +
                std::to_string(p.messages[0].destination == 2
                                   ? p.messages[0].source
                                   : p.messages[1].source));
  auto shortOne =
      unpackSwitch(p, tensors, 2, own(2), {std::vector<char>(8)});
  EXPECT_FALSE(shortOne.ok());
  auto extra = packSwitch(p, tensors, 3, {ShardBytes{bytes, 128}});
  ASSERT_FALSE(extra.ok());
  EXPECT_EQ(extra.status().message(),
            "tensor 'w': device 3 holds nothing of it before the switch");
  auto wrongSize = packSwitch(p, tensors, 0, {ShardBytes{bytes, 64}});
  ASSERT_FALSE(wrongSize.ok());
  EXPECT_EQ(wrongSize.status().message(),
            "tensor 'w': device 0 needs a source shard of 128 bytes");
}

// A tensor with no elements switches too (every device's shard empty).
TEST(SwitchPlanTest, EmptyTensorSwitches) {
  std::vector<SwitchTensor> tensors = {
      tensor("e", {0, 4}, group({0, 1}, {Axis::duplicate(2)}),
             group({0, 1}, {Axis::split(1, 2)}))};
  SwitchPlan p = plan(tensors);
  EXPECT_EQ(p.totalBytes, 0);
  EXPECT_TRUE(p.messages.empty());
  std::vector<std::map<int64_t, std::vector<char>>> sources(1);
  sources[0][0] = {};
  sources[0][1] = {};
  auto landed = executeSwitch(p, tensors, sources);
  ASSERT_TRUE(landed.ok()) << landed.status().message();
  EXPECT_TRUE((*landed)[0].at(0).empty());
  EXPECT_TRUE((*landed)[0].at(1).empty());
}

} // namespace
