//===- NNBackwardOps.td - Backward ops of the nn dialect ---*- tablegen -*-===//
//
// Ops that only gradients need: the backward of forward ops whose gradient
// is not a short, exact composition of other nn ops. Each states exactly
// what it computes, in terms of its forward op, so that the reference
// interpreter can implement it from this page. None of them is itself
// differentiated (no second-order gradients).
//
// Included at the end of NNOps.td, whose base classes it uses. By
// convention the incoming gradient is the first operand (`grad`), followed
// by the forward op's operands in the forward op's order.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_NN_BACKWARD_OPS
#define LOOM_NN_BACKWARD_OPS

def NN_GeluGradOp : NN_Op<"gelu_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "Gradient of nn.gelu";
  let description = [{
    The gradient of `y = nn.gelu(x)` given `grad = dL/dy`, element by
    element: `result = grad * gelu'(x)` with

    * `approximate = none` (the default):
      `gelu'(x) = Phi(x) + x * phi(x)`, where
      `Phi(x) = (1 + erf(x / sqrt(2))) / 2` and
      `phi(x) = exp(-x^2 / 2) / sqrt(2 * pi)`;
    * `approximate = tanh`: with `c = sqrt(2 / pi)`,
      `u = c * (x + 0.044715 * x^3)` and `t = tanh(u)`,
      `gelu'(x) = 0.5 * (1 + t) + 0.5 * x * (1 - t^2) * c * (1 + 3 * 0.044715 * x^2)`.

    ```mlir
    %dx = nn.gelu_grad %dy, %x : tensor<4x8xf32>
    %dx2 = nn.gelu_grad %dy, %x approximate = tanh : tensor<4x8xf32>
    ```

    Constraints: `grad`, `input` and the result have one float tensor type.
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
      DefaultValuedAttr<NN_GeluApproximationAttr,
                        "::loom::nn::GeluApproximation::None">:$approximate);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input (`approximate` `=` `` $approximate^)? attr-dict `:`
    type($input)
  }];
  let ascendLoomOperator = "aclnnLoomGeluBackward";
}

def NN_LayerNormGradOp : NN_InferredOp<"layer_norm_grad"> {
  let summary = "Input gradient of nn.layer_norm";
  let description = [{
    The gradient with respect to `input` of
    `y = nn.layer_norm(input, scale, bias)` given `grad = dL/dy`, with the
    same `normalized_dims` and `epsilon`. Over each group of the `n`
    elements that one normalisation covers (the trailing `normalized_dims`
    dimensions), with means over the group:

    ```
    mu   = mean(x)
    r    = 1 / sqrt(mean((x - mu)^2) + epsilon)
    xhat = (x - mu) * r
    g    = grad * scale            (grad when there is no scale)
    dx   = r * (g - mean(g) - xhat * mean(g * xhat))
    ```

    The bias does not enter. The gradients of `scale` and `bias` are plain
    reductions, which autodiff builds from other ops.

    ```mlir
    %dx = nn.layer_norm_grad %dy, %x scale %g
        : tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<32xf32>
    ```

    Constraints: `grad` has the type of `input`; otherwise those of
    `nn.layer_norm`.
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
                       Optional<NN_FloatTensor>:$scale,
                       DefaultValuedAttr<I64Attr, "1">:$normalized_dims,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input (`scale` $scale^)? attr-dict `:` type(operands)
  }];
  let ascendLoomOperator = "aclnnLoomLayerNormBackward";
}

def NN_RmsNormGradOp : NN_InferredOp<"rms_norm_grad"> {
  let summary = "Input gradient of nn.rms_norm";
  let description = [{
    The gradient with respect to `input` of `y = nn.rms_norm(input, scale)`
    given `grad = dL/dy`, with the same `normalized_dims` and `epsilon`.
    Over each group of elements that one normalisation covers, with means
    over the group:

    ```
    r    = 1 / sqrt(mean(x^2) + epsilon)
    xhat = x * r
    g    = grad * scale            (grad when there is no scale)
    dx   = r * (g - xhat * mean(g * xhat))
    ```

    ```mlir
    %dx = nn.rms_norm_grad %dy, %x scale %g
        : tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<32xf32>
    ```

    Constraints: `grad` has the type of `input`; otherwise those of
    `nn.rms_norm`.
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
                       Optional<NN_FloatTensor>:$scale,
                       DefaultValuedAttr<I64Attr, "1">:$normalized_dims,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input (`scale` $scale^)? attr-dict `:` type(operands)
  }];
  let ascendLoomOperator = "aclnnLoomRmsNormBackward";
}

