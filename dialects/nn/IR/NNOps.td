//===- NNOps.td - Operations of the nn dialect -------------*- tablegen -*-===//
//
// Every op verifies its operands and, where the result type follows from
// them, infers it (InferTypeOpInterface through `NN_InferredOp`), so the
// custom assembly only spells operand types.
//
// Every forward op implements GradientOpInterface (NNGradients.cpp); its
// description ends with what autodiff builds for it. The backward ops that
// gradients need beyond the forward ops are in NNBackwardOps.td.
//
// Assembly conventions: attributes that determine the result shape (dims,
// permutation, offsets, ...) and enumerations are keywords; numeric
// hyper-parameters (epsilon, rates, learning rates) sit in the attribute
// dictionary.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_NN_OPS
#define LOOM_NN_OPS

include "dialects/Interfaces/GradientOpInterface.td"
include "dialects/nn/IR/NNAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Shape inference
//===----------------------------------------------------------------------===//

/// Gives an op one function, `inferShape`, that both checks the operands and
/// attributes and computes the result types. It serves InferTypeOpInterface
/// (parsing, builders) and the op verifier, which runs it before comparing
/// the inferred types with the actual ones, so a malformed op gets one clear
/// diagnostic.
def NN_InferShape : NativeOpTrait<"InferShape", [],
    /*extraOpDeclaration=*/[{
      /// Checks the operands and attributes in `adaptor` and computes the
      /// result types. Reports problems through `diag`, which may be silent.
      static ::llvm::LogicalResult inferShape(Adaptor adaptor,
          ::llvm::SmallVectorImpl<::mlir::Type> &resultTypes,
          const ::loom::nn::ShapeDiag &diag);
    }],
    /*extraOpDefinition=*/[{
      ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
          std::optional<::mlir::Location> location, Adaptor adaptor,
          ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes) {
        return inferShape(adaptor, inferredReturnTypes,
                          ::loom::nn::ShapeDiag(location, getOperationName()));
      }
    }]> {
  let cppNamespace = "::loom::nn::OpTrait";
}

/// An op whose result types are inferred from its operands and attributes.
class NN_InferredOp<string mnemonic, list<Trait> traits = []>
    : NN_Op<mnemonic,
            !listconcat([Pure], traits, [NN_InferShape, InferTypeOpAdaptor])>;

/// A forward op that builds its own gradient (see GradientOpInterface).
def NN_Differentiable : DeclareOpInterfaceMethods<GradientOpInterface>;

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def NN_FillOp : NN_Op<"fill", [Pure, NN_Differentiable]> {
  let summary = "A tensor with every element equal to one value";
  let description = [{
    Yields a tensor of the result type whose every element is `value`,
    rounded to the element type. Gradients use it for seeds and for the
    constants of their formulas; a 0-d fill broadcasts in every element-wise
    op.

    ```mlir
    %one = nn.fill 1.0 : tensor<f32>
    %zeros = nn.fill 0.0 : tensor<4x8xbf16>
    ```

    Constraints: the result has a static shape; `value` is not NaN.

    Gradient: none (no operands).
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasVerifier = 1;
  let kernelTypes = NN_AllKernelTypes;
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def NN_MatmulOp : NN_InferredOp<"matmul", [NN_Differentiable]> {
  let summary = "Batched matrix product with broadcast batch dimensions";
  let description = [{
    Multiplies the matrices held in the last two dimensions of `lhs` and
    `rhs`. The leading (batch) dimensions broadcast with numpy rules.
    `transpose_lhs` reads `lhs` as `[..., K, M]` instead of `[..., M, K]`,
    `transpose_rhs` reads `rhs` as `[..., N, K]` instead of `[..., K, N]`.
    The result is `[broadcast(batch_lhs, batch_rhs)..., M, N]`.

    ```mlir
    %0 = nn.matmul %a, %b : tensor<8x16x32xf32>, tensor<32x64xf32>
    // %0 : tensor<8x16x64xf32>
    %1 = nn.matmul %q, %k transpose_rhs : tensor<4x16x8xf32>, tensor<4x16x8xf32>
    // %1 : tensor<4x16x16xf32>
    ```

    Constraints:
    * both operands have rank at least 2 and the same element type;
    * the contracting dimensions (`K`) have the same size;
    * the batch dimensions are broadcast-compatible.

    Gradient: with `A`, `B` the matrices as read and `dY` the result
    gradient, `dA = dY B^T` and `dB = A^T dY`, built as `nn.matmul` with the
    transpose flags that read the stored operands directly, then summed over
    the batch dimensions an operand was broadcast along.
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)?
    (`transpose_rhs` $transpose_rhs^)? attr-dict `:` type($lhs) `,` type($rhs)
  }];
}

//===----------------------------------------------------------------------===//
// Element-wise binary ops
//===----------------------------------------------------------------------===//

class NN_BroadcastBinaryOp<string mnemonic, string formula, string gradient,
                           list<Trait> traits = []>
    : NN_InferredOp<mnemonic, !listconcat(traits, [NN_Differentiable])> {
  let summary = "Element-wise `" # formula # "` with numpy broadcasting";
  let description = [{
    Computes `}] # formula # [{` element by element. The operand shapes
    broadcast with numpy rules: they are aligned at their last dimension, a
    missing leading dimension counts as 1, and each pair of dimensions must
    be equal or contain a 1; the result takes the larger size. A NaN in
    either operand gives NaN (`minimum` and `maximum` included, as numpy's).

    ```mlir
    %0 = nn.}] # mnemonic # [{ %a, %b : tensor<4x8xf32>, tensor<8xf32>
    // %0 : tensor<4x8xf32>
    ```

    Constraints: both operands have the same float element type and
    broadcast-compatible shapes.

    Gradient (`dy` the result gradient): }] # gradient # [{ Each operand's
    gradient is then summed over the dimensions it was broadcast along
    (`nn.reduce sum`, then `nn.reshape` to the operand's shape).
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

def NN_AddOp : NN_BroadcastBinaryOp<"add", "lhs + rhs",
    "`dlhs = drhs = dy`.", [Commutative]>;
def NN_SubOp : NN_BroadcastBinaryOp<"sub", "lhs - rhs",
    "`dlhs = dy`, `drhs = -dy`.">;
def NN_MulOp : NN_BroadcastBinaryOp<"mul", "lhs * rhs",
    "`dlhs = dy * rhs`, `drhs = dy * lhs`.", [Commutative]>;
def NN_DivOp : NN_BroadcastBinaryOp<"div", "lhs / rhs",
    "`dlhs = dy / rhs`, `drhs = -(dy / rhs) * result`.">;
def NN_MinimumOp : NN_BroadcastBinaryOp<"minimum", "min(lhs, rhs)",
    "`dy` goes to the smaller operand; where `lhs == rhs` each operand "
    "gets `dy / 2` (symmetric, as in PyTorch and JAX); where either is "
    "NaN neither gets any.", [Commutative]>;
def NN_MaximumOp : NN_BroadcastBinaryOp<"maximum", "max(lhs, rhs)",
    "`dy` goes to the larger operand; where `lhs == rhs` each operand "
    "gets `dy / 2` (symmetric, as in PyTorch and JAX); where either is "
    "NaN neither gets any.", [Commutative]>;

//===----------------------------------------------------------------------===//
// Element-wise unary ops
//===----------------------------------------------------------------------===//

class NN_UnaryOp<string mnemonic, string formula, string gradient,
                 list<Trait> traits = []>
    : NN_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType], traits,
                                  [NN_Differentiable])> {
  let summary = "Element-wise `" # formula # "`";
  let description = [{
    Computes `}] # formula # [{` element by element; the result has the
    operand's type. A NaN gives NaN (`relu` included).

    ```mlir
    %0 = nn.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```

    Constraints: the operand is a float tensor.

    Gradient (`dy` the result gradient, `y` the result): }] # gradient # [{
  }];
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def NN_NegOp : NN_UnaryOp<"neg", "-x", "`dx = -dy`.">;
def NN_ExpOp : NN_UnaryOp<"exp", "exp(x)", "`dx = dy * y`.">;
def NN_LogOp : NN_UnaryOp<"log", "log(x)", "`dx = dy / x`.">;
def NN_SqrtOp : NN_UnaryOp<"sqrt", "sqrt(x)", "`dx = (dy / y) * 0.5`.">;
def NN_RsqrtOp : NN_UnaryOp<"rsqrt", "1 / sqrt(x)",
    "`dx = dy * (y * y * y) * -0.5`.">;
def NN_TanhOp : NN_UnaryOp<"tanh", "tanh(x)", "`dx = dy * (1 - y * y)`.">;
def NN_ReluOp : NN_UnaryOp<"relu", "max(x, 0)",
    "`dx = x > 0 ? dy : 0` (no gradient at `x = 0`, as in PyTorch).">;
def NN_SiluOp : NN_UnaryOp<"silu", "x * sigmoid(x)",
    "with `s = 1 / (1 + exp(-x))`, `dx = dy * (s + y * (1 - s))`.">;
def NN_SinOp : NN_UnaryOp<"sin", "sin(x)", "`dx = dy * cos(x)`.">;
def NN_CosOp : NN_UnaryOp<"cos", "cos(x)", "`dx = -(dy * sin(x))`.">;

def NN_GeluOp : NN_Op<"gelu",
    [Pure, SameOperandsAndResultType, NN_Differentiable]> {
  let summary = "Element-wise GELU, exact or with the tanh approximation";
  let description = [{
    Computes the Gaussian error linear unit `x * Phi(x)`, `Phi` the standard
    normal CDF. With `approximate = none` (the default, omitted from the
    assembly) `Phi(x) = (1 + erf(x / sqrt(2))) / 2`; with
    `approximate = tanh` it is
    `(1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) / 2`, as in GPT-2.

    ```mlir
    %0 = nn.gelu %x : tensor<4x8xf32>
    %1 = nn.gelu %x approximate = tanh : tensor<4x8xf32>
    ```

    Constraints: the operand is a float tensor.

    Gradient: `nn.gelu_grad` with the same approximation.
  }];
  let arguments = (ins NN_FloatTensor:$input,
      DefaultValuedAttr<NN_GeluApproximationAttr,
                        "::loom::nn::GeluApproximation::None">:$approximate);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`approximate` `=` `` $approximate^)? attr-dict `:` type($input)
  }];
}

