//===- ReshardLoweringTest.cpp - Reshard lowering, checked numerically ----===//
//
// Every reshard that hspmd-lower-reshards lowers must move data so that each
// device ends up with exactly the shard the target layout promises. For a
// (from, to) pair on a group of n devices and a tensor shape, the test
//
//   1. lowers `hspmd.reshard %x from <from> to <to>` with the pass;
//   2. turns the global-view chain into a local-view function: each
//      collective's result type is one device's shard under its `to` layout
//      (getShard sizes), its layouts dropped; the argument's layout is
//      `from`, the result's `to` (set on the global function);
//   3. runs it on n simulated ranks with runSharded from a random global f64
//      tensor and requires the assembled result to equal the input bitwise
//      (a partial source is cut by extractShard as contribution 0 = the
//      block, the others the reduction's identity, so the reduced value is
//      the input again);
//   4. requires the bytes each rank sent to equal, summed over the steps,
//      with k the sub-group size, B the rank's buffer bytes before the step
//      and c_r the bytes of chunk r (of k near-equal chunks, the first
//      n mod k one element longer) of the flattened buffer, r the rank's
//      position in its sub-group:
//        all_gather (k-1)B, reduce_scatter and all_to_all (B/k)(k-1),
//        all_reduce (B - c_r) + (k-1)c_r, permute B unless the rank is its
//        own source, local_slice 0.
//
// Named cases (data-parallel gradients, Megatron, sequence parallelism,
// ZeRO, the design's [P(sum):2, S1:2] -> [S0:4], an axis-order swap) also pin
// the chain of collectives; a seeded random property test covers several
// hundred pairs on groups of 1 to 8 devices, and requires that every pair
// whose layouts share a mesh and whose target holds no partial the source
// lacks is lowered.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"
#include "dialects/hspmd/IR/HSPMDMesh.h"
#include "dialects/hspmd/IR/HSPMDOps.h"
#include "dialects/hspmd/IR/HSPMDTransitions.h"
#include "dialects/nn/IR/NNDialect.h"
#include "runtime/simulator/Sharding.h"
#include "runtime/simulator/Simulator.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;
using loom::interp::Tensor;

namespace {

std::string shapeText(ArrayRef<int64_t> shape) {
  std::string text;
  for (int64_t size : shape)
    text += std::to_string(size) + "x";
  return "tensor<" + text + "f64>";
}

std::string groupText(int64_t n) {
  std::string text = "[";
  for (int64_t i = 0; i < n; ++i)
    text += (i ? ", " : "") + std::to_string(i);
  return text + "]";
}

/// What one lowering did.
struct Outcome {
  bool lowered = false;
  /// The collectives, e.g. "reduce_scatter", in order.
  std::vector<std::string> kinds;
  /// The mesh axes of each collective.
  std::vector<std::vector<int64_t>> axes;
  /// Bytes sent per rank: simulated and by the formula.
  std::vector<int64_t> simulated, expected;
  std::string error;
};

class ReshardLoweringTest : public ::testing::Test {
protected:
  ReshardLoweringTest()
      : handler(&context, [this](Diagnostic &diag) {
          messages += diag.str() + "\n";
        }) {
    context.loadDialect<HSPMDDialect, nn::NNDialect, func::FuncDialect>();
  }

