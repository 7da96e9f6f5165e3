//===- FactorRuleTest.cpp - Tests of FactorRule and the nn factor rules ---===//
//
// FactorRule::str spells rules as documented; FactorRule::verify rejects
// every kind of malformed rule, on the op, with a message naming the
// problem; and, as properties over many ops and random reshapes, every nn
// op's rule verifies, multiplies out to its dimensions and, for reshape, is
// a true refinement: an element's coordinate along every shared factor is
// the same whether computed from its input or from its output index.
//
//===----------------------------------------------------------------------===//

#include "dialects/Interfaces/FactorRule.h"
#include "dialects/Interfaces/LayoutRuleOpInterface.h"
#include "dialects/nn/IR/NNDialect.h"
#include "dialects/nn/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/STLExtras.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace mlir;
using namespace loom;

namespace {

class FactorRuleTest : public ::testing::Test {
protected:
  FactorRuleTest() {
    context.loadDialect<nn::NNDialect, func::FuncDialect>();
    context.getDiagEngine().registerHandler([this](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error)
        errors.push_back(diag.str());
      return success();
    });
  }

  OwningOpRef<ModuleOp> parse(StringRef source) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, ParserConfig(&context));
    EXPECT_TRUE(module) << "failed to parse: " << source.str();
    return module;
  }

  /// The first op of `module` that has a factor rule.
  static Operation *firstRuleOp(ModuleOp module) {
    Operation *found = nullptr;
    module.walk([&](LayoutRuleOpInterface op) {
      if (!found)
        found = op;
    });
    return found;
  }

  /// Verifies `rule` on `op`; returns the error it reported, "" on success.
  std::string verifyError(const FactorRule &rule, Operation *op) {
    errors.clear();
    LogicalResult result = rule.verify(op);
    EXPECT_EQ(succeeded(result), errors.empty());
    return errors.empty() ? "" : errors.front();
  }

  MLIRContext context;
  std::vector<std::string> errors;
};

//===----------------------------------------------------------------------===//
// str
//===----------------------------------------------------------------------===//

TEST(FactorRuleStr, SpellsTheHeaderExamples) {
  FactorRule matmul;
  int64_t i = matmul.addFactor(8, FactorKind::Parallel);
  int64_t j = matmul.addFactor(4, FactorKind::Parallel);
  int64_t k = matmul.addFactor(16, FactorKind::Reduction, PartialKind::Sum);
  matmul.addOperand({{i}, {k}});
  matmul.addOperand({{k}, {j}});
  matmul.addResult({{i}, {j}});
  EXPECT_EQ(matmul.str(),
            "([i, k], [k, j]) -> ([i, j]) {i = 8, j = 4, k = 16 "
            "reduction(sum)}");

  FactorRule reshape;
  int64_t a = reshape.addFactor(8, FactorKind::Parallel);
  int64_t h = reshape.addFactor(4, FactorKind::Parallel);
  int64_t d = reshape.addFactor(8, FactorKind::Parallel);
  reshape.addOperand({{a}, {h, d}});
  reshape.addResult({{a}, {h}, {d}});
  EXPECT_EQ(reshape.str(), "([i, j*k]) -> ([i, j, k]) {i = 8, j = 4, k = 8}");
}

TEST(FactorRuleStr, KindsSizesAndNames) {
  FactorRule rule;
  rule.addFactor(ShapedType::kDynamic, FactorKind::Replicated);
  rule.addFactor(2, FactorKind::Reduction, PartialKind::Max);
  rule.addFactor(3, FactorKind::Reduction, PartialKind::Min);
  for (int64_t index = 3; index < 16; ++index)
    rule.addFactor(1, FactorKind::Parallel);
  rule.addOperand({{0, 1}, {}, {2}});
  rule.addOperand({});
  rule.addResult({{13}, {14}, {15}});
  EXPECT_EQ(rule.str(),
            "([i*j, 1, k], []) -> ([v, f14, f15]) {i = ? replicated, "
            "j = 2 reduction(max), k = 3 reduction(min), l = 1, m = 1, n = 1, "
            "o = 1, p = 1, q = 1, r = 1, s = 1, t = 1, u = 1, v = 1, f14 = 1, "
            "f15 = 1}");
  EXPECT_EQ(FactorRule().str(), "() -> () {}");
}

