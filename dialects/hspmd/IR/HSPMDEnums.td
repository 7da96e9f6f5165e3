//===- HSPMDEnums.td - Enumerations of the hspmd dialect ---*- tablegen -*-===//

#ifndef LOOM_HSPMD_ENUMS
#define LOOM_HSPMD_ENUMS

include "mlir/IR/EnumAttr.td"

def HSPMD_ReductionKind : I32EnumAttr<"ReductionKind",
    "how the contributions of a partial (pending-reduction) state combine", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Mean", 1, "mean">,
      I32EnumAttrCase<"Max", 2, "max">,
      I32EnumAttrCase<"Min", 3, "min">,
    ]> {
  let cppNamespace = "::loom::hspmd";
  let genSpecializedAttr = 0;
}

def HSPMD_UnionRelation : I32EnumAttr<"UnionRelation",
    "how the device groups of a union relate to each other", [
      I32EnumAttrCase<"Replicated", 0, "replicated">,
      I32EnumAttrCase<"Split", 1, "split">,
      I32EnumAttrCase<"Partial", 2, "partial">,
    ]> {
  let cppNamespace = "::loom::hspmd";
  let genSpecializedAttr = 0;
}

#endif // LOOM_HSPMD_ENUMS
