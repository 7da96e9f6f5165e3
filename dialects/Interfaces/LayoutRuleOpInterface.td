//===- LayoutRuleOpInterface.td - Factor rules of ops ------*- tablegen -*-===//
//
// How layouts flow through an op, as a factor rule (FactorRule.h). Neutral
// to every dialect, like GradientOpInterface.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_INTERFACES_LAYOUTRULEOPINTERFACE
#define LOOM_INTERFACES_LAYOUTRULEOPINTERFACE

include "mlir/IR/OpBase.td"

def LayoutRuleOpInterface : OpInterface<"LayoutRuleOpInterface"> {
  let cppNamespace = "::loom";
  let description = [{
    An op whose operands and results can be laid out across devices by
    layout propagation. The op describes its iteration space as factors
    (parallel, reduction, replicated) and maps every dimension of every
    operand and result to factors; see `dialects/Interfaces/FactorRule.h`.
    The rule depends only on the op's types and attributes.
  }];
  let methods = [
    InterfaceMethod<[{
        The op's factor rule. Valid for every op that passes its verifier.
      }],
      "::loom::FactorRule", "getFactorRule", (ins)>,
  ];
}

#endif // LOOM_INTERFACES_LAYOUTRULEOPINTERFACE