//===----------------------------------------------------------------------===//
// verify
//===----------------------------------------------------------------------===//

constexpr StringLiteral kMatmul = R"mlir(
  func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) {
    %0 = nn.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xf32>
    return
  })mlir";

/// A correct matmul rule with `change` applied to it.
FactorRule matmulRule(llvm::function_ref<void(FactorRule &, TensorFactors &,
                                              TensorFactors &, TensorFactors &)>
                          change = nullptr) {
  FactorRule rule;
  int64_t i = rule.addFactor(8, FactorKind::Parallel);
  int64_t j = rule.addFactor(4, FactorKind::Parallel);
  int64_t k = rule.addFactor(16, FactorKind::Reduction);
  TensorFactors lhs{{i}, {k}}, rhs{{k}, {j}}, out{{i}, {j}};
  if (change)
    change(rule, lhs, rhs, out);
  rule.addOperand(lhs);
  rule.addOperand(rhs);
  rule.addResult(out);
  rule.addLinearGroup({0});
  rule.addLinearGroup({1});
  return rule;
}

TEST_F(FactorRuleTest, VerifyAcceptsACorrectRule) {
  OwningOpRef<ModuleOp> module = parse(kMatmul);
  Operation *op = firstRuleOp(*module);
  ASSERT_TRUE(op);
  EXPECT_EQ(verifyError(matmulRule(), op), "");
  // The op's own rule is that one.
  EXPECT_EQ(cast<LayoutRuleOpInterface>(op).getFactorRule().str(),
            matmulRule().str());
}

TEST_F(FactorRuleTest, VerifyRejectsEachKindOfMistake) {
  OwningOpRef<ModuleOp> module = parse(kMatmul);
  Operation *op = firstRuleOp(*module);
  ASSERT_TRUE(op);
  struct Case {
    const char *expected;
    std::function<void(FactorRule &, TensorFactors &, TensorFactors &,
                       TensorFactors &)>
        change;
  };
  std::vector<Case> cases = {
      {"factor rule gives operand #1 1 dimensions but it has 2",
       [](FactorRule &, TensorFactors &, TensorFactors &rhs, TensorFactors &) {
         rhs.pop_back();
       }},
      {"operand #0 dimension 1 names factor 7 but the rule has 3 factors",
       [](FactorRule &, TensorFactors &lhs, TensorFactors &, TensorFactors &) {
         lhs[1] = {7};
       }},
      {"operand #0 dimension 0 names factor -1",
       [](FactorRule &, TensorFactors &lhs, TensorFactors &, TensorFactors &) {
         lhs[0] = {-1};
       }},
      {"factor 0 appears twice in result #0",
       [](FactorRule &, TensorFactors &, TensorFactors &, TensorFactors &out) {
         out[1] = {0};
       }},
      {"operand #1 dimension 1 of size 4 is made of factors of total size 32",
       [](FactorRule &, TensorFactors &, TensorFactors &rhs, TensorFactors &) {
         rhs[1] = {1, 0};
       }},
      {"operand #1 dimension 0 of size 16 is made of factors of total size 1",
       [](FactorRule &, TensorFactors &, TensorFactors &rhs, TensorFactors &) {
         rhs[0] = {};
       }},
      {"reduction factor 3 appears in every result",
       [](FactorRule &rule, TensorFactors &, TensorFactors &rhs,
          TensorFactors &out) {
         int64_t r = rule.addFactor(4, FactorKind::Reduction);
         rhs[1] = {r};
         out[1] = {r};
       }},
      {"linear group names operand #2, which is not a ranked tensor operand",
       [](FactorRule &rule, TensorFactors &, TensorFactors &,
          TensorFactors &) { rule.addLinearGroup({2}); }},
      {"factor 3 is used by no operand or result",
       [](FactorRule &rule, TensorFactors &, TensorFactors &,
          TensorFactors &) { rule.addFactor(2, FactorKind::Parallel); }},
      {"factor 3 has negative size -5",
       [](FactorRule &rule, TensorFactors &, TensorFactors &,
          TensorFactors &) { rule.addFactor(-5, FactorKind::Parallel); }},
  };
  for (const Case &c : cases) {
    std::string error = verifyError(matmulRule(c.change), op);
    EXPECT_NE(error.find(c.expected), std::string::npos)
        << "expected '" << c.expected << "', got '" << error << "'";
  }

  // Too few and too many entries.
  FactorRule noResult;
  int64_t i = noResult.addFactor(8, FactorKind::Parallel);
  int64_t j = noResult.addFactor(4, FactorKind::Parallel);
  int64_t k = noResult.addFactor(16, FactorKind::Reduction);
  noResult.addOperand({{i}, {k}});
  noResult.addOperand({{k}, {j}});
  EXPECT_NE(verifyError(noResult, op)
                .find("factor rule describes 0 results but the op has 1"),
            std::string::npos);
  FactorRule extraOperand = matmulRule();
  extraOperand.addOperand({});
  EXPECT_NE(verifyError(extraOperand, op)
                .find("factor rule describes 3 operands but the op has 2"),
            std::string::npos);
}

