//===- GradientOpInterface.td - Reverse-mode gradients -----*- tablegen -*-===//
//
// How an op turns the gradients of its results into gradients of its
// operands. Neutral to every dialect: `nn` ops implement it directly and
// `hspmd` ops through external models, so neither dialect depends on the
// other.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_INTERFACES_GRADIENTOPINTERFACE
#define LOOM_INTERFACES_GRADIENTOPINTERFACE

include "mlir/IR/OpBase.td"

def GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::loom";
  let description = [{
    An op that can be differentiated in reverse mode. Given the gradient of
    a scalar loss with respect to each of the op's results, the op builds
    the gradient with respect to each of its operands, using ops that the
    reference interpreter and code generation understand.

    Conventions:

    * the gradient of a value has the value's type;
    * a null result gradient means that no gradient flows into that result
      (the loss does not depend on it);
    * the op appends exactly one entry per operand to `operandGrads`; a null
      entry means "no gradient" (integer operands, masks, seeds, or an
      operand that the loss does not depend on through this op);
    * on failure the op has emitted an error that says why (for example a
      layout without a dual); the ops it built so far may be left behind
      and the caller discards them.

    Which operands and results take part is asked first: autodiff only
    follows dependences through differentiable operands to differentiable
    results. By default these are the float tensors.
  }];
  let methods = [
    InterfaceMethod<[{
        Whether the loss can depend on operand `index` through this op, i.e.
        whether a gradient may flow into it.
      }],
      "bool", "isDifferentiableOperand", (ins "unsigned":$index), "",
      [{ return ::loom::isDifferentiableType(
             $_op->getOperand(index).getType()); }]>,
    InterfaceMethod<[{
        Whether result `index` carries a gradient back to the operands.
      }],
      "bool", "isDifferentiableResult", (ins "unsigned":$index), "",
      [{ return ::loom::isDifferentiableType(
             $_op->getResult(index).getType()); }]>,
    InterfaceMethod<[{
        Builds, at the insertion point of `builder`, the gradients of the
        operands from `resultGrads` (one entry per result, null where no
        gradient flows) and appends one entry per operand to
        `operandGrads` (null for none). At least one result gradient is
        non-null.
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // LOOM_INTERFACES_GRADIENTOPINTERFACE
