//===- LocalViewOpInterface.td - Ops that know their position -*- tablegen -*-===//
//
// How an op rewrites itself for the part of its tensors one device (or one
// device group) holds. Neutral to every dialect, like LayoutRuleOpInterface.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_INTERFACES_LOCALVIEWOPINTERFACE
#define LOOM_INTERFACES_LOCALVIEWOPINTERFACE

include "mlir/IR/OpBase.td"

def LocalViewOpInterface : OpInterface<"LocalViewOpInterface"> {
  let cppNamespace = "::loom";
  let description = [{
    An op whose local form depends on where the local part of its tensors
    sits in the global ones: an iota counts global indices, dropout draws
    its mask by global element index, a lookup in a block of a table split
    along the vocabulary shifts its ids by the block's start, a mean over a
    split dimension divides by the global count.

    The partitioning passes (specialisation inside a device group,
    partitioning across device groups) clone every op with the local types
    of its tensors and then, if the op implements this interface, call
    `localize` on the clone with a `loom::LocalView`
    (`dialects/Interfaces/LocalView.h`) that knows where the part sits:
    the global start of the block of each operand and result along each
    dimension, built as a 0-d `i64` value (an `hspmd.axis_index` inside a
    group, a constant across groups). Ops that are position-independent
    (most) do not implement the interface.
  }];
  let methods = [
    InterfaceMethod<[{
        Rewrites this op, the local clone of `view.getGlobalOp()` (same
        operands, mapped, and attributes; local types), to compute the
        local part of what the global op computes. Values the op needs
        (block starts, positions) are built before it; values that use its
        results (a rescaled mean) at the builder's insertion point, which
        is just after the op, and are given to `view.replaceResult`.
        Fails after a diagnostic (`view.emitError`) where the local form
        cannot be formed.
      }],
      "::mlir::LogicalResult", "localize",
      (ins "::mlir::OpBuilder &":$builder, "::loom::LocalView &":$view)>,
  ];
}

#endif // LOOM_INTERFACES_LOCALVIEWOPINTERFACE