//===----------------------------------------------------------------------===//
// Comparison, selection, clamping, casts
//===----------------------------------------------------------------------===//

def NN_CompareOp : NN_InferredOp<"compare", [NN_Differentiable]> {
  let summary = "Element-wise comparison with numpy broadcasting";
  let description = [{
    Compares `lhs` and `rhs` element by element with `predicate` (`eq`, `ne`,
    `lt`, `le`, `gt`, `ge`) and yields an `i1` tensor of the broadcast
    shape. Float comparisons are ordered: any comparison with a NaN is false
    except `ne`, which is true.

    ```mlir
    %0 = nn.compare lt, %a, %b : tensor<4x8xf32>, tensor<4x1xf32>
    // %0 : tensor<4x8xi1>
    ```

    Constraints: both operands have the same element type (float or integer)
    and broadcast-compatible shapes.

    Gradient: none; the result is a predicate.
  }];
  let arguments = (ins NN_ComparePredicateAttr:$predicate,
                       NN_NumericTensor:$lhs, NN_NumericTensor:$rhs);
  let results = (outs NN_BoolTensor:$result);
  let assemblyFormat = [{
    `` $predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)
  }];
  let kernelTypes = NN_NumericKernelTypes;
}

def NN_SelectOp : NN_InferredOp<"select", [NN_Differentiable]> {
  let summary = "Element-wise choice between two tensors";
  let description = [{
    Yields `true_value` where `condition` is true and `false_value`
    elsewhere. The three shapes broadcast together with numpy rules.

    ```mlir
    %0 = nn.select %c, %a, %b : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>
    // %0 : tensor<4x8xf32>
    ```

    Constraints: `condition` is an `i1` tensor; `true_value` and
    `false_value` have the same element type; the three shapes are
    broadcast-compatible.

    Gradient: `dtrue = select(condition, dy, 0)` and
    `dfalse = select(condition, 0, dy)`, each summed over the dimensions its
    operand was broadcast along; none for `condition` or integer values.
  }];
  let arguments = (ins NN_BoolTensor:$condition, NN_NumericTensor:$true_value,
                       NN_NumericTensor:$false_value);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat = [{
    $condition `,` $true_value `,` $false_value attr-dict `:`
    type($condition) `,` type($true_value) `,` type($false_value)
  }];
  let kernelTypes = NN_NumericKernelTypes;
}

