//===- NNEnums.td - Enumerations of the nn dialect ---------*- tablegen -*-===//

#ifndef LOOM_NN_ENUMS
#define LOOM_NN_ENUMS

include "mlir/IR/EnumAttr.td"

def NN_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "how nn.gelu evaluates the Gaussian CDF", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Tanh", 1, "tanh">,
    ]> {
  let cppNamespace = "::loom::nn";
  let genSpecializedAttr = 0;
}

def NN_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "the relation nn.compare tests", [
      I32EnumAttrCase<"EQ", 0, "eq">,
      I32EnumAttrCase<"NE", 1, "ne">,
      I32EnumAttrCase<"LT", 2, "lt">,
      I32EnumAttrCase<"LE", 3, "le">,
      I32EnumAttrCase<"GT", 4, "gt">,
      I32EnumAttrCase<"GE", 5, "ge">,
    ]> {
  let cppNamespace = "::loom::nn";
  let genSpecializedAttr = 0;
}

def NN_ReduceKind : I32EnumAttr<"ReduceKind",
    "how nn.reduce combines the elements it reduces", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Mean", 1, "mean">,
      I32EnumAttrCase<"Max", 2, "max">,
    ]> {
  let cppNamespace = "::loom::nn";
  let genSpecializedAttr = 0;
}

def NN_MaskKind : I32EnumAttr<"MaskKind",
    "which keys each query of nn.attention sees", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Causal", 1, "causal">,
      I32EnumAttrCase<"Tree", 2, "tree">,
    ]> {
  let cppNamespace = "::loom::nn";
  let genSpecializedAttr = 0;
}

def NN_LrDecay : I32EnumAttr<"LrDecay",
    "how an optimizer update's learning rate decays after its warm-up", [
      I32EnumAttrCase<"Constant", 0, "constant">,
      I32EnumAttrCase<"Linear", 1, "linear">,
      I32EnumAttrCase<"Cosine", 2, "cosine">,
    ]> {
  let cppNamespace = "::loom::nn";
  let genSpecializedAttr = 0;
}

#endif // LOOM_NN_ENUMS
