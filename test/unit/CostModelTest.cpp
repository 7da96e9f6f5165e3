//===- CostModelTest.cpp - Extending layout propagation's cost model ------===//
//
// Layout propagation chooses through PropagationCostModel's hooks
// (passes/Partitioning/CostModel.h). A model of one's own, passed to
// propagateWithinGroup, changes the choices without touching the
// propagation loop: the tests derive two, one that only counts the calls
// (and so chooses as the default does) and one that prefers the
// candidates the default ranks last.
//
//===----------------------------------------------------------------------===//

#include "passes/PartitionSteps.h"
#include "passes/Partitioning/Attributes.h"

#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/nn/IR/NNDialect.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <string>

using namespace mlir;
using namespace loom;

namespace {

/// A matmul whose input is split along the batch on two devices, with a
/// replicated weight: the default model keeps the batch split (no
/// communication).
constexpr const char *kProgram = R"mlir(
func.func @f(%x: tensor<8x16xf64> {hspmd.layout = #hspmd.union<{[0, 1]: [S0:2]}>},
             %w: tensor<16x4xf64> {nn.param}) -> tensor<8x4xf64> {
  %y = nn.matmul %x, %w : tensor<8x16xf64>, tensor<16x4xf64>
  %z = nn.tanh %y : tensor<8x4xf64>
  return %z : tensor<8x4xf64>
}
)mlir";

struct Propagated {
  OwningOpRef<ModuleOp> module;
  /// The layout propagation gave the matmul's result, as text.
  std::string matmul;
  int64_t reshards = 0;
};

Propagated propagate(MLIRContext &context,
                     const PropagationCostModel &model) {
  Propagated out;
  out.module = parseSourceString<ModuleOp>(kProgram, &context);
  EXPECT_TRUE(out.module);
  auto func = *out.module->getOps<func::FuncOp>().begin();
  bool skipped = false;
  EXPECT_TRUE(succeeded(
      propagateWithinGroup(func, skipped, out.reshards, model)));
  EXPECT_FALSE(skipped);
  func.walk([&](nn::MatmulOp matmul) {
    hspmd::UnionAttr layout = getResultLayout(matmul, 0);
    llvm::raw_string_ostream os(out.matmul);
    if (layout)
      os << layout;
  });
  return out;
}

MLIRContext &getContext() {
  static MLIRContext *context = [] {
    auto *ctx = new MLIRContext();
    ctx->loadDialect<hspmd::HSPMDDialect, nn::NNDialect, func::FuncDialect,
                     arith::ArithDialect>();
    return ctx;
  }();
  return *context;
}

/// Delegates to the default and counts how often propagation asks.
class CountingModel : public PropagationCostModel {
public:
  double getReshardBytes(const hspmd::MeshRole &from,
                         const hspmd::MeshRole &to, int64_t size,
                         double block) const override {
    ++reshardQueries;
    return PropagationCostModel::getReshardBytes(from, to, size, block);
  }
  bool isBetter(const CandidateScore &lhs,
                const CandidateScore &rhs) const override {
    ++comparisons;
    return PropagationCostModel::isBetter(lhs, rhs);
  }
  mutable int64_t reshardQueries = 0, comparisons = 0;
};

/// Prefers what the default ranks last.
class ContraryModel : public PropagationCostModel {
public:
  bool isBetter(const CandidateScore &lhs,
                const CandidateScore &rhs) const override {
    return PropagationCostModel::isBetter(rhs, lhs);
  }
};

TEST(PropagationCostModel, DefaultKeepsTheBatchSplit) {
  Propagated result =
      propagate(getContext(), PropagationCostModel::getDefault());
  EXPECT_EQ(result.matmul, "#hspmd.union<{[0, 1]: [S0:2]}>");
  EXPECT_EQ(result.reshards, 0);
}

TEST(PropagationCostModel, PropagationAsksTheModelItIsGiven) {
  CountingModel model;
  Propagated result = propagate(getContext(), model);
  EXPECT_GT(model.comparisons, 0);
  EXPECT_GT(model.reshardQueries, 0);
  // Delegating to the default, it chooses what the default chooses.
  EXPECT_EQ(result.matmul, "#hspmd.union<{[0, 1]: [S0:2]}>");
}

TEST(PropagationCostModel, ADerivedModelChangesTheChoice) {
  ContraryModel model;
  Propagated result = propagate(getContext(), model);
  EXPECT_NE(result.matmul, "#hspmd.union<{[0, 1]: [S0:2]}>");
  EXPECT_FALSE(result.matmul.empty());
}

} // namespace