def NN_ClampOp : NN_Op<"clamp",
    [Pure, SameOperandsAndResultType, NN_Differentiable]> {
  let summary = "Element-wise clamp to a closed interval";
  let description = [{
    Computes `min(max(x, min), max)` element by element. The bounds are `f64`
    attributes, rounded to the element type. A NaN stays NaN.

    ```mlir
    %0 = nn.clamp %x {max = 6.0 : f64, min = 0.0 : f64} : tensor<4x8xf32>
    ```

    Constraints: the operand is a float tensor; neither bound is NaN and
    `min <= max`.

    Gradient: `dx = (x >= min and x <= max) ? dy : 0`; the bounds are
    inclusive, so a value sitting on a bound keeps its gradient (as in
    PyTorch), and NaN gets none.
  }];
  let arguments = (ins NN_FloatTensor:$input, F64Attr:$min, F64Attr:$max);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def NN_CastOp : NN_Op<"cast", [Pure, NN_Differentiable]> {
  let summary = "Element type conversion";
  let description = [{
    Converts every element to the result's element type. Float to float
    rounds to nearest even; float to integer truncates toward zero
    (saturating at the integer range, NaN becomes 0); integer to float rounds
    to nearest; integer to integer sign-extends, or keeps the low bits when
    narrowing (as `arith.trunci`); `i1` converts to 0 or 1 and a non-zero
    value (NaN included) converts to `true`.

    ```mlir
    %0 = nn.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
    ```

    Constraints: operand and result have the same shape.

    Gradient: between float types, `dy` cast back to the operand's type;
    none when either side is an integer or `i1` tensor.
  }];
  let arguments = (ins NN_AnyTensor:$input);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let kernelTypes = NN_AllKernelTypes;
  let kernelTypesIndependent = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def NN_ReduceOp : NN_InferredOp<"reduce", [NN_Differentiable, NN_LocalView]> {
  let summary = "Sum, mean or maximum over a set of dimensions";
  let description = [{
    Reduces `input` over the dimensions in `dims` with `kind` (`sum`, `mean`
    or `max`). Without `keep_dims` the reduced dimensions disappear from the
    result; with it they stay with size 1. The order of `dims` does not
    matter. `max` propagates NaN. Over zero elements `sum` gives 0, `mean`
    NaN and `max` -inf.

    ```mlir
    %0 = nn.reduce sum %x dims = [1] : tensor<4x8xf32>
    // %0 : tensor<4xf32>
    %1 = nn.reduce max %x dims = [0, 1] keep_dims : tensor<4x8xf32>
    // %1 : tensor<1x1xf32>
    ```

    Constraints: `dims` is not empty; every entry is in `[0, rank)`; no entry
    is repeated.

    Gradient (`dy` reshaped to keep the reduced dimensions as 1): `sum`
    broadcasts `dy` back; `mean` broadcasts `dy / count`, `count` the number
    of elements reduced into each result (the reduced dimensions must be
    static); `max` splits `dy` evenly among the elements equal to the
    maximum (`dx = x == y ? dy / n : 0`, `n` the number of such elements in
    the reduced slice), as PyTorch's `amax` and JAX do.
  }];
  let arguments = (ins NN_ReduceKindAttr:$kind, NN_FloatTensor:$input,
                       DenseI64ArrayAttr:$dims, UnitAttr:$keep_dims);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    `` $kind $input `dims` `=` $dims (`keep_dims` $keep_dims^)? attr-dict `:`
    type($input)
  }];
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

def NN_BroadcastOp : NN_Op<"broadcast", [Pure, NN_Differentiable]> {
  let summary = "Broadcast to a larger shape";
  let description = [{
    Replicates `input` to the result shape. Without `broadcast_dims` numpy
    rules apply: the input is aligned with the last result dimensions and
    every input dimension is 1 or equal to its result dimension. With
    `broadcast_dims`, input dimension `i` becomes result dimension
    `broadcast_dims[i]` (again 1 or equal) and every other result dimension
    is new.

    ```mlir
    %0 = nn.broadcast %b : tensor<8xf32> to tensor<4x8xf32>
    %1 = nn.broadcast %c broadcast_dims = [0] : tensor<4xf32> to tensor<4x8xf32>
    ```

    Constraints: same element type; the input rank is at most the result
    rank; with `broadcast_dims`, it has one strictly increasing entry per
    input dimension, each in `[0, result rank)`; every mapped input
    dimension is 1 or equal to its result dimension.

    Gradient: `dy` summed over the new dimensions and over the dimensions
    that grew from 1, reshaped to the operand's shape.
  }];
  let arguments = (ins NN_AnyTensor:$input,
                       OptionalAttr<DenseI64ArrayAttr>:$broadcast_dims);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = [{
    $input (`broadcast_dims` `=` $broadcast_dims^)? attr-dict `:`
    type($input) `to` type($result)
  }];
  let hasVerifier = 1;
  let kernelTypes = NN_AllKernelTypes;
}

def NN_ReshapeOp : NN_Op<"reshape", [Pure, NN_Differentiable]> {
  let summary = "Reinterpret a tensor with another shape";
  let description = [{
    Yields the elements of `input`, in row-major order, laid out in the
    result shape.

    ```mlir
    %0 = nn.reshape %x : tensor<8x16x32xf32> to tensor<128x32xf32>
    ```

    Constraints: same element type; when both shapes are static they hold
    the same number of elements.

    Gradient: `dy` reshaped to the operand's shape.
  }];
  let arguments = (ins NN_AnyTensor:$input);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let kernelTypes = NN_AllKernelTypes;
}

def NN_TransposeOp : NN_InferredOp<"transpose", [NN_Differentiable]> {
  let summary = "Permute dimensions";
  let description = [{
    Result dimension `i` is input dimension `permutation[i]`.

    ```mlir
    %0 = nn.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32>
    // %0 : tensor<2x4x16x8xf32>
    ```

    Constraints: `permutation` is a permutation of `[0, rank)`.

    Gradient: `dy` transposed with the inverse permutation.
  }];
  let arguments = (ins NN_AnyTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = [{
    $input `permutation` `=` $permutation attr-dict `:` type($input)
  }];
  let kernelTypes = NN_AllKernelTypes;
}

def NN_SliceOp : NN_InferredOp<"slice", [NN_Differentiable, NN_LocalView]> {
  let summary = "Static strided slice";
  let description = [{
    Result element `[i0, i1, ...]` is input element
    `[offsets[0] + i0 * strides[0], offsets[1] + i1 * strides[1], ...]`;
    the result shape is `sizes`.

    ```mlir
    %0 = nn.slice %x offsets = [0, 2] sizes = [4, 3] strides = [1, 2]
        : tensor<4x8xf32>
    // %0 : tensor<4x3xf32>
    ```

    Constraints: one offset, size and stride per dimension; offsets and
    sizes are non-negative, strides positive; every index read is inside the
    input (checked for static dimensions).

    Gradient: `nn.slice_grad` (zeros of the input's shape with `dy` at the
    positions read).
  }];
  let arguments = (ins NN_AnyTensor:$input, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$sizes, DenseI64ArrayAttr:$strides);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = [{
    $input `offsets` `=` $offsets `sizes` `=` $sizes `strides` `=` $strides
    attr-dict `:` type($input)
  }];
  let kernelTypes = NN_AllKernelTypes;
}

def NN_ConcatOp : NN_InferredOp<"concat", [NN_Differentiable]> {
  let summary = "Concatenate tensors along one dimension";
  let description = [{
    Joins `inputs` along dimension `dim`, in operand order.

    ```mlir
    %0 = nn.concat %a, %b dim = 1 : tensor<4x3xf32>, tensor<4x5xf32>
    // %0 : tensor<4x8xf32>
    ```

    Constraints: at least one input; all inputs have the same rank and
    element type; `dim` is in `[0, rank)`; all other dimensions match.

    Gradient: each input gets its piece of `dy`, an `nn.slice` along `dim`
    (static shapes only).
  }];
  let arguments = (ins Variadic<NN_AnyTensor>:$inputs, I64Attr:$dim);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = "$inputs `dim` `=` $dim attr-dict `:` type($inputs)";
  let kernelTypes = NN_AllKernelTypes;
}

def NN_GatherOp : NN_InferredOp<"gather", [NN_Differentiable]> {
  let summary = "Gather along one dimension with an index tensor";
  let description = [{
    Take-along-axis gather: `indices` has the rank of `input`, and

    ```
    result[i0, ..., i(dim), ..., in] =
        input[i0, ..., indices[i0, ..., in], ..., in]
    ```

    This is `torch.gather(input, dim, indices)` and
    `numpy.take_along_axis(input, indices, dim)` without broadcasting: every
    dimension other than `dim` has the same size in `indices` and `input`.
    The result has the shape of `indices` and the element type of `input`.
    An index outside `[0, input.shape[dim])` gives an undefined element.

    ```mlir
    %0 = nn.gather %logits, %labels dim = 1
        : tensor<16x64xf32>, tensor<16x1xi64>
    // %0 : tensor<16x1xf32>
    ```

    Constraints: same rank; `dim` in `[0, rank)`; other dimensions equal.

    Gradient: `nn.gather_grad` (a scatter-add of `dy` into zeros of the
    input's shape); none for the indices.
  }];
  let arguments = (ins NN_AnyTensor:$input, NN_IntTensor:$indices,
                       I64Attr:$dim);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = [{
    $input `,` $indices `dim` `=` $dim attr-dict `:` type($input) `,`
    type($indices)
  }];
  let kernelTypes = NN_AllKernelTypes;
}

def NN_IotaOp : NN_Op<"iota", [Pure, NN_Differentiable, NN_LocalView]> {
  let summary = "Indices along one dimension";
  let description = [{
    Element `[i0, ..., in]` of the result is `i(dim) + offset`, converted to
    the element type; `offset` is an optional 0-d `i64` operand (0 when
    absent). The offset lets a block of a longer tensor count from its
    global position (a device's part of a split sequence).

    ```mlir
    %0 = nn.iota dim = 1 : tensor<8x16xi64>
    %1 = nn.iota dim = 1 offset %start : tensor<8x8xi64>
    ```

    Constraints: the result has rank at least 1 and `dim` is in
    `[0, rank)`.

    Gradient: none.
  }];
  let arguments = (ins Optional<NN_I64Scalar>:$offset, I64Attr:$dim);
  let results = (outs NN_NumericTensor:$result);
  let assemblyFormat =
      "`dim` `=` $dim (`offset` $offset^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
  let kernelTypes = NN_NumericKernelTypes;
  let ascendLoomOperator = "aclnnLoomIota";
}

//===----------------------------------------------------------------------===//
// Softmax and normalisation
//===----------------------------------------------------------------------===//

class NN_SoftmaxBaseOp<string mnemonic, string formula, string gradient>
    : NN_Op<mnemonic, [Pure, SameOperandsAndResultType, NN_Differentiable]> {
  let description = [{
    Computes `}] # formula # [{` over dimension `dim`, in a numerically
    stable way (the maximum along `dim` is subtracted first).

    ```mlir
    %0 = nn.}] # mnemonic # [{ %x dim = 1 : tensor<4x8xf32>
    ```

    Constraints: the operand is a float tensor of rank at least 1 and `dim`
    is in `[0, rank)`.

    Gradient (`dy` the result gradient, `y` the result, sums along `dim`
    with the dimension kept): }] # gradient # [{
  }];
  let arguments = (ins NN_FloatTensor:$input, I64Attr:$dim);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input `dim` `=` $dim attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def NN_SoftmaxOp
    : NN_SoftmaxBaseOp<"softmax", "exp(x) / sum(exp(x))",
                       "`dx = y * (dy - sum(dy * y))`."> {
  let summary = "Softmax along one dimension";
}

def NN_LogSoftmaxOp
    : NN_SoftmaxBaseOp<"log_softmax", "x - log(sum(exp(x)))",
                       "`dx = dy - exp(y) * sum(dy)`."> {
  let summary = "Log-softmax along one dimension";
}

def NN_LayerNormOp
    : NN_InferredOp<"layer_norm", [AttrSizedOperandSegments,
                                   NN_Differentiable]> {
  let summary = "Layer normalisation over the trailing dimensions";
  let description = [{
    Normalises `input` over its last `normalized_dims` dimensions (default
    1) to zero mean and unit variance (biased variance, `epsilon` added to
    it before the square root), then multiplies by `scale` and adds `bias`
    when they are given:

    ```
    y = (x - mean(x)) / sqrt(var(x) + epsilon) * scale + bias
    ```

    ```mlir
    %0 = nn.layer_norm %x scale %g bias %b
        : tensor<8x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %1 = nn.layer_norm %x {epsilon = 1.0e-06 : f64, normalized_dims = 2 : i64}
        : tensor<8x16x32xf32>
    ```

    Constraints: `1 <= normalized_dims <= rank`; `scale` and `bias`, when
    present, have the normalised trailing shape and the input's element
    type; `epsilon > 0`.

    Gradient: `dx` is `nn.layer_norm_grad`; with `xhat` this op without
    scale and bias, `dscale = sum(dy * xhat)` and `dbias = sum(dy)`, the
    sums over the leading (not normalised) dimensions.
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       Optional<NN_FloatTensor>:$scale,
                       Optional<NN_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "1">:$normalized_dims,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`scale` $scale^)? (`bias` $bias^)? attr-dict `:` type(operands)
  }];
  }

def NN_RmsNormOp : NN_InferredOp<"rms_norm", [NN_Differentiable]> {
  let summary = "Root-mean-square normalisation over the trailing dimensions";
  let description = [{
    Divides `input` by the root mean square of its last `normalized_dims`
    dimensions (default 1), then multiplies by `scale` when it is given:

    ```
    y = x / sqrt(mean(x^2) + epsilon) * scale
    ```

    ```mlir
    %0 = nn.rms_norm %x scale %g : tensor<8x16x32xf32>, tensor<32xf32>
    ```

    Constraints: `1 <= normalized_dims <= rank`; `scale`, when present, has
    the normalised trailing shape and the input's element type;
    `epsilon > 0`.

    Gradient: `dx` is `nn.rms_norm_grad`; with `xhat` this op without
    scale, `dscale = sum(dy * xhat)` over the leading dimensions.
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       Optional<NN_FloatTensor>:$scale,
                       DefaultValuedAttr<I64Attr, "1">:$normalized_dims,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`scale` $scale^)? attr-dict `:` type(operands)
  }];
  let ascendLoomOperator = "aclnnLoomRmsNorm";
  }

//===----------------------------------------------------------------------===//
// Transformer building blocks
//===----------------------------------------------------------------------===//

def NN_RopeOp : NN_Op<"rope",
    [Pure, AllTypesMatch<["input", "result"]>, NN_Differentiable]> {
  let summary = "Rotary position embedding";
  let description = [{
    Rotates pairs of features of `input`, laid out as
    `[batch..., seq, heads, head_dim]`, by angles proportional to the
    token's position. `positions` has shape `[batch..., seq]` (the input
    shape without its last two dimensions) and holds each token's position;
    positions are explicit so that packed or deduplicated sequences keep
    their original ones.

    With `d = head_dim`, feature `i < d / 2` is paired with feature
    `i + d / 2` (the "rotate half" layout of GPT-NeoX and Llama), and with
    `a = positions[...] * theta^(-2i / d)`:

    ```
    y[i]         = x[i] * cos(a) - x[i + d/2] * sin(a)
    y[i + d / 2] = x[i] * sin(a) + x[i + d/2] * cos(a)
    ```

    `theta` defaults to 10000. With `inverse` the rotation goes the other
    way (`a` is replaced by `-a`): the inverse, and the transpose, of the
    rotation.

    ```mlir
    %0 = nn.rope %q, %pos : tensor<8x16x4x8xf32>, tensor<8x16xi64>
    %1 = nn.rope %dq, %pos inverse : tensor<8x16x4x8xf32>, tensor<8x16xi64>
    ```

    Constraints: `input` has rank at least 3 and an even `head_dim`;
    `positions` is an integer tensor of shape `[batch..., seq]`;
    `theta > 0`.

    Gradient: the rotation is orthogonal, so `dx` is `dy` rotated the other
    way: `nn.rope` of `dy` with the same positions and `theta` and
    `inverse` toggled. None for the positions.
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_IntTensor:$positions,
                       DefaultValuedAttr<F64Attr, "10000.0">:$theta,
                       UnitAttr:$inverse);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions (`inverse` $inverse^)? attr-dict `:` type($input)
    `,` type($positions)
  }];
  let hasVerifier = 1;
  let ascendLoomOperator = "aclnnLoomRope";
}