  /// Lowers and runs the reshard from `from` to `to` (states bodies such
  /// as "[S0:2, D:2]") on `n` devices for `shape`; fails the test on any
  /// numeric or byte mismatch.
  Outcome check(int64_t n, const std::string &from, const std::string &to,
                ArrayRef<int64_t> shape, uint64_t seed = 1) {
    Outcome outcome;
    messages.clear();
    std::string type = shapeText(shape), group = groupText(n);
    std::string fromUnion = "#hspmd.union<{" + group + ": " + from + "}>";
    std::string toUnion = "#hspmd.union<{" + group + ": " + to + "}>";
    std::string text = "func.func @global(%x: " + type + ") -> " + type +
                       " {\n  %y = hspmd.reshard %x : " + type + " from " +
                       fromUnion + " to " + toUnion + "\n  return %y : " +
                       type + "\n}\n";
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
    if (!module) {
      ADD_FAILURE() << "cannot parse\n" << text << messages;
      return outcome;
    }
    PassManager pm(&context);
    pm.addPass(createReshardLoweringPass());
    if (failed(pm.run(*module))) {
      outcome.error = messages;
      return outcome;
    }
    auto global = module->lookupSymbol<func::FuncOp>("global");
    if (!global.getBody().front().getOps<ReshardOp>().empty()) {
      outcome.error = "reshard kept";
      return outcome;
    }
    outcome.lowered = true;
    auto fromAttr = cast<UnionAttr>(parseAttribute(fromUnion, &context));
    auto toAttr = cast<UnionAttr>(parseAttribute(toUnion, &context));

    // The local view, in a module of its own.
    OwningOpRef<ModuleOp> localModule = ModuleOp::create(UnknownLoc::get(&context));
    auto local = cast<func::FuncOp>(global->clone());
    local.setSymName("local");
    localModule->push_back(local);
    auto localType = [&](UnionAttr layout) {
      std::optional<Shard> shard = getShard(layout, shape, 0);
      EXPECT_TRUE(shard.has_value());
      return RankedTensorType::get(shard ? ArrayRef<int64_t>(shard->sizes)
                                         : shape,
                                   Float64Type::get(&context));
    };
    // Expected bytes per rank, from the formula.
    outcome.expected.assign(n, 0);
    int64_t elementBytes = 8;
    local.getBody().front().getArgument(0).setType(localType(fromAttr));
    for (Operation &op : llvm::make_early_inc_range(local.getBody().front())) {
      FailureOr<CollectiveStep> step = getCollectiveStep(&op);
      if (failed(step))
        continue;
      outcome.kinds.push_back(getCollectiveName(step->kind).str());
      outcome.axes.emplace_back(step->axes.begin(), step->axes.end());
      auto stepFrom = op.getAttrOfType<UnionAttr>("from");
      auto stepTo = op.getAttrOfType<UnionAttr>("to");
      EXPECT_TRUE(stepFrom && stepTo);
      auto meshAttr = op.getAttrOfType<DenseI64ArrayAttr>("mesh");
      ArrayRef<int64_t> mesh = meshAttr.asArrayRef();
      int64_t k = 1;
      for (int64_t axis : step->axes)
        k *= mesh[axis];
      int64_t bytes = localType(stepFrom).getNumElements() * elementBytes;
      for (const SmallVector<int64_t> &members :
           getCollectiveSubgroups(mesh, step->axes)) {
        for (auto [r, device] : llvm::enumerate(members)) {
          int64_t sent = 0;
          switch (step->kind) {
          case CollectiveKind::AllGather:
            sent = (k - 1) * bytes;
            break;
          case CollectiveKind::ReduceScatter:
          case CollectiveKind::AllToAll:
            sent = bytes / k * (k - 1);
            break;
          case CollectiveKind::AllReduce: {
            int64_t elements = bytes / elementBytes;
            int64_t own = (elements / k +
                           (static_cast<int64_t>(r) < elements % k ? 1 : 0)) *
                          elementBytes;
            sent = bytes - own + (k - 1) * own;
            break;
          }
          case CollectiveKind::Permute: {
            // The rank's digits over the permuted axes; its source has
            // digit i equal to its digit perm[i].
            std::vector<int64_t> digits(step->axes.size());
            int64_t rest = r;
            for (int64_t i = step->axes.size() - 1; i >= 0; --i) {
              digits[i] = rest % mesh[step->axes[i]];
              rest /= mesh[step->axes[i]];
            }
            bool self = true;
            for (auto [i, p] : llvm::enumerate(step->perm))
              self &= digits[i] == digits[p];
            sent = self ? 0 : bytes;
            break;
          }
          case CollectiveKind::LocalSlice:
          case CollectiveKind::MakePartial:
            sent = 0;
            break;
          }
          outcome.expected[device] += sent;
        }
      }
      for (StringRef name : {"from", "to", "hspmd.operand_layouts",
                             "hspmd.result_layouts"})
        op.removeAttr(name);
      op.getResult(0).setType(localType(stepTo));
    }
    local.setFunctionType(FunctionType::get(
        &context, {localType(fromAttr)}, {localType(toAttr)}));
    // The global layouts go on the global function (runSharded reads them
    // there; on the local one they would not fit the local types).
    global.setArgAttr(0, "hspmd.layout", fromAttr);
    global.setResultAttr(0, "hspmd.layout", toAttr);
    // Each local-view collective checks its shapes (the function's
    // hspmd.layout attributes describe global types, so the function as a
    // whole is not verified).
    for (Operation &op : local.getBody().front())
      if (succeeded(getCollectiveStep(&op)) && failed(verify(&op))) {
        ADD_FAILURE() << "the local view does not verify:\n" << messages;
        return outcome;
      }

    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> dist(-4.0, 4.0);
    int64_t elements = 1;
    for (int64_t size : shape)
      elements *= size;
    std::vector<double> values(elements);
    for (double &value : values)
      value = dist(rng);
    Tensor input = Tensor::fromValues<double>(shape, values);

    loom::sim::Simulator simulator(*localModule, n);
    auto results = loom::sim::runSharded(simulator, local, global, {input});
    if (failed(results)) {
      ADD_FAILURE() << from << " -> " << to << " on " << n
                    << " devices: the run failed:\n"
                    << messages;
      return outcome;
    }
    ArrayRef<double> got = (*results)[0].values<double>();
    EXPECT_EQ(got.size(), values.size());
    bool same = got.size() == values.size() &&
                std::memcmp(got.data(), values.data(),
                            values.size() * sizeof(double)) == 0;
    EXPECT_TRUE(same) << from << " -> " << to << " on " << n << " devices, "
                      << type << ": the result differs from the input";
    for (int64_t r = 0; r < n; ++r)
      outcome.simulated.push_back(simulator.getStats(r).getBytesSent());
    EXPECT_EQ(outcome.simulated, outcome.expected)
        << from << " -> " << to << " on " << n << " devices, " << type;
    return outcome;
  }

