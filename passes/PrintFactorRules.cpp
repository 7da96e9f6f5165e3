//===- PrintFactorRules.cpp - Report the factor rule of every op ----------===//

#include "passes/Passes.h"

#include "dialects/Interfaces/LayoutRuleOpInterface.h"

#include "mlir/IR/Diagnostics.h"

#define DEBUG_TYPE "nn-print-factor-rules"

namespace loom {
#define GEN_PASS_DEF_PRINTFACTORRULESPASS
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

struct PrintFactorRulesPass
    : loom::impl::PrintFactorRulesPassBase<PrintFactorRulesPass> {
  void runOnOperation() override {
    bool failedRule = false;
    getOperation().walk([&](LayoutRuleOpInterface op) {
      FactorRule rule = op.getFactorRule();
      if (failed(rule.verify(op))) {
        failedRule = true;
        return;
      }
      op->emitRemark("factor rule: ") << rule.str();
    });
    if (failedRule)
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