def NN_DropoutOp : NN_Op<"dropout",
    [Pure, AttrSizedOperandSegments, AllTypesMatch<["input", "result"]>,
     NN_Differentiable, NN_LocalView]> {
  let summary = "Inverted dropout with an explicit seed";
  let description = [{
    Zeroes each element with probability `rate` and multiplies the others
    by `1 / (1 - rate)`, computed in f64 and rounded to the element type.
    The mask is a pure function of the key
    `k = seed + offset` (mod 2^64; `offset` is the optional 0-d `i64`
    operand, 0 when absent, e.g. the step counter) and of the element's
    row-major linear index `i`: with the splitmix64 finaliser

    ```
    z = k + (i + 1) * 0x9E3779B97F4A7C15           (mod 2^64)
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB
    z = z ^ (z >> 31)
    u = (z >> 11) * 2^-53                           (uniform in [0, 1))
    ```

    the element is dropped iff `u < rate`. Every backend computes the same
    mask, so the op is pure and its gradient (the same mask) reproducible.
    `rate = 0` is the identity.

    The index counts in the global tensor. With `starts` (one 0-d `i64`
    per dimension, after `at`) and `global_shape`, the input is the block
    of a tensor of shape `global_shape` whose element `[j0, j1, ...]` is
    the global element `[starts[0] + j0, starts[1] + j1, ...]`, and `i` is
    that element's row-major index in `global_shape`; without them the
    input is the whole tensor. This is the local op of a split dropout
    (specialisation and partitioning across device groups add them through
    its local view), so every device draws exactly the mask elements the
    single-device op draws for its block.

    ```mlir
    %0 = nn.dropout %x {rate = 1.0e-01 : f64, seed = 42 : i64}
        : tensor<8x32xf32>
    %1 = nn.dropout %x, %step {rate = 1.0e-01 : f64, seed = 42 : i64}
        : tensor<8x32xf32>
    %2 = nn.dropout %x at [%r, %c] {global_shape = array<i64: 16, 32>,
        rate = 1.0e-01 : f64, seed = 42 : i64} : tensor<8x32xf32>
    ```

    Constraints: `0 <= rate < 1`; `starts` is empty or has one value per
    dimension, and `global_shape` is given exactly when `starts` is, with
    the input's rank and no size smaller than the input's.

    Gradient: `nn.dropout` of `dy` with the same `seed`, `offset`, `rate`
    (and `starts`, `global_shape`), hence the same mask and scale; none for
    the offset and the starts.
  }];
  let arguments = (ins NN_FloatTensor:$input, Optional<NN_I64Scalar>:$offset,
                       Variadic<NN_I64Scalar>:$starts,
                       F64Attr:$rate, I64Attr:$seed,
                       OptionalAttr<DenseI64ArrayAttr>:$global_shape);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`,` $offset^)? (`at` ` ` `[` $starts^ `]`)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
  let ascendLoomOperator = "aclnnLoomDropout";
}