  MLIRContext context;
  ScopedDiagnosticHandler handler;
  std::string messages;
};

using Kinds = std::vector<std::string>;

TEST_F(ReshardLoweringTest, DataParallelGradientAllReduce) {
  Outcome outcome = check(4, "[P(sum):4]", "[D:4]", {8, 4});
  EXPECT_EQ(outcome.kinds, Kinds{"all_reduce"});
  // 32 elements, 4 chunks of 8: (256 - 64) + 3 * 64 = 384 bytes per rank.
  EXPECT_EQ(outcome.simulated, std::vector<int64_t>(4, 384));
}

TEST_F(ReshardLoweringTest, MegatronRowParallelOutput) {
  EXPECT_EQ(check(2, "[P(sum):2]", "[D:2]", {8, 16}).kinds,
            Kinds{"all_reduce"});
  // 2-D: data parallel on mesh axis 0, the row-parallel partial on axis 1.
  Outcome outcome = check(4, "[S0:2, P(sum):2]", "[S0:2, D:2]", {8, 16});
  EXPECT_EQ(outcome.kinds, Kinds{"all_reduce"});
}

TEST_F(ReshardLoweringTest, SequenceParallel) {
  // The row-parallel output reduce-scattered along the sequence ...
  Outcome scatter = check(4, "[P(sum):4]", "[S0:4]", {16, 8});
  EXPECT_EQ(scatter.kinds, Kinds{"reduce_scatter"});
  // 16x8 f64 = 1024 bytes, each rank sends 3 blocks of 256.
  EXPECT_EQ(scatter.simulated, std::vector<int64_t>(4, 768));
  // ... and gathered back before the next column-parallel matmul.
  Outcome gather = check(4, "[S0:4]", "[D:4]", {16, 8});
  EXPECT_EQ(gather.kinds, Kinds{"all_gather"});
  EXPECT_EQ(gather.simulated, std::vector<int64_t>(4, 3 * 256));
}

TEST_F(ReshardLoweringTest, ZeroShardedOptimizer) {
  EXPECT_EQ(check(8, "[P(sum):8]", "[S0:8]", {16, 4}).kinds,
            Kinds{"reduce_scatter"});
  EXPECT_EQ(check(8, "[S0:8]", "[D:8]", {16, 4}).kinds, Kinds{"all_gather"});
  // With tensor parallelism on the slow axis: ZeRO over the fast one.
  EXPECT_EQ(check(4, "[S1:2, P(sum):2]", "[S1:2, S0:2]", {8, 8}).kinds,
            Kinds{"reduce_scatter"});
}

TEST_F(ReshardLoweringTest, PartialAndSplitToFourWaySplit) {
  // docs/architecture.md's example: a reduce-scatter then an all-to-all.
  Outcome outcome = check(4, "[P(sum):2, S1:2]", "[S0:4]", {8, 8});
  EXPECT_EQ(outcome.kinds, (Kinds{"reduce_scatter", "all_to_all"}));
  // 8x8 f64 = 512 bytes; the source block is 256, scattered over 2: 128;
  // the all-to-all of a 128-byte block over 2 sends 64.
  EXPECT_EQ(outcome.simulated, std::vector<int64_t>(4, 128 + 64));
}

TEST_F(ReshardLoweringTest, AxisOrderSwapIsOnePermute) {
  Outcome outcome = check(4, "[S0:2, S1:2]", "[S1:2, S0:2]", {8, 8});
  EXPECT_EQ(outcome.kinds, Kinds{"permute"});
  // Devices 1 and 2 swap their 128-byte blocks; 0 and 3 keep theirs.
  EXPECT_EQ(outcome.simulated, (std::vector<int64_t>{0, 128, 128, 0}));
}

TEST_F(ReshardLoweringTest, GroupsEqualChangesIntoOneCollective) {
  EXPECT_EQ(check(4, "[S0:4]", "[D:4]", {8, 2}).kinds, Kinds{"all_gather"});
  EXPECT_EQ(check(4, "[D:4]", "[S1:4]", {2, 8}).kinds, Kinds{"local_slice"});
  // On the mesh [2, 2, 2]: (S0, S0, D) -> (D, S1, S1). A free slice makes
  // the last axis split too, one all-to-all over mesh axes [1, 2] moves both
  // their splits to dimension 1, and one all-gather undoes axis 0.
  Outcome outcome = check(8, "[S0:4, D:2]", "[D:2, S1:4]", {8, 8});
  EXPECT_EQ(outcome.kinds, (Kinds{"local_slice", "all_to_all", "all_gather"}));
  EXPECT_EQ(outcome.axes,
            (std::vector<std::vector<int64_t>>{{2}, {1, 2}, {0}}));
  // 8x8 f64 = 512 bytes: the 128-byte block is cut to 64 bytes; the
  // all-to-all over 4 sends 3 blocks of 16; the all-gather over 2 sends 64.
  EXPECT_EQ(outcome.simulated, std::vector<int64_t>(8, 48 + 64));
}

TEST_F(ReshardLoweringTest, MaxAndMinPartials) {
  EXPECT_EQ(check(2, "[P(max):2]", "[D:2]", {4, 4}).kinds,
            Kinds{"all_reduce"});
  EXPECT_EQ(check(4, "[P(min):2, D:2]", "[S1:2, S0:2]", {4, 4}).lowered,
            true);
}

TEST_F(ReshardLoweringTest, PartialSumsAreMadeLocally) {
  EXPECT_EQ(check(2, "[D:2]", "[P(sum):2]", {4}).kinds,
            Kinds{"make_partial"});
  Outcome split = check(4, "[S0:2, S1:2]", "[S0:2, P(sum):2]", {4, 4});
  EXPECT_EQ(split.kinds, Kinds{"make_partial"});
  EXPECT_EQ(split.simulated, std::vector<int64_t>(4, 0));
  // Other pending reductions are never made.
  Outcome max = check(2, "[D:2]", "[P(max):2]", {4});
  EXPECT_FALSE(max.lowered);
  EXPECT_NE(max.error.find("no other pending reduction"), std::string::npos)
      << max.error;
}

//===----------------------------------------------------------------------===//
// Property test
//===----------------------------------------------------------------------===//

/// Random states on `n` devices for a tensor of `rank`: n's prime factors
/// grouped at random into axes, each axis a distinct kind.
std::vector<Axis> randomStates(std::mt19937_64 &rng, int64_t n, int64_t rank,
                               ReductionKind reduction) {
  std::vector<int64_t> primes;
  for (int64_t rest = n, p = 2; rest > 1; ++p)
    while (rest % p == 0) {
      primes.push_back(p);
      rest /= p;
    }
  std::shuffle(primes.begin(), primes.end(), rng);
  std::vector<int64_t> degrees;
  for (int64_t prime : primes) {
    if (!degrees.empty() && rng() % 2)
      degrees.back() *= prime;
    else
      degrees.push_back(prime);
  }
  // Kinds: splits of each dimension, duplicate, partial.
  std::vector<int64_t> kinds;
  for (int64_t k = 0; k < rank + 2; ++k)
    kinds.push_back(k);
  std::shuffle(kinds.begin(), kinds.end(), rng);
  std::vector<Axis> axes;
  for (auto [i, degree] : llvm::enumerate(degrees)) {
    if (i >= kinds.size())
      break;
    int64_t kind = kinds[i];
    if (kind < rank)
      axes.push_back(Axis::split(kind, degree));
    else if (kind == rank)
      axes.push_back(Axis::duplicate(degree));
    else
      axes.push_back(Axis::partial(degree, reduction));
  }
  // Too few kinds for the factors: fold the rest into the last axis.
  int64_t product = 1;
  for (const Axis &axis : axes)
    product *= axis.degree;
  if (!axes.empty())
    axes.back().degree *= n / product;
  return axes;
}

std::string statesText(ArrayRef<Axis> axes) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  llvm::interleaveComma(axes, os, [&](const Axis &axis) { os << axis; });
  os << ']';
  return text;
}

