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
/// factor on each side, never split.
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
      operand.push_back({rule.addFactor(inSize, FactorKind::Replicated)});
      result.push_back({rule.addFactor(outSize, FactorKind::Replicated)});
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