def NN_CrossEntropyGradOp
    : NN_InferredOp<"cross_entropy_grad", [AttrSizedOperandSegments]> {
  let summary = "Logits gradient of nn.cross_entropy";
  let description = [{
    The gradient with respect to `logits` of the 0-d
    `loss = nn.cross_entropy(logits, labels, weights, normalizer)` given the
    0-d `grad = dL/dloss`, for every token `n` and class `v`:

    ```
    result[n, v] = grad * weights[n] / normalizer
                   * (softmax(logits[n, :])[v] - (v == labels[n] ? 1 : 0))
    ```

    `weights` defaults to all ones; the normaliser is the attribute or the
    0-d operand, exactly as in `nn.cross_entropy`. A token with zero weight
    gets a row of zeros, whatever its label and logits (as it contributes
    nothing to the loss); on other tokens a label outside `[0, vocab)`
    contributes no one-hot term (their forward loss is undefined).

    ```mlir
    %dlogits = nn.cross_entropy_grad %dloss, %logits, %labels weights %w
        {normalizer = 1.28e+02 : f64}
        : tensor<f32>, tensor<8x16x64xf32>, tensor<8x16xi64>, tensor<8x16xf32>
    ```

    Constraints: `grad` is a 0-d tensor of the logits' element type;
    otherwise those of `nn.cross_entropy`.
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$logits,
                       NN_IntTensor:$labels,
                       Optional<NN_FloatTensor>:$weights,
                       Optional<NN_FloatTensor>:$normalizer_value,
                       OptionalAttr<F64Attr>:$normalizer);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $logits `,` $labels (`weights` $weights^)?
    (`normalizer` $normalizer_value^)? attr-dict `:` type(operands)
  }];
  let ascendLoomOperator = "aclnnLoomCrossEntropyBackward";
}