TEST_F(ReshardLoweringTest, RandomPairsAreLoweredExactly) {
  std::mt19937_64 rng(20261129);
  int64_t checked = 0, skipped = 0, multiStep = 0;
  for (int trial = 0; trial < 400; ++trial) {
    int64_t n = 1 + rng() % 8;
    int64_t rank = 1 + rng() % 3;
    ReductionKind reduction =
        std::array{ReductionKind::Sum, ReductionKind::Max,
                   ReductionKind::Min}[rng() % 3];
    std::vector<Axis> from = randomStates(rng, n, rank, reduction);
    std::vector<Axis> to = randomStates(rng, n, rank, reduction);
    // Targets rarely keep a partial; drop it most of the time so that most
    // pairs are lowerable.
    if (rng() % 4 != 0)
      for (Axis &axis : to)
        if (axis.isPartial())
          axis = Axis::duplicate(axis.degree);
    // A duplicate axis may now appear twice; merge by making it a split of
    // an unused dimension or skip the pair.
    int duplicates = llvm::count_if(to, [](const Axis &a) { return a.isDuplicate(); });
    if (duplicates > 1) {
      ++skipped;
      continue;
    }
    auto fromStates = DistStatesAttr::get(&context, from);
    auto toStates = DistStatesAttr::get(&context, to);
    std::vector<int64_t> shape(rank);
    for (int64_t d = 0; d < rank; ++d) {
      int64_t a = fromStates.getSplitDegree(d), b = toStates.getSplitDegree(d);
      shape[d] = std::lcm(a, b) * (1 + rng() % 2);
    }
    // Whether the pass must lower it: a common mesh, and no partial in the
    // target that the source does not have on the same mesh axes, but for
    // partial sums, which are made locally from a split or a duplicate.
    bool lowerable = false;
    FailureOr<Mesh> mesh = refineMesh({fromStates, toStates});
    if (succeeded(mesh)) {
      FailureOr<MeshLayout> src = toMeshLayout(fromStates, *mesh);
      FailureOr<MeshLayout> dst = toMeshLayout(toStates, *mesh);
      lowerable = succeeded(src) && succeeded(dst);
      for (size_t axis = 0; lowerable && axis < dst->roles.size(); ++axis)
        if (dst->roles[axis].isPartial() &&
            src->roles[axis] != dst->roles[axis] &&
            (dst->roles[axis].reduction != ReductionKind::Sum ||
             src->roles[axis].isPartial()))
          lowerable = false;
    }
    std::string fromText = statesText(from), toText = statesText(to);
    Outcome outcome = check(n, fromText, toText, shape, trial);
    if (!lowerable) {
      EXPECT_FALSE(outcome.lowered) << fromText << " -> " << toText;
      ++skipped;
      continue;
    }
    EXPECT_TRUE(outcome.lowered)
        << fromText << " -> " << toText << " on " << n << " devices: "
        << outcome.error;
    if (HasFailure())
      return;
    ++checked;
    multiStep += outcome.kinds.size() > 1;
  }
  EXPECT_GE(checked, 300);
  EXPECT_GE(multiStep, 30);
  llvm::errs() << "checked " << checked << " pairs (" << multiStep
               << " with several steps), skipped " << skipped << "\n";
}

} // namespace