def NN_EmbeddingOp : NN_InferredOp<"embedding",
    [NN_Differentiable, NN_LocalView]> {
  let summary = "Look up rows of an embedding table";
  let description = [{
    `result[i..., j...] = table[ids[i...], j...]`. The result shape is the
    shape of `ids` followed by the shape of a table row (`table`'s
    dimensions after the first). An id outside `[0, vocab)` gives undefined
    elements. A table of rank above 2 is looked up row by row as a whole,
    without a reshape to `[vocab, width]`, so a split of a row's dimensions
    stays a split of the result's (the replicas' weights of a placed MoE
    layer under tensor parallelism, docs/moe.md).

    With the optional 0-d `i64` operand `offset`, the table holds rows
    `[offset, offset + vocab)` of a larger one: an id in that range reads
    row `id - offset`, any other id gives a zero row. This is the local
    lookup of a table split along the vocabulary (the devices' results sum
    to the whole lookup, one non-zero term per id); specialisation adds it.

    ```mlir
    %0 = nn.embedding %table, %ids : tensor<64x32xf32>, tensor<8x16xi64>
    // %0 : tensor<8x16x32xf32>
    %1 = nn.embedding %half, %ids offset %start
        : tensor<32x32xf32>, tensor<8x16xi64>
    %2 = nn.embedding %experts, %lookup : tensor<4x16x12xf32>, tensor<6xi64>
    // %2 : tensor<6x16x12xf32>
    ```

    Constraints: `table` has rank 2 or more (`[vocab, row...]`); `ids` is an
    integer tensor.

    Gradient: a scatter-add of `dy` into the rows named by `ids`,
    `dtable[ids[i...], j...] += dy[i..., j...]`, built as `nn.gather_grad`
    along dimension 0 of `dy` reshaped to `[tokens, row...]` with `ids`
    broadcast to the same shape; none for the ids. (Differentiate before specialisation:
    a lookup with `offset` has no gradient rule.)
  }];
  let arguments = (ins NN_FloatTensor:$table, NN_IntTensor:$ids,
                       Optional<NN_I64Scalar>:$offset);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $ids (`offset` $offset^)? attr-dict `:` type($table) `,`
    type($ids)
  }];
  let ascendLoomOperator = "aclnnLoomEmbedding";
  let ascendCustomKernel = 1;
}

def NN_AttentionOp : NN_InferredOp<"attention",
    [AttrSizedOperandSegments, NN_Differentiable, NN_LocalView]> {
  let summary = "Scaled dot-product attention with causal or tree masks";
  let description = [{
    Multi-head attention on `[batch, seq, heads, head_dim]` tensors:

    ```
    out[b, i, h, :] = sum_j softmax_j(scale * q[b, i, h, :] . k[b, j, g, :]
                                      + mask(b, i, j)) * v[b, j, g, :]
    ```

    where `g = h / (heads / kv_heads)`: the number of heads is that of
    `query`; `key` and `value` may have fewer heads (grouped-query
    attention), each shared by `heads / kv_heads` query heads. `scale`
    defaults to `1 / sqrt(head_dim)`. `value` may have its own head width;
    the result is `[batch, seq_q, heads, value_head_dim]`.

    Query `i` sits at key index `p(i)`: `positions[b, i]` when the optional
    `positions` operand (`[batch, seq_q]`, integer) is given, `i` otherwise
    (and then `seq_q == seq_k`). Positions let a chunk of queries attend to
    a longer key sequence (chunked prefill, KV caches). Key `j` is visible
    to query `i` when

    * `mask = none`: always;
    * `mask = causal`: `j <= p(i)`;
    * `mask = tree`: `j <= p(i) <= subtree_end[b, j]`: tokens are a prefix
      tree packed in depth-first order and `subtree_end[b, j]` (operand
      `subtree_end`, `[batch, seq_k]`, integer) is the index of the last
      token of `j`'s subtree, so a token sees exactly its ancestors and
      itself. A chain (`subtree_end[b, j] = seq_k - 1`) gives the causal
      mask.

    A query that sees no key yields zeros.

    ```mlir
    %0 = nn.attention %q, %k, %v mask = causal
        : tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>, tensor<8x16x4x8xf32>
    %1 = nn.attention %q, %k, %v mask = tree subtree_end %ends
        : tensor<1x32x4x8xf32>, tensor<1x32x4x8xf32>, tensor<1x32x4x8xf32>,
          tensor<1x32xi32>
    ```

    Constraints: `query`, `key` and `value` have rank 4 and one element
    type; batch sizes agree; `key` and `value` agree on sequence length and
    heads; `key` has the query's head_dim; the query heads are a multiple of
    the key/value heads; `subtree_end` is present iff `mask = tree`;
    `positions` needs a causal or tree mask; without `positions`, masked
    attention needs `seq_q == seq_k`; `scale > 0`.

    Gradient: `nn.attention_grad` (dq, dk, dv) with the same mask,
    positions and scale; none for `subtree_end` and `positions`.
  }];
  let arguments = (ins NN_FloatTensor:$query, NN_FloatTensor:$key,
                       NN_FloatTensor:$value,
                       Optional<NN_IntTensor>:$subtree_end,
                       Optional<NN_IntTensor>:$positions,
                       NN_MaskKindAttr:$mask, OptionalAttr<F64Attr>:$scale);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value `mask` `=` `` $mask
    (`subtree_end` $subtree_end^)? (`positions` $positions^)? attr-dict `:`
    type(operands)
  }];
  let ascendLoomOperator = "aclnnLoomAttention";
}

