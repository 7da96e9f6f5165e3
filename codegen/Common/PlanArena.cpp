//===- PlanArena.cpp - Report the static memory plans ---------------------===//

#include "codegen/Common/ArenaPlan.h"
#include "codegen/Passes.h"

#include "llvm/Support/raw_ostream.h"

namespace loom::codegen {
#define GEN_PASS_DEF_PLANARENAPASS
#include "codegen/Passes.h.inc"
} // namespace loom::codegen

using namespace mlir;
using namespace loom::codegen;

namespace {

/// 1234567 -> "1,234,567".
std::string withCommas(int64_t value) {
  std::string digits = std::to_string(value), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

struct PlanArenaPass : loom::codegen::impl::PlanArenaPassBase<PlanArenaPass> {
  using PlanArenaPassBase::PlanArenaPassBase;

  void runOnOperation() override {
    for (mlir::func::FuncOp fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal() ||
          (!this->func.empty() && fn.getSymName() != this->func))
        continue;
      FailureOr<ArenaPlan> plan = planArena(fn);
      if (failed(plan))
        return signalPassFailure();
      llvm::outs() << "arena @" << fn.getSymName() << ": "
                   << withCommas(plan->getArenaBytes())
                   << " bytes per device (persistent "
                   << withCommas(plan->persistentBytes) << ", transient peak "
                   << withCommas(plan->transientPeak) << " of "
                   << withCommas(plan->transientTotal) << " without reuse), "
                   << plan->buffers.size() << " buffers, "
                   << plan->inPlaceUpdates << " updates in place, "
                   << plan->copiesBack.size() << " copied back\n";
    }
  }
};

} // namespace
