//===- NNAttrs.td - Attributes of the nn dialect -----------*- tablegen -*-===//
//
// The nn dialect's attributes are enumerations; numeric hyper-parameters are
// builtin attributes checked by the ops that carry them.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_NN_ATTRS
#define LOOM_NN_ATTRS

include "dialects/nn/IR/NNDialect.td"
include "dialects/nn/IR/NNEnums.td"
include "mlir/IR/AttrTypeBase.td"

class NN_EnumAttr<EnumAttrInfo enumInfo, string mnemonic>
    : EnumAttr<NN_Dialect, enumInfo, mnemonic> {
  // Inside an op the value is spelled bare (`mask = causal`; the op formats
  // put an empty literal before it, as the printer adds its own space); on
  // its own the attribute reads `#nn<mask_kind causal>`.
  let assemblyFormat = "$value";
}

def NN_GeluApproximationAttr
    : NN_EnumAttr<NN_GeluApproximation, "gelu_approximation"> {
  let description = [{
    `none` (the exact `erf` form, the default) or `tanh` (the GPT-2
    approximation); see `nn.gelu`.

    ```mlir
    %0 = nn.gelu %x approximate = tanh : tensor<4x8xf32>
    ```
  }];
}

def NN_ComparePredicateAttr
    : NN_EnumAttr<NN_ComparePredicate, "compare_predicate"> {
  let description = [{
    One of `eq`, `ne`, `lt`, `le`, `gt`, `ge`; see `nn.compare` for the
    NaN rules.

    ```mlir
    %0 = nn.compare le, %a, %b : tensor<8xf32>, tensor<8xf32>
    ```
  }];
}

def NN_ReduceKindAttr : NN_EnumAttr<NN_ReduceKind, "reduce_kind"> {
  let description = [{
    `sum`, `mean` (the sum divided by the number of reduced elements) or
    `max`; see `nn.reduce`.

    ```mlir
    %0 = nn.reduce mean %x dims = [1] : tensor<4x8xf32>
    ```
  }];
}

def NN_MaskKindAttr : NN_EnumAttr<NN_MaskKind, "mask_kind"> {
  let description = [{
    `none`, `causal` or `tree`; see `nn.attention` for which keys each
    query sees under each kind. A tree mask comes with the `subtree_end`
    operand.

    ```mlir
    %0 = nn.attention %q, %k, %v mask = causal
        : tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>
    ```
  }];
}

def NN_LrDecayAttr : NN_EnumAttr<NN_LrDecay, "lr_decay"> {
  let description = [{
    `constant`, `linear` or `cosine`: how the learning rate of
    `nn.sgd_update` and `nn.adamw_update` goes from `lr` to `min_lr` over
    `decay_steps` steps after the warm-up (see "Learning-rate schedule" in
    their docs).

    ```mlir
    %p, %m = nn.sgd_update %w, %g, %b step %s
        {lr = 1.0e-01 : f64, warmup_steps = 2 : i64, decay_steps = 8 : i64,
         decay = #nn<lr_decay cosine>} : tensor<4xf32>
    ```
  }];
}

#endif // LOOM_NN_ATTRS
