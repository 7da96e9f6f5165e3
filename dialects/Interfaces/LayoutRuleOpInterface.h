//===- LayoutRuleOpInterface.h - Factor rules of ops -----------*- C++ -*-===//
//
// The op interface through which layout propagation asks an op how layouts
// flow through it. See LayoutRuleOpInterface.td and FactorRule.h.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_INTERFACES_LAYOUTRULEOPINTERFACE_H
#define LOOM_DIALECTS_INTERFACES_LAYOUTRULEOPINTERFACE_H

#include "dialects/Interfaces/FactorRule.h"

#include "mlir/IR/OpDefinition.h"

#include "dialects/Interfaces/LayoutRuleOpInterface.h.inc"

#endif // LOOM_DIALECTS_INTERFACES_LAYOUTRULEOPINTERFACE_H