def NN_AttentionGradOp
    : NN_InferredOp<"attention_grad", [AttrSizedOperandSegments, NN_LocalView]> {
  let summary = "Gradients of nn.attention with respect to query, key, value";
  let description = [{
    The gradients of `out = nn.attention(query, key, value, ...)` given
    `grad = dL/dout` (`[batch, seq_q, heads, value_head_dim]`), with the
    same mask, `subtree_end`, `positions` and `scale` (absent scale:
    `1 / sqrt(head_dim)`). With `g = h / (heads / kv_heads)` the key/value
    head of query head `h`, and for each batch `b`, head `h` and query `i`:

    ```
    s[j]  = scale * query[b, i, h, :] . key[b, j, g, :]    for visible j
    p[j]  = exp(s[j]) / sum_{visible j'} exp(s[j'])        (0 if j is masked)
    dp[j] = grad[b, i, h, :] . value[b, j, g, :]
    ds[j] = p[j] * (dp[j] - sum_j' p[j'] * dp[j'])
    ```

    visibility being that of `nn.attention` (none, causal or tree, with the
    query at key index `positions[b, i]` when given, `i` otherwise). Then

    ```
    dquery[b, i, h, :] = scale * sum_j ds[j] * key[b, j, g, :]
    dkey[b, j, g, :]   = scale * sum_{h of group g} sum_i ds[j] * query[b, i, h, :]
    dvalue[b, j, g, :] = sum_{h of group g} sum_i p[j] * grad[b, i, h, :]
    ```

    (`p` and `ds` depend on `b`, `h` and `i`.) A query that sees no key
    contributes nothing.

    ```mlir
    %dq, %dk, %dv = nn.attention_grad %dout, %q, %k, %v mask = causal
        : tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>,
          tensor<8x16x4x8xf32>
    ```

    Constraints: `grad` has the type of the attention's result; otherwise
    those of `nn.attention`. The results have the types of `query`, `key`
    and `value`.
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$query,
                       NN_FloatTensor:$key, NN_FloatTensor:$value,
                       Optional<NN_IntTensor>:$subtree_end,
                       Optional<NN_IntTensor>:$positions,
                       NN_MaskKindAttr:$mask, OptionalAttr<F64Attr>:$scale);
  let results = (outs NN_FloatTensor:$dquery, NN_FloatTensor:$dkey,
                      NN_FloatTensor:$dvalue);
  let assemblyFormat = [{
    $grad `,` $query `,` $key `,` $value `mask` `=` `` $mask
    (`subtree_end` $subtree_end^)? (`positions` $positions^)? attr-dict `:`
    type(operands)
  }];
  let ascendLoomOperator = "aclnnLoomAttentionBackward";
}

def NN_GatherGradOp : NN_Op<"gather_grad", [Pure, NN_LocalView]> {
  let summary = "Scatter-add: the input gradient of nn.gather";
  let description = [{
    The gradient with respect to `input` of
    `y = nn.gather(input, indices) dim = d` given `grad = dL/dy`: zeros of
    the result type, into which every element of `grad` is added at the
    position it was gathered from:

    ```
    result = 0
    result[i0, ..., indices[i0, ..., in], ..., in] += grad[i0, ..., in]
    ```

    (the index replaces coordinate `d`). Several elements gathered from one
    position add up there. An index outside `[0, result.shape[d])` adds
    nothing.

    With the optional 0-d `i64` operand `offset`, the result is positions
    `[offset, offset + result.shape[d])` along `d` of a larger one: an index
    adds at `index - offset`, and nothing when that is outside the result.
    This is the local form of a scatter whose result is split along `d` (a
    vocabulary-split embedding table's gradient); specialisation adds it.

    ```mlir
    %dlogits = nn.gather_grad %dy, %labels dim = 1
        : tensor<16x1xf32>, tensor<16x1xi64> to tensor<16x64xf32>
    %drows = nn.gather_grad %dy, %ids dim = 0 offset %start
        : tensor<128x32xf32>, tensor<128x32xi64> to tensor<32x32xf32>
    ```

    Constraints: `grad` has the shape of `indices`; the result has the
    element type and rank of `grad` and, except along `dim`, its sizes;
    `dim` is in `[0, rank)`.
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_IntTensor:$indices,
                       Optional<NN_I64Scalar>:$offset, I64Attr:$dim);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices `dim` `=` $dim (`offset` $offset^)? attr-dict `:`
    type($grad) `,` type($indices) `to` type($result)
  }];
  let hasVerifier = 1;
  let ascendLoomOperator = "aclnnLoomGatherBackward";
}

def NN_SliceGradOp : NN_Op<"slice_grad", [Pure]> {
  let summary = "The input gradient of nn.slice";
  let description = [{
    The gradient with respect to `input` of
    `y = nn.slice(input) offsets = o sizes = shape(grad) strides = s` given
    `grad = dL/dy`: zeros of the result type with `grad` written at the
    positions the slice read,

    ```
    result = 0
    result[o[0] + i0 * s[0], o[1] + i1 * s[1], ...] = grad[i0, i1, ...]
    ```

    The positions are distinct (strides are positive), so nothing adds up.

    ```mlir
    %dx = nn.slice_grad %dy offsets = [0, 2] strides = [1, 2]
        : tensor<4x3xf32> to tensor<4x8xf32>
    ```

    Constraints: `grad` has a static shape; the result has its rank and
    element type; one offset and stride per dimension; `nn.slice` of the
    result with these offsets and strides and sizes the shape of `grad` is
    valid (offsets non-negative, strides positive, every position inside
    the result).
  }];
  let arguments = (ins NN_FloatTensor:$grad, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$strides);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `offsets` `=` $offsets `strides` `=` $strides attr-dict `:`
    type($grad) `to` type($result)
  }];
  let hasVerifier = 1;
}

#endif // LOOM_NN_BACKWARD_OPS
