//===- HSPMDDualityTest.cpp - Unit tests of gradient layouts --------------===//
//
// getGradientStates / getGradientLayout: exact duals of hand-written layouts,
// the layouts without a dual and their messages, and the property that
// defines the dual: on every device, the gradient's shard is the same block
// with replicas and partial contributions swapped (the i-th of n replicas of
// a value holds the i-th of n partial sums of its gradient, and the other
// way round).
//
//===----------------------------------------------------------------------===//

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/hspmd/IR/HSPMDLayout.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <optional>
#include <string>
#include <vector>

using namespace mlir;
using namespace loom::hspmd;

namespace {

std::string printAttr(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

class HSPMDDualityTest : public ::testing::Test {
protected:
  HSPMDDualityTest() : ctx(MLIRContext::Threading::DISABLED) {
    ctx.loadDialect<HSPMDDialect>();
  }

  Attribute parse(llvm::StringRef text) {
    Attribute attr = parseAttribute(text, &ctx);
    EXPECT_TRUE(attr) << "failed to parse " << text.str();
    return attr;
  }
  UnionAttr parseUnion(llvm::StringRef body) {
    return dyn_cast_or_null<UnionAttr>(
        parse(("#hspmd.union<" + body + ">").str()));
  }
  DistStatesAttr parseStates(llvm::StringRef body) {
    return dyn_cast_or_null<DistStatesAttr>(
        parse(("#hspmd.states<" + body + ">").str()));
  }

  /// Expects the dual of the union `body` to print as the union `dualBody`
  /// and to verify.
  void expectDual(llvm::StringRef body, llvm::StringRef dualBody) {
    UnionAttr layout = parseUnion(body);
    ASSERT_TRUE(layout);
    UnionAttr dual = getGradientLayout(layout);
    ASSERT_TRUE(dual) << "no dual for " << body.str();
    EXPECT_EQ(printAttr(dual), ("#hspmd.union<" + dualBody + ">").str());
    // The result satisfies the union's verifier.
    EXPECT_TRUE(succeeded(UnionAttr::verify(
        [&]() { return emitError(UnknownLoc::get(&ctx)); },
        dual.getRelation(), dual.getSplitDim(), dual.getReduction(),
        dual.getShares(), dual.getExplicitSizes(), dual.getGroups(),
        dual.getStates())));
  }

  /// Expects `layout` to have no dual, with one diagnostic containing
  /// `message`.
  template <typename LayoutT>
  void expectNoDual(LayoutT layout, llvm::StringRef message) {
    ASSERT_TRUE(layout);
    std::vector<std::string> errors;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      errors.push_back(diag.str());
      return success();
    });
    auto dual = getGradientLayout(layout, [&]() {
      return emitError(UnknownLoc::get(&ctx));
    });
    EXPECT_FALSE(dual) << printAttr(layout);
    ASSERT_EQ(errors.size(), 1u) << printAttr(layout);
    EXPECT_NE(errors.front().find(message.str()), std::string::npos)
        << "'" << errors.front() << "' lacks '" << message.str() << "'";
    // Without emitError it fails quietly.
    EXPECT_FALSE(getGradientLayout(layout));
    EXPECT_EQ(errors.size(), 1u);
  }

  /// The property that defines the dual, device by device, for a tensor of
  /// `shape`; and the dual of the dual is the layout again.
  void expectShardsSwapRoles(llvm::StringRef body,
                             llvm::ArrayRef<int64_t> shape) {
    UnionAttr layout = parseUnion(body);
    ASSERT_TRUE(layout);
    UnionAttr dual = getGradientLayout(layout);
    ASSERT_TRUE(dual) << body.str();
    for (int64_t device : layout.getAllDevices()) {
      std::optional<Shard> value = getShard(layout, shape, device);
      std::optional<Shard> grad = getShard(dual, shape, device);
      ASSERT_TRUE(value && grad) << body.str() << " device " << device;
      EXPECT_EQ(grad->offsets, value->offsets) << body.str();
      EXPECT_EQ(grad->sizes, value->sizes) << body.str();
      EXPECT_EQ(grad->numPartials, value->numReplicas) << body.str();
      EXPECT_EQ(grad->partialIndex, value->replicaIndex) << body.str();
      EXPECT_EQ(grad->numReplicas, value->numPartials) << body.str();
      EXPECT_EQ(grad->replicaIndex, value->partialIndex) << body.str();
      if (grad->numPartials > 1) {
        EXPECT_EQ(grad->reduction, ReductionKind::Sum) << body.str();
      }
    }
    UnionAttr dualOfDual = getGradientLayout(dual);
    ASSERT_TRUE(dualOfDual) << body.str();
    EXPECT_TRUE(areEquivalent(dualOfDual, layout, shape))
        << printAttr(dualOfDual) << " vs " << body.str();
  }