def NN_CrossEntropyOp
    : NN_InferredOp<"cross_entropy", [AttrSizedOperandSegments,
                                      NN_Differentiable]> {
  let summary = "Weighted softmax cross-entropy, normalised explicitly";
  let description = [{
    For logits `[N..., vocab]` and integer labels `[N...]`:

    ```
    loss = sum_n weights[n] * (logsumexp(logits[n, :]) - logits[n, labels[n]])
           / normalizer
    ```

    `weights` (`[N...]`, the logits' element type) defaults to all ones; a
    zero weight ignores a token (padding). The normaliser is explicit so
    that rewrites that change which tokens are computed (prefix
    deduplication, sharding) keep the loss of the original batch: give it
    either as the `f64` attribute `normalizer` (a constant such as the
    token count of the full batch) or as the 0-d operand after the
    `normalizer` keyword (a value computed in the program, e.g. the sum of
    the weights), not both. The result is a 0-d tensor of the logits'
    element type. A token with zero weight contributes nothing, whatever
    its label and logits (padding may carry any label, such as -100); a
    label outside `[0, vocab)` on a token with non-zero weight gives an
    undefined loss.

    ```mlir
    %0 = nn.cross_entropy %logits, %labels weights %w
        {normalizer = 1.28e+02 : f64}
        : tensor<8x16x64xf32>, tensor<8x16xi64>, tensor<8x16xf32>
    %1 = nn.cross_entropy %logits, %labels normalizer %n
        : tensor<8x16x64xf32>, tensor<8x16xi64>, tensor<f32>
    // %0, %1 : tensor<f32>
    ```

    Constraints: logits have rank at least 1; labels have the logits' shape
    without the last dimension, and so do weights; exactly one normaliser,
    a positive attribute or a 0-d operand of the logits' element type.

    Gradient (`dy` the 0-d result gradient, `N` the normaliser, `l[n]` the
    per-token loss `-log_softmax(logits[n, :])[labels[n]]`):
    `dlogits` is `nn.cross_entropy_grad`; `dweights[n] = dy * l[n] / N`
    (undefined where the label is outside `[0, vocab)`, as `l[n]` is);
    `dnormalizer = -(dy * result) / N`; none for the labels.
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IntTensor:$labels,
                       Optional<NN_FloatTensor>:$weights,
                       Optional<NN_FloatTensor>:$normalizer_value,
                       OptionalAttr<F64Attr>:$normalizer);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels (`weights` $weights^)?
    (`normalizer` $normalizer_value^)? attr-dict `:` type(operands)
  }];
  let ascendLoomOperator = "aclnnLoomCrossEntropy";
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def NN_TopkOp : NN_InferredOp<"topk", [NN_Differentiable]> {
  let summary = "Indices of the k largest elements along the last dimension";
  let description = [{
    For every row along the last dimension, the indices of its `k` largest
    elements, largest first; equal elements come in index order, and a NaN
    counts as larger than any number (so rows with NaNs keep them visible).
    The values are `nn.gather` of the input at the indices, which is
    differentiable; the router of a mixture of experts takes the top `k`
    experts of its scores this way.

    ```mlir
    %experts = nn.topk %scores k = 2 : tensor<16x4xf32>
    // %experts : tensor<16x2xi64>
    %weights = nn.gather %scores, %experts dim = 1
        : tensor<16x4xf32>, tensor<16x2xi64>
    ```

    Constraints: a float input of rank at least 1; `k` in `[1, n]` for a
    last dimension of size `n`.

    Gradient: none (the result is integer).
  }];
  let arguments = (ins NN_FloatTensor:$input, I64Attr:$k);
  let results = (outs NN_I64Tensor:$result);
  let assemblyFormat = "$input `k` `=` $k attr-dict `:` type($input)";
}

def NN_MoeRouteOp
    : NN_InferredOp<"moe_route", [AttrSizedOperandSegments, NN_Differentiable]> {
  let summary = "Buffer slots of routed tokens, grouped by expert";
  let description = [{
    `experts[t, j]` is the expert of token `t`'s `j`-th choice (of `k`).
    The entries, taken in row-major order, are grouped by expert in a
    buffer of `T * k` rows: expert `e`'s entries take rows
    `[start(e), start(e) + counts[e])` in the order they come, where
    `start(e)` is the sum of the counts of the experts before `e`.
    `slots[t, j]` is the buffer row of entry `(t, j)`, and `counts[e]` how
    many entries expert `e` keeps.

    With `capacity = C`, an expert keeps its first `C` entries and drops
    the others (slot -1); without it, none is dropped (dropless: the buffer
    of `T * k` rows holds every entry). An expert outside
    `[0, num_experts)` drops its entry too.

    With `blocks = B` (expert parallelism), the experts form `B` blocks of
    `E / B` consecutive experts and the buffer `B` blocks of `S` rows, `S =
    T * k` (the most entries one block can get), or `min(T * k, C * E / B)`
    with a capacity: block `b` holds the entries of its experts from row
    `b * S` on, grouped by expert as above, and the rest of it is unused.
    Each block is then one device's work, of a static size. `blocks = 1`
    (the default) is the plain buffer.

    ```mlir
    %slots, %counts = nn.moe_route %experts num_experts = 4
        : tensor<16x2xi64>
    // %slots : tensor<16x2xi64>, %counts : tensor<4xi64>
    // Two blocks of 32 rows: experts 0 and 1 from row 0, 2 and 3 from 32.
    %slots, %counts = nn.moe_route %experts num_experts = 4 blocks = 2
        : tensor<16x2xi64>
    ```

    With `hosts` (a placement, as `nn.moe_plan` makes it), the blocks are
    devices and the buffer's groups are replicas rather than experts:
    `hosts` holds `B * R` entries, `R` replica slots a device, entry `p`
    the expert whose replica device `p / R` holds in slot `p % R` (outside
    `[0, num_experts)`: an empty slot). Expert `e`'s kept entries, in
    order, are split evenly among its replicas in slot order (the first
    `c mod r` replicas take one more of its `c` entries than the others),
    block `b` holds its replicas' entries from row `b * S` on, replica
    after replica, and `counts` (of `B * R` entries) gives each replica's
    rows, zero for an empty slot. `S` is then `T * k`, or `min(T * k, C *
    R)` with a capacity. An expert with entries but no replica is an error
    at run time. Which devices serve which entries never changes what a
    grouped matmul of the replicas' weights computes, only where.

    ```mlir
    %slots, %counts = nn.moe_route %experts num_experts = 4 capacity = 6
        : tensor<16x2xi64>
    // Two devices of 3 replica slots: expert 2 on both.
    %slots, %counts = nn.moe_route %experts hosts %hosts num_experts = 4
        blocks = 2 : tensor<16x2xi64>, tensor<6xi64>
    // %counts : tensor<6xi64>
    ```

    With `shares` and `member`, `experts` is one share of a batch of `M`
    equal shares routed as one, in member order: member `member`'s (a 0-d
    `i64`), and `shares[m, e]` (`[M, num_experts]`) is how many of share
    `m`'s entries name expert `e` (in range, before any capacity). The
    results are what routing the whole batch gives: `slots` the rows of
    its slots that are this share's, `counts` its counts, and `S` counts
    the whole batch's entries (`M * T * k`). The table is what each
    member's share would give as the counts of a plain route, exchanged
    (`hspmd-moe-sparse-exchange` writes this form on local programs in
    place of a route of the all-gathered experts, docs/moe.md), so the
    experts themselves need not move. A row `member` that differs from
    the share's own counts, or a member outside `[0, M)`, is an error at
    run time.

    ```mlir
    // Member %m of 2, each routing 8 tokens of the 16: its rows of the
    // 16 tokens' slots, and their counts.
    %slots, %counts = nn.moe_route %experts
        shares(%table : tensor<2x4xi64>) at %m num_experts = 4 blocks = 2
        : tensor<8x2xi64>
    ```

    Constraints: `experts` has rank 2; `num_experts` is positive;
    `capacity`, when given, is positive; `blocks` is positive and divides
    `num_experts` (without `hosts`) or the entries of `hosts` (with it);
    `hosts` has rank 1; `shares` and `member` come together, `shares` of
    shape `[M, num_experts]` with `M` at least 1.

    Gradient: none (the results are integer).
  }];
  let arguments = (ins NN_I64Tensor:$experts, Optional<NN_I64Tensor>:$hosts,
                       Optional<NN_I64Tensor>:$shares,
                       Optional<NN_I64Scalar>:$member,
                       I64Attr:$num_experts,
                       OptionalAttr<I64Attr>:$capacity,
                       DefaultValuedAttr<I64Attr, "1">:$blocks);
  let results = (outs NN_I64Tensor:$slots, NN_I64Tensor:$counts);
  let assemblyFormat = [{
    $experts (`hosts` $hosts^)?
    (`shares` `(` $shares^ `:` type($shares) `)` `at` $member)?
    `num_experts` `=` $num_experts
    (`capacity` `=` $capacity^)? (`blocks` `=` $blocks^)? attr-dict `:`
    type($experts) (`,` type($hosts)^)?
  }];
  let extraClassDeclaration = [{
    /// The rows of one block of the buffer (`S` in the description).
    int64_t getBlockRows();
    /// The entries of the whole batch routed (`M * T * k` with shares,
    /// else `T * k`); dynamic when unknown.
    int64_t getBatchEntries();
  }];
  let kernelTypes = [I64];
}