TEST_F(FactorRuleTest, VerifyLeavesDynamicSizesUnchecked) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @f(%a: tensor<?x16xf32>, %b: tensor<16x4xf32>) {
      %0 = nn.matmul %a, %b : tensor<?x16xf32>, tensor<16x4xf32>
      return
    })mlir");
  Operation *op = firstRuleOp(*module);
  ASSERT_TRUE(op);
  // A dynamic dimension accepts any factors; a static one made of a dynamic
  // factor cannot be checked either.
  FactorRule rule;
  int64_t i = rule.addFactor(3, FactorKind::Parallel);
  int64_t j = rule.addFactor(ShapedType::kDynamic, FactorKind::Parallel);
  int64_t k = rule.addFactor(16, FactorKind::Reduction);
  rule.addOperand({{i}, {k}});
  rule.addOperand({{k}, {j}});
  rule.addResult({{i}, {j}});
  EXPECT_EQ(verifyError(rule, op), "");
}

//===----------------------------------------------------------------------===//
// Properties of the nn rules
//===----------------------------------------------------------------------===//

std::string opName(Operation *op) {
  return op->getName().getStringRef().str();
}

/// Checks, independently of FactorRule::verify, that every static dimension
/// of every tensor of `op` is the product of its factors' sizes, every
/// factor is used, and no reduction factor is in every result (some result
/// is left partial by its split).
void expectRuleMultipliesOut(Operation *op, const FactorRule &rule) {
  std::vector<bool> used(rule.getFactors().size(), false);
  auto check = [&](ArrayRef<TensorFactors> tensors, TypeRange types,
                   bool results) {
    ASSERT_EQ(tensors.size(), types.size());
    for (auto [tensor, type] : llvm::zip(tensors, types)) {
      auto ranked = dyn_cast<RankedTensorType>(type);
      ASSERT_EQ(static_cast<int64_t>(tensor.size()),
                ranked ? ranked.getRank() : 0);
      for (auto [dim, factors] : llvm::enumerate(tensor)) {
        int64_t product = 1;
        bool known = true;
        for (int64_t index : factors) {
          ASSERT_GE(index, 0);
          ASSERT_LT(index, static_cast<int64_t>(used.size()));
          used[index] = true;
          const Factor &factor = rule.getFactor(index);
          if (ShapedType::isDynamic(factor.size))
            known = false;
          else
            product *= factor.size;
        }
        int64_t size = ranked.getDimSize(dim);
        if (known && !ShapedType::isDynamic(size))
          EXPECT_EQ(product, size) << "dimension " << dim << " of " << opName(op);
      }
    }
  };
  check(rule.getOperands(), op->getOperandTypes(), false);
  check(rule.getResults(), op->getResultTypes(), true);
  for (auto [index, factor] : llvm::enumerate(rule.getFactors())) {
    if (factor.kind != FactorKind::Reduction || rule.getResults().empty())
      continue;
    bool everywhere =
        llvm::all_of(rule.getResults(), [&](const TensorFactors &tensor) {
          return llvm::any_of(tensor, [&](const DimFactors &dim) {
            return llvm::is_contained(dim, static_cast<int64_t>(index));
          });
        });
    EXPECT_FALSE(everywhere) << "reduction factor " << index
                             << " in every result of " << opName(op);
  }
  for (auto [index, isUsed] : llvm::enumerate(used))
    EXPECT_TRUE(isUsed) << "factor " << index << " unused in " << opName(op);
}