  MLIRContext ctx;
};

//===----------------------------------------------------------------------===//
// Distributed states
//===----------------------------------------------------------------------===//

TEST_F(HSPMDDualityTest, StatesSwapDuplicateAndPartialSum) {
  EXPECT_EQ(getGradientStates(parseStates("[S0:2, D:2]")),
            parseStates("[S0:2, P(sum):2]"));
  EXPECT_EQ(getGradientStates(parseStates("[P(sum):2, S1:2]")),
            parseStates("[D:2, S1:2]"));
  // Both at once: each keeps its position in the order.
  EXPECT_EQ(getGradientStates(parseStates("[D:2, S0:2, P(sum):4]")),
            parseStates("[P(sum):2, S0:2, D:4]"));
  // Splits only, or a single device: unchanged.
  EXPECT_EQ(getGradientStates(parseStates("[S1:4, S0:2]")),
            parseStates("[S1:4, S0:2]"));
  EXPECT_EQ(getGradientStates(parseStates("[]")), parseStates("[]"));
}

TEST_F(HSPMDDualityTest, StatesDualIsAnInvolution) {
  for (llvm::StringRef body :
       {"[S0:2, D:2]", "[P(sum):2, S1:2]", "[D:3]", "[S2:2, P(sum):2, D:2]"}) {
    DistStatesAttr states = parseStates(body);
    EXPECT_EQ(getGradientStates(getGradientStates(states)), states) << body.str();
  }
}

TEST_F(HSPMDDualityTest, StatesWithOtherReductionsHaveNoDual) {
  for (llvm::StringRef kind : {"max", "min", "mean"}) {
    DistStatesAttr states =
        parseStates(("[S0:2, P(" + kind + "):2]").str());
    ASSERT_TRUE(states);
    std::vector<std::string> errors;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      errors.push_back(diag.str());
      return success();
    });
    EXPECT_FALSE(getGradientStates(
        states, [&]() { return emitError(UnknownLoc::get(&ctx)); }));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors.front(),
              ("axis P(" + kind +
               "):2 has no dual: only a pending sum (P(sum)) turns into a "
               "duplicate in the gradient")
                  .str());
  }
}

//===----------------------------------------------------------------------===//
// Unions
//===----------------------------------------------------------------------===//

TEST_F(HSPMDDualityTest, SingleGroup) {
  expectDual("{[0, 1, 2, 3]: [S0:2, D:2]}", "{[0, 1, 2, 3]: [S0:2, P(sum):2]}");
  expectDual("{[0, 1]: [P(sum):2]}", "{[0, 1]: [D:2]}");
  expectDual("{[0, 1, 2, 3]: [S1:4]}", "{[0, 1, 2, 3]: [S1:4]}");
}

TEST_F(HSPMDDualityTest, SplitUnionKeepsItsShares) {
  // Heterogeneous: 4 devices doing DP x TP take 3/4 of the batch, 2 devices
  // doing TP take 1/4. Splits stay; the replicated half of the first group
  // turns partial, and the second group holds its (complete) gradient as a
  // degree-1 partial sum so that the members agree on the pending reduction.
  expectDual("split(0) shares [3, 1]: {[0, 1, 2, 3]: [D:2, S1:2]}, "
             "{[4, 5]: [S1:2]}",
             "split(0) shares [3, 1]: {[0, 1, 2, 3]: [P(sum):2, S1:2]}, "
             "{[4, 5]: [S1:2, P(sum):1]}");
  // Splits only: unchanged.
  expectDual("split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, "
             "{[4, 5]: [S1:2]}",
             "split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, "
             "{[4, 5]: [S1:2]}");
  // Explicit sizes stay explicit.
  expectDual("split(1) sizes [40, 24]: {[0, 1]: [D:2]}, {[2]: []}",
             "split(1) sizes [40, 24]: {[0, 1]: [P(sum):2]}, "
             "{[2]: [P(sum):1]}");
  // Partial members of a split union become duplicated.
  expectDual("split(0) shares [1, 1]: {[0, 1]: [P(sum):2]}, "
             "{[2, 3, 4, 5]: [P(sum):4]}",
             "split(0) shares [1, 1]: {[0, 1]: [D:2]}, "
             "{[2, 3, 4, 5]: [D:4]}");
}

