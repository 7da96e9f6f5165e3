//===- FactorRule.cpp - How layouts flow through an op --------------------===//

#include "dialects/Interfaces/FactorRule.h"
#include "dialects/Interfaces/LayoutRuleOpInterface.h"

using namespace mlir;
using namespace loom;

int64_t FactorRule::addFactor(int64_t size, FactorKind kind,
                              PartialKind partial) {
  factors.push_back({size, kind, partial});
  return static_cast<int64_t>(factors.size()) - 1;
}

#include "dialects/Interfaces/LayoutRuleOpInterface.cpp.inc"