TEST_F(FactorRuleTest, EveryExampleOpHasAValidRule) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @f(%x: tensor<4x8xf32>, %row: tensor<8xf32>, %col: tensor<4x1xf32>,
                 %s: tensor<f32>, %c: tensor<4x8xi1>, %i: tensor<4x8xi64>,
                 %t: tensor<2x8x16xf32>, %w: tensor<16x4xf32>,
                 %q: tensor<2x16x8x4xf32>, %k: tensor<2x16x2x4xf32>,
                 %pos: tensor<2x16xi64>, %table: tensor<64x32xf32>,
                 %ids: tensor<2x16xi64>, %logits: tensor<2x16x64xf32>,
                 %labels: tensor<2x16xi64>, %weights: tensor<2x16xf32>,
                 %step: tensor<i64>, %y: tensor<?x6xf32>) {
      %0 = nn.add %x, %row : tensor<4x8xf32>, tensor<8xf32>
      %1 = nn.mul %col, %x : tensor<4x1xf32>, tensor<4x8xf32>
      %2 = nn.exp %x : tensor<4x8xf32>
      %3 = nn.select %c, %x, %s : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>
      %4 = nn.cast %i : tensor<4x8xi64> to tensor<4x8xf32>
      %5 = nn.matmul %t, %w : tensor<2x8x16xf32>, tensor<16x4xf32>
      %6 = nn.reduce mean %t dims = [0, 2] keep_dims : tensor<2x8x16xf32>
      %7 = nn.reshape %t : tensor<2x8x16xf32> to tensor<4x2x32xf32>
      %8 = nn.transpose %t permutation = [2, 0, 1] : tensor<2x8x16xf32>
      %9 = nn.slice %x offsets = [1, 0] sizes = [2, 8] strides = [1, 1] : tensor<4x8xf32>
      %10 = nn.concat %x, %x dim = 0 : tensor<4x8xf32>, tensor<4x8xf32>
      %11 = nn.softmax %t dim = 1 : tensor<2x8x16xf32>
      %12 = nn.layer_norm %t {normalized_dims = 2 : i64} : tensor<2x8x16xf32>
      %13 = nn.rope %q, %pos : tensor<2x16x8x4xf32>, tensor<2x16xi64>
      %14 = nn.embedding %table, %ids : tensor<64x32xf32>, tensor<2x16xi64>
      %15 = nn.attention %q, %k, %k mask = causal : tensor<2x16x8x4xf32>, tensor<2x16x2x4xf32>, tensor<2x16x2x4xf32>
      %16:3 = nn.attention_grad %q, %q, %k, %k mask = none : tensor<2x16x8x4xf32>, tensor<2x16x8x4xf32>, tensor<2x16x2x4xf32>, tensor<2x16x2x4xf32>
      %17 = nn.cross_entropy %logits, %labels weights %weights {normalizer = 32.0 : f64} : tensor<2x16x64xf32>, tensor<2x16xi64>, tensor<2x16xf32>
      %18 = nn.cross_entropy_grad %s, %logits, %labels {normalizer = 32.0 : f64} : tensor<f32>, tensor<2x16x64xf32>, tensor<2x16xi64>
      %19:3 = nn.adamw_update %x, %x, %x, %x, %step {lr = 1.0e-03 : f64} : tensor<4x8xf32>
      %20 = nn.broadcast %row : tensor<8xf32> to tensor<3x4x8xf32>
      %21 = nn.reshape %y : tensor<?x6xf32> to tensor<?x2x3xf32>
      %22 = nn.gather %x, %i dim = 1 : tensor<4x8xf32>, tensor<4x8xi64>
      %23 = nn.iota dim = 0 : tensor<5x3xi32>
      %24 = nn.embedding %t, %ids : tensor<2x8x16xf32>, tensor<2x16xi64>
      return
    })mlir");
  ASSERT_TRUE(module);
  int64_t count = 0;
  module->walk([&](LayoutRuleOpInterface op) {
    FactorRule rule = op.getFactorRule();
    EXPECT_EQ(verifyError(rule, op), "") << rule.str();
    expectRuleMultipliesOut(op, rule);
    ++count;
  });
  EXPECT_EQ(count, 25);
}

