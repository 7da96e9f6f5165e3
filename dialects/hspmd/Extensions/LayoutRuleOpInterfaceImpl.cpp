//===- LayoutRuleOpInterfaceImpl.cpp - Factor rules of hspmd ops ----------===//

#include "dialects/hspmd/Extensions/LayoutRuleOpInterfaceImpl.h"

#include "dialects/Interfaces/LayoutRuleOpInterface.h"
#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/hspmd/IR/HSPMDOps.h"

#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace loom;
using namespace loom::hspmd;

namespace {

/// Inside one group an exchange hands its operand on: a dimension whose
/// extent it keeps is one parallel factor of operand and result, so the
/// group may keep it split across the exchange (a TP-split gradient is
/// exchanged block by block). A dimension whose extent changes (the
/// group's share of a split becomes the whole, or the reverse) has a
/// factor on each side, never split, unless one side is empty (a pipeline
/// stage sending or receiving): the other side's factor may be split.
struct ExchangeRuleModel
    : public LayoutRuleOpInterface::ExternalModel<ExchangeRuleModel,
                                                  ExchangeOp> {
  FactorRule getFactorRule(Operation *op) const {
    auto exchange = cast<ExchangeOp>(op);
    ArrayRef<int64_t> in = exchange.getInput().getType().getShape();
    ArrayRef<int64_t> out = exchange.getResult().getType().getShape();
    FactorRule rule;
    TensorFactors operand, result;
    for (auto [inSize, outSize] : llvm::zip_equal(in, out)) {
      if (inSize == outSize) {
        int64_t factor = rule.addFactor(inSize, FactorKind::Parallel);
        operand.push_back({factor});
        result.push_back({factor});
        continue;
      }
      // One side empty (the other stage of a pipeline holds the tensor):
      // the side that holds it may keep any layout.
      auto kindOf = [](int64_t size, int64_t other) {
        return size != 0 && other == 0 ? FactorKind::Parallel
                                       : FactorKind::Replicated;
      };
      operand.push_back({rule.addFactor(inSize, kindOf(inSize, outSize))});
      result.push_back({rule.addFactor(outSize, kindOf(outSize, inSize))});
    }
    rule.addOperand(std::move(operand));
    rule.addResult(std::move(result));
    return rule;
  }
};

} // namespace

void loom::hspmd::registerLayoutRuleOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, HSPMDDialect *) {
    ExchangeOp::attachInterface<ExchangeRuleModel>(*context);
  });
}