def NN_MoePlanOp : NN_InferredOp<"moe_plan", [NN_Differentiable]> {
  let summary = "Expert placement of one MoE layer for the coming micro-step";
  let description = [{
    Plans where the experts of layer `layer` run in the coming micro-step
    from a forecast of their loads: `forecast[m, l, e]` is the number of
    entries the recorded routing (for example the rollout's) gave expert
    `e` of layer `l` in row `m` of the batch; the rows are summed (a step
    split into micro-batches gives each its own rows). The plan is Loom's
    expert placement planner (`runtime/moe/Placement.h`: replica counts,
    their devices, even splits; without the search it spends on small
    layers, a run-time plan) for `devices` devices of `slots` replica
    slots each on `nodes` nodes, with the experts' home placement (device
    `d` holds experts `[d * E / devices, (d + 1) * E / devices)`, the
    expert-parallel layout of the master weights) as the previous one:
    a replica away from home costs `expert_bytes` to fetch, so a small
    balance gain never pays for a large fetch (0: fetches are free).

    `hosts[p]` is the expert device `p / slots` serves in slot
    `p % slots`, -1 for a slot the plan leaves empty (the input of
    `nn.moe_route ... hosts`); `lookup` is `hosts` with each empty slot
    given its device's first home expert, whose weights are at hand
    without a fetch (the rows to look the replicas' weights up by).

    With the optional operand `previous` (the `lookup` of the previous
    micro-step's plan: what each slot holds now) the previous placement is
    that instead of the home one: a replica already in a slot of its
    device costs nothing, the plan keeps experts in their previous slots
    where it can, and a slot the plan leaves empty keeps what it holds
    (`lookup[p] = previous[p]`), so that replicas stay resident from one
    micro-step to the next (`hspmd-moe-resident-replicas` fetches only the
    slots whose lookup changes). A return home is charged as a fetch there
    (the home weights are not one of the slots).

    Every rank computes the same plan from the same forecast. The plan
    affects only where entries are served: a wrong forecast (the actual
    routing differs) gives the same results, only a worse balance. At run
    time a negative or non-finite forecast, or a previous lookup naming no
    expert, stops the program with the planner's message.

    ```mlir
    %hosts, %lookup = nn.moe_plan %forecast layer = 0 devices = 2 slots = 3
        : tensor<2x1x4xi64>
    // %hosts, %lookup : tensor<6xi64>
    %hosts2, %lookup2 = nn.moe_plan %forecast2 previous %lookup layer = 0
        devices = 2 slots = 3 : tensor<2x1x4xi64>, tensor<6xi64>
    ```

    Constraints: `forecast` has rank 3 (rows x layers x experts) with a
    static number of experts `E`; `layer` in `[0, layers)`; `devices`,
    `slots` and `nodes` positive, `nodes` divides `devices`, `devices`
    divides `E` and `devices * slots >= E`; `expert_bytes` non-negative;
    `previous`, when given, has shape `[devices * slots]`.

    Gradient: none (the results are integer).
  }];
  let arguments = (ins NN_I64Tensor:$forecast,
                       Optional<NN_I64Tensor>:$previous, I64Attr:$layer,
                       I64Attr:$devices, I64Attr:$slots,
                       DefaultValuedAttr<I64Attr, "1">:$nodes,
                       DefaultValuedAttr<I64Attr, "0">:$expert_bytes);
  let results = (outs NN_I64Tensor:$hosts, NN_I64Tensor:$lookup);
  let assemblyFormat = [{
    $forecast (`previous` $previous^)? `layer` `=` $layer `devices` `=`
    $devices `slots` `=` $slots (`nodes` `=` $nodes^)?
    (`expert_bytes` `=` $expert_bytes^)? attr-dict `:` type($forecast)
    (`,` type($previous)^)?
  }];
  let kernelTypes = [I64];
}

def NN_MoeDispatchOp : NN_InferredOp<"moe_dispatch", [NN_Differentiable]> {
  let summary = "Tokens scattered into the expert-ordered buffer";
  let description = [{
    The dispatch of a mixture of experts: every entry `(t, j)` of `slots`
    (a token's `j`-th choice, placed by `nn.moe_route`) adds token `t`'s
    row of `input`, times `weights[t, j]` when `weights` is given, to row
    `slots[t, j]` of a zero buffer of `rows` rows:

    ```
    result[n, h] = sum over (t, j) with slots[t, j] = n of
                   weights[t, j] * input[t, h]      (weights[t, j] = 1 if absent)
    ```

    An entry whose slot is outside `[0, rows)` (a dropped entry, slot -1)
    adds nothing, and rows no entry names stay zero. With the slots of
    `nn.moe_route` each row is named once, so the unweighted dispatch is a
    copy; `rows = T * k` holds every entry (dropless), and with the route's
    expert blocks `rows` is `B * S` (checked where the slots come straight
    from the route).

    ```mlir
    %buffer = nn.moe_dispatch %x, %slots rows = 32
        : tensor<16x8xf32>, tensor<16x2xi64>
    // %buffer : tensor<32x8xf32>
    ```

    Constraints: `input` is `[T, H]`; `slots` (and `weights`, of the
    input's element type) are `[T, k]`; `rows` is non-negative.

    Gradient: `dinput = nn.moe_combine(dy, slots, weights)`;
    `dweights = nn.moe_slot_dot(dy, input, slots)`; none for the slots.
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_I64Tensor:$slots,
                       Optional<NN_FloatTensor>:$weights, I64Attr:$rows);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $slots (`weights` $weights^)? `rows` `=` $rows attr-dict `:`
    type(operands)
  }];
  let hasVerifier = 1;
}

def NN_MoeCombineOp : NN_InferredOp<"moe_combine", [NN_Differentiable]> {
  let summary = "Expert outputs gathered back to their tokens, weighted";
  let description = [{
    The combine of a mixture of experts: token `t`'s row is the sum of the
    buffer rows its entries were placed in, each times its combine weight:

    ```
    result[t, h] = sum over j with 0 <= slots[t, j] < N of
                   weights[t, j] * input[slots[t, j], h]   (weights = 1 if absent)
    ```

    A dropped entry (a slot outside `[0, N)`) contributes nothing, so a
    token all of whose entries were dropped gets a zero row (the residual
    around the layer carries it).

    ```mlir
    %y = nn.moe_combine %out, %slots weights %w
        : tensor<32x8xf32>, tensor<16x2xi64>, tensor<16x2xf32>
    // %y : tensor<16x8xf32>
    ```

    Constraints: `input` is `[N, H]`; `slots` (and `weights`, of the
    input's element type) are `[T, k]`.

    Gradient: `dinput = nn.moe_dispatch(dy, slots, weights) rows = N`;
    `dweights = nn.moe_slot_dot(input, dy, slots)`; none for the slots.
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_I64Tensor:$slots,
                       Optional<NN_FloatTensor>:$weights);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $slots (`weights` $weights^)? attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def NN_MoeSlotDotOp : NN_InferredOp<"moe_slot_dot", [NN_Differentiable]> {
  let summary = "Each entry's buffer row dotted with its token's row";
  let description = [{
    For every entry `(t, j)`, the dot product of buffer row `slots[t, j]`
    with row `t` of `tokens`; zero for a dropped entry (a slot outside
    `[0, N)`):

    ```
    result[t, j] = sum over h of buffer[slots[t, j], h] * tokens[t, h]
    ```

    It is the gradient of the combine weights (`nn.moe_combine`) and of the
    dispatch weights (`nn.moe_dispatch`).

    ```mlir
    %dw = nn.moe_slot_dot %out, %dy, %slots
        : tensor<32x8xf32>, tensor<16x8xf32>, tensor<16x2xi64>
    // %dw : tensor<16x2xf32>
    ```

    Constraints: `buffer` is `[N, H]`, `tokens` `[T, H]` of the same
    element type, `slots` `[T, k]`.

    Gradient: `dbuffer = nn.moe_dispatch(tokens, slots, dy) rows = N`;
    `dtokens = nn.moe_combine(buffer, slots, dy)`; none for the slots.
  }];
  let arguments = (ins NN_FloatTensor:$buffer, NN_FloatTensor:$tokens,
                       NN_I64Tensor:$slots);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $buffer `,` $tokens `,` $slots attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def NN_GroupedMatmulOp
    : NN_InferredOp<"grouped_matmul", [NN_Differentiable, NN_LocalView]> {
  let summary = "Each expert's rows of the buffer times its own weight";
  let description = [{
    The experts' matrix product over the expert-ordered buffer, with the
    group sizes known only at run time: expert `e` owns rows
    `[start(e), start(e) + counts[e])` of `input`, `start(e)` the sum of
    the counts before `e`, and those rows are multiplied by `weight[e]`
    (`[K, F]`, or `[F, K]` read transposed with `transpose_rhs`). Rows past
    the sum of the counts (the unused tail of a buffer sized by the static
    bound; with blocks, each block's tail) are zero in the result; an
    expert with no rows does nothing.

    ```
    result[n, f] = sum over c of input[n, c] * weight[e(n), c, f]
                   (weight[e(n), f, c] with transpose_rhs)
    ```

    ```mlir
    %h = nn.grouped_matmul %buffer, %w1, %counts
        : tensor<32x8xf32>, tensor<4x8x16xf32>, tensor<4xi64>
    // %h : tensor<32x16xf32>
    ```

    With `blocks = B` the buffer is `B` blocks of `N / B` rows, each with
    the groups of `E / B` consecutive experts (`nn.moe_route ... blocks =
    B`): expert `e` of block `b` starts at row `b * N / B` plus the counts
    of the block's experts before it. Split along the blocks, each device
    multiplies its own block by its own experts.

    Constraints: `input` is `[N, K]`, `weight` `[E, K, F]` (`[E, F, K]`
    with `transpose_rhs`) of the same element type, `counts` `[E]`;
    `blocks` divides `E` and `N`. At run time the counts are non-negative
    and each block's sum to at most its rows.

    Gradient: `dinput = nn.grouped_matmul(dy, weight, counts)` with
    `transpose_rhs` flipped; `dweight = nn.grouped_matmul_grad(input, dy,
    counts)` (`(dy, input)` with `transpose_rhs`), both with the same
    blocks; none for the counts.
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       NN_I64Tensor:$counts, UnitAttr:$transpose_rhs,
                       DefaultValuedAttr<I64Attr, "1">:$blocks);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $counts (`transpose_rhs` $transpose_rhs^)?
    (`blocks` `=` $blocks^)? attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def NN_GroupedMatmulGradOp
    : NN_InferredOp<"grouped_matmul_grad", [NN_Differentiable, NN_LocalView]> {
  let summary = "Per expert, the product of its rows of two buffers";
  let description = [{
    For every expert `e`, `lhs_e^T * rhs_e`, where `lhs_e` and `rhs_e` are
    the rows `[start(e), start(e) + counts[e])` of `lhs` and `rhs` (as in
    `nn.grouped_matmul`): the weight gradient of a grouped matmul. An expert
    with no rows gets zeros; rows past the sum of the counts are ignored.

    ```
    result[e, a, b] = sum over n owned by e of lhs[n, a] * rhs[n, b]
    ```

    ```mlir
    %dw = nn.grouped_matmul_grad %buffer, %dh, %counts
        : tensor<32x8xf32>, tensor<32x16xf32>, tensor<4xi64>
    // %dw : tensor<4x8x16xf32>
    ```

    With `blocks`, the rows are grouped in blocks as for
    `nn.grouped_matmul`.

    Constraints: `lhs` is `[N, A]` and `rhs` `[N, B]` of one element type,
    `counts` `[E]`; `blocks` divides `E` and `N`; at run time as for
    `nn.grouped_matmul`.

    Gradient: `dlhs = nn.grouped_matmul(rhs, dy, counts) transpose_rhs`;
    `drhs = nn.grouped_matmul(lhs, dy, counts)`, both with the same blocks;
    none for the counts.
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs,
                       NN_I64Tensor:$counts,
                       DefaultValuedAttr<I64Attr, "1">:$blocks);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $counts (`blocks` `=` $blocks^)? attr-dict `:`
    type(operands)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

/// The schedule's constraints, in both updates' docs.
defvar NN_LrScheduleConstraints = [{

    Schedule constraints: `warmup_steps >= 0`, `decay_steps >= 0`; `linear`
    and `cosine` need `decay_steps > 0` and `0 <= min_lr <= lr`; `constant`
    takes neither (`decay_steps = 0`, `min_lr = 0`).
}];

/// The learning-rate schedule both optimizer updates share, in their docs.
defvar NN_LrScheduleDoc = [{

    Learning-rate schedule: with `t` the step count (`step`), `W =
    warmup_steps`, `D = decay_steps`, the update uses, in place of `lr`,

    ```
    lr_t = lr * t / W                               t <= W (warm-up)
    lr_t = min_lr + (lr - min_lr) * f((t - W) / D)  W < t <= W + D
    lr_t = min_lr                                   t > W + D (D > 0)
    ```

    with `f(p) = 1 - p` (`decay = linear`) or `(1 + cos(pi * p)) / 2`
    (`cosine`); `decay = constant` (the default) keeps `lr` after the
    warm-up and takes no `decay_steps` or `min_lr`. The defaults (no warm-up,
    constant) give `lr_t = lr` at every step. The schedule is computed in
    f64 from the 0-d `i64` step and rounded to the element type once, with
    the other coefficients.
}];

/// The schedule's attributes, the same on both updates.
defvar NN_LrScheduleArgs = (ins
    DefaultValuedAttr<I64Attr, "0">:$warmup_steps,
    DefaultValuedAttr<NN_LrDecayAttr, "::loom::nn::LrDecay::Constant">:$decay,
    DefaultValuedAttr<I64Attr, "0">:$decay_steps,
    DefaultValuedAttr<F64Attr, "0.0">:$min_lr);

def NN_SgdUpdateOp : NN_Op<"sgd_update", [Pure,
    AllTypesMatch<["param", "grad", "momentum_buffer", "new_param",
                   "new_momentum_buffer"]>]> {
  let summary = "One step of SGD with momentum and weight decay";
  let description = !strconcat([{
    The update of `torch.optim.SGD` (no dampening), with `mu = momentum`
    and `wd = weight_decay`:

    ```
    g'  = grad + wd * param
    buf = mu * momentum_buffer + g'
    d   = nesterov ? g' + mu * buf : buf
    new_param = param - lr_t * d
    new_momentum_buffer = buf
    ```

    With `momentum = 0` (the default) this is plain SGD and the buffer
    holds the last gradient. `step`, the 0-d `i64` count of this update
    (from 1), is needed by a learning-rate schedule and only then.
  }], NN_LrScheduleDoc, [{
    ```mlir
    %p, %m = nn.sgd_update %param, %grad, %buf
        {lr = 1.0e-02 : f64, momentum = 9.0e-01 : f64, nesterov}
        : tensor<32x64xf32>
    %p2, %m2 = nn.sgd_update %param, %grad, %buf step %step
        {lr = 1.0e-01 : f64, warmup_steps = 10 : i64}
        : tensor<32x64xf32>
    ```

    Constraints: `param`, `grad`, `momentum_buffer` and the results have
    one type; `lr >= 0`, `0 <= momentum < 1`, `weight_decay >= 0`;
    `nesterov` needs `momentum > 0`; the schedule's constraints (below)
    hold, and a schedule other than the default needs `step`.
  }], NN_LrScheduleConstraints);
  let arguments = !con((ins NN_FloatTensor:$param, NN_FloatTensor:$grad,
                       NN_FloatTensor:$momentum_buffer,
                       Optional<NN_I64Scalar>:$step, F64Attr:$lr,
                       DefaultValuedAttr<F64Attr, "0.0">:$momentum,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       UnitAttr:$nesterov), NN_LrScheduleArgs);
  let results = (outs NN_FloatTensor:$new_param,
                      NN_FloatTensor:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer (`step` $step^)? attr-dict `:`
    type($param)
  }];
  let hasVerifier = 1;
  let ascendLoomOperator = "aclnnLoomSgd";
}

def NN_AdamWUpdateOp : NN_Op<"adamw_update", [Pure,
    AllTypesMatch<["param", "grad", "m", "v",
                   "new_param", "new_m", "new_v"]>]> {
  let summary = "One step of AdamW (decoupled weight decay)";
  let description = !strconcat([{
    The update of `torch.optim.AdamW`. `step` is the 0-d `i64` count of this
    update, starting at 1 (it drives the bias correction and the
    learning-rate schedule):

    ```
    param' = param - lr_t * weight_decay * param
    new_m  = beta1 * m + (1 - beta1) * grad
    new_v  = beta2 * v + (1 - beta2) * grad^2
    m_hat  = new_m / (1 - beta1^step)
    v_hat  = new_v / (1 - beta2^step)
    new_param = param' - lr_t * m_hat / (sqrt(v_hat) + epsilon)
    ```

    Defaults: `beta1 = 0.9`, `beta2 = 0.999`, `epsilon = 1e-8`,
    `weight_decay = 0.01`; `lr` has none.
  }], NN_LrScheduleDoc, [{
    ```mlir
    %p, %m1, %v1 = nn.adamw_update %param, %grad, %m, %v, %step
        {lr = 1.0e-03 : f64}
        : tensor<32x64xf32>
    ```

    Constraints: `param`, `grad`, `m`, `v` and the results have one type;
    `lr >= 0`, `0 <= beta1 < 1`, `0 <= beta2 < 1`, `epsilon > 0`,
    `weight_decay >= 0`; the schedule's constraints (below) hold.
  }], NN_LrScheduleConstraints);
  let arguments = !con((ins NN_FloatTensor:$param, NN_FloatTensor:$grad,
                       NN_FloatTensor:$m, NN_FloatTensor:$v,
                       NN_I64Scalar:$step, F64Attr:$lr,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.01">:$weight_decay),
                       NN_LrScheduleArgs);
  let results = (outs NN_FloatTensor:$new_param, NN_FloatTensor:$new_m,
                      NN_FloatTensor:$new_v);
  let assemblyFormat = [{
    $param `,` $grad `,` $m `,` $v `,` $step attr-dict `:` type($param)
  }];
  let hasVerifier = 1;
  let ascendLoomOperator = "aclnnLoomAdamW";
}

include "dialects/nn/IR/NNBackwardOps.td"

#endif // LOOM_NN_OPS