/// The coordinates, along each factor of `dims`, of the element at
/// `index` in a tensor of shape `shape` (factors of a dimension major
/// first); `coordinates[f]` is -1 for factors the tensor lacks.
std::vector<int64_t> factorCoordinates(const FactorRule &rule,
                                       const TensorFactors &dims,
                                       ArrayRef<int64_t> shape,
                                       int64_t linear) {
  std::vector<int64_t> coordinates(rule.getFactors().size(), -1);
  std::vector<int64_t> index(shape.size());
  for (int64_t dim = static_cast<int64_t>(shape.size()) - 1; dim >= 0; --dim) {
    index[dim] = linear % shape[dim];
    linear /= shape[dim];
  }
  for (auto [dim, factors] : llvm::enumerate(dims)) {
    int64_t rest = index[dim];
    for (int64_t f : llvm::reverse(factors)) {
      int64_t size = rule.getFactor(f).size;
      coordinates[f] = rest % size;
      rest /= size;
    }
  }
  return coordinates;
}

/// A random factorisation of `count` into at most `maxRank` sizes (some of
/// them 1).
std::vector<int64_t> randomShape(std::mt19937 &rng, int64_t count,
                                 int64_t maxRank) {
  std::vector<int64_t> primes;
  for (int64_t p = 2, n = count; n > 1; ++p)
    while (n % p == 0) {
      primes.push_back(p);
      n /= p;
    }
  std::shuffle(primes.begin(), primes.end(), rng);
  int64_t rank = std::uniform_int_distribution<int64_t>(1, maxRank)(rng);
  std::vector<int64_t> shape(rank, 1);
  for (int64_t p : primes)
    shape[std::uniform_int_distribution<int64_t>(0, rank - 1)(rng)] *= p;
  return shape;
}

TEST_F(FactorRuleTest, RandomReshapesAreRefinements) {
  std::mt19937 rng(20261129);
  const int64_t counts[] = {1, 6, 12, 24, 30, 36, 60, 64, 72, 90, 120, 210};
  OpBuilder builder(&context);
  Location loc = builder.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module->getBody());
  Type f32 = builder.getF32Type();
  for (int trial = 0; trial < 400; ++trial) {
    int64_t count = counts[trial % std::size(counts)];
    std::vector<int64_t> in = randomShape(rng, count, 4);
    std::vector<int64_t> out = randomShape(rng, count, 4);
    auto inType = RankedTensorType::get(in, f32);
    auto outType = RankedTensorType::get(out, f32);
    auto fill = nn::FillOp::create(builder, loc, inType,
                                      builder.getF64FloatAttr(0.0));
    auto reshape =
        nn::ReshapeOp::create(builder, loc, outType, fill.getResult());
    FactorRule rule = reshape.getFactorRule();
    ASSERT_EQ(verifyError(rule, reshape), "") << rule.str();
    expectRuleMultipliesOut(reshape, rule);
    for (int64_t linear = 0; linear < count; ++linear) {
      std::vector<int64_t> a =
          factorCoordinates(rule, rule.getOperands()[0], in, linear);
      std::vector<int64_t> b =
          factorCoordinates(rule, rule.getResults()[0], out, linear);
      for (auto [f, factor] : llvm::enumerate(rule.getFactors())) {
        if (a[f] < 0 || b[f] < 0)
          continue;
        // A factor in both tensors is parallel, and addresses the same
        // slab of elements from either side.
        EXPECT_EQ(factor.kind, FactorKind::Parallel) << rule.str();
        ASSERT_EQ(a[f], b[f]) << rule.str() << " element " << linear;
      }
    }
    // Only non-nesting parts are replicated: a dimension pair that nests
    // (one side a single dimension) shares everything.
    if (in.size() == 1 || out.size() == 1)
      for (const Factor &factor : rule.getFactors())
        EXPECT_EQ(factor.kind, FactorKind::Parallel) << rule.str();
    reshape->erase();
    fill->erase();
  }
}

} // namespace