TEST_F(HSPMDDualityTest, ReplicatedAndPartialUnionsSwap) {
  expectDual("replicated: {[0, 1]: [D:2]}, {[2, 3, 4, 5]: [S0:4]}",
             "partial(sum): {[0, 1]: [P(sum):2]}, {[2, 3, 4, 5]: [S0:4]}");
  expectDual("partial(sum): {[0, 1]: [P(sum):2]}, {[2, 3, 4, 5]: [S0:4]}",
             "replicated: {[0, 1]: [D:2]}, {[2, 3, 4, 5]: [S0:4]}");
  // The shares of a partial union (who did how much work) do not carry over
  // to a replicated gradient.
  expectDual("partial(sum) shares [3, 1]: {[0, 1, 2]: [S1:3]}, {[3]: []}",
             "replicated: {[0, 1, 2]: [S1:3]}, {[3]: []}");
}

TEST_F(HSPMDDualityTest, LayoutsWithoutADual) {
  expectNoDual(parseUnion("split(0) shares [1, 1]: {[0, 1]: [P(max):2]}, "
                          "{[2, 3]: [P(max):2]}"),
               "axis P(max):2 has no dual");
  expectNoDual(parseUnion("partial(max): {[0, 1]: [S0:2]}, {[2]: []}"),
               "a partial(max) union has no dual");
  // A group that duplicates its contribution to a cross-group sum would
  // hold a partial sum inside a replicated gradient.
  expectNoDual(parseUnion("partial(sum): {[0, 1]: [D:2]}, {[2, 3]: [S0:2]}"),
               "union member 0 duplicates its contribution to a partial(sum) "
               "union");
}

TEST_F(HSPMDDualityTest, ShardsSwapReplicasAndPartialSums) {
  std::vector<std::pair<const char *, std::vector<int64_t>>> cases = {
      {"{[0, 1, 2, 3]: [S0:2, D:2]}", {8, 4}},
      {"{[0, 1, 2, 3]: [P(sum):2, S1:2]}", {8, 4}},
      {"{[0, 1, 2, 3, 4, 5, 6, 7]: [D:2, S0:2, P(sum):2]}", {8, 4}},
      {"split(0) shares [3, 1]: {[0, 1, 2, 3]: [D:2, S1:2]}, {[4, 5]: [S1:2]}",
       {64, 8}},
      {"split(1) sizes [5, 3]: {[0, 1]: [P(sum):2]}, {[2]: [P(sum):1]}",
       {4, 8}},
      {"replicated: {[0, 1]: [D:2]}, {[2, 3, 4, 5]: [S0:4]}", {8, 4}},
      {"replicated: {[0, 1]: [S1:2]}, {[2, 3]: [D:2]}, {[4]: []}", {8, 4}},
      {"partial(sum): {[0, 1]: [P(sum):2]}, {[2, 3, 4, 5]: [S0:2, S1:2]}",
       {8, 4}},
  };
  for (const auto &[body, shape] : cases)
    expectShardsSwapRoles(body, shape);
}

//===----------------------------------------------------------------------===//
// Strategy sets and generic attributes
//===----------------------------------------------------------------------===//

TEST_F(HSPMDDualityTest, StrategySetDualisesEveryStrategy) {
  auto set = dyn_cast_or_null<StrategySetAttr>(
      parse("#hspmd.strategies<[\"tp\" = <{[0, 1, 2, 3]: [D:2, S1:2]}>, "
            "\"dp\" = <{[0, 1, 2, 3]: [S0:4]}>], optimizer = \"dp\">"));
  ASSERT_TRUE(set);
  StrategySetAttr dual = getGradientLayout(set);
  ASSERT_TRUE(dual);
  EXPECT_EQ(dual, parse("#hspmd.strategies<["
                        "\"tp\" = <{[0, 1, 2, 3]: [P(sum):2, S1:2]}>, "
                        "\"dp\" = <{[0, 1, 2, 3]: [S0:4]}>], "
                        "optimizer = \"dp\">"))
      << printAttr(dual);
  // Through the generic entry point too.
  EXPECT_EQ(getGradientLayout(Attribute(set)), Attribute(dual));
}

TEST_F(HSPMDDualityTest, StrategySetWithoutADualNamesTheStrategy) {
  auto set = dyn_cast_or_null<StrategySetAttr>(
      parse("#hspmd.strategies<[\"a\" = <{[0, 1]: [S0:2]}>, "
            "\"b\" = <{[0, 1]: [P(min):2]}>], optimizer = \"a\">"));
  expectNoDual(set, "strategy 'b': axis P(min):2 has no dual");
}

TEST_F(HSPMDDualityTest, GenericEntryPointRejectsOtherAttributes) {
  EXPECT_FALSE(getGradientLayout(Attribute(parseStates("[S0:2]"))));
}

} // namespace
