//===- HSPMDOps.td - Operations of the hspmd dialect -------*- tablegen -*-===//

#ifndef LOOM_HSPMD_OPS
#define LOOM_HSPMD_OPS

include "dialects/hspmd/IR/HSPMDAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

class HSPMD_Op<string mnemonic, list<Trait> traits = []>
    : Op<HSPMD_Dialect, mnemonic, traits>;

def HSPMD_LayoutAttr : AnyAttrOf<[HSPMD_UnionAttr, HSPMD_StrategySetAttr]>;

def HSPMD_AnnotateOp : HSPMD_Op<"annotate",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Constrains the layout of a value";
  let description = [{
    States that the value is laid out as `layout`: a union, or a strategy
    set with one union per parallel strategy. The result is the same value;
    annotations are constraints that layout deduction starts from.

    ```mlir
    %y = hspmd.annotate %x : tensor<64x1024xf32> as #hspmd.union<
           split(0) shares [3, 1]: {[0, 1, 2, 3]: [S0:2, S1:2]}, {[4, 5]: [S1:2]}>
    ```

    Constraints: the layout fits the tensor type: split dimensions are within
    the rank, shares cover their dimension exactly, and every even split
    divides the part of the dimension its group holds.
  }];
  let arguments = (ins AnyRankedTensor:$input, HSPMD_LayoutAttr:$layout);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `:` type($input) `as` $layout attr-dict";
  let hasVerifier = 1;
}

def HSPMD_ReshardOp : HSPMD_Op<"reshard",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Changes the layout of a value";
  let description = [{
    An abstract layout change: the value laid out as `source` becomes the
    same logical value laid out as `target`. Lowering turns it into
    collectives or point-to-point transfers.

    ```mlir
    %y = hspmd.reshard %x : tensor<8x8xf32>
           from #hspmd.union<{[0, 1]: [P(sum):2]}> to #hspmd.union<{[0, 1]: [D:2]}>
    ```

    Constraints: both layouts fit the tensor type, and both are unions or both
    are strategy sets with the same strategy names.
  }];
  let arguments = (ins AnyRankedTensor:$input, HSPMD_LayoutAttr:$source,
                       HSPMD_LayoutAttr:$target);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `:` type($input) `from` $source `to` $target attr-dict
  }];
  let hasVerifier = 1;
}

#endif // LOOM_HSPMD_OPS
