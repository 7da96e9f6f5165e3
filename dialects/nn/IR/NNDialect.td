//===- NNDialect.td - The nn dialect -----------------------*- tablegen -*-===//
//
// Training ops on ranked tensors: the single-device program that Loom
// distributes. This file holds the dialect, the op base class and the type
// constraints the ops share.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_NN_DIALECT
#define LOOM_NN_DIALECT

include "mlir/IR/OpBase.td"

def NN_Dialect : Dialect {
  let name = "nn";
  let cppNamespace = "::loom::nn";
  let summary = "Training ops on ranked tensors";
  let description = [{
    The `nn` dialect is the vocabulary of a Loom training program written
    from the viewpoint of one device: linear algebra, element-wise math with
    numpy broadcasting, reductions, shape ops, normalisation, attention with
    causal and tree masks, weighted cross-entropy and optimizer updates.

    Every op works on ranked tensors of `f32`, `f64` or `bf16` (index and
    label operands are `i32` or `i64` tensors, predicates `i1` tensors). All
    operands of an op that carry data share one element type; mixing element
    types needs an explicit `nn.cast`. Every op verifies the shapes of its
    operands and, where the result type follows from them, infers it, so the
    custom assembly omits inferable result types. Dynamic dimensions (`?`)
    are accepted and checked where they are known; static shapes are what the
    rest of Loom expects.

    All ops are pure. Randomness (`nn.dropout`) is a deterministic function
    of an explicit seed.

    Function arguments are classified with two unit attributes, checked by
    the dialect:

    * `nn.param`: a trainable parameter (gradients and optimizer state are
      created for it, and it persists across steps);
    * `nn.data`: a per-step input (tokens, labels, loss weights).

    Either attribute must be a unit attribute on a tensor-typed argument of a
    function (an op implementing `FunctionOpInterface`); an argument carries
    at most one of them. Arguments with neither are plain inputs (for example
    a step counter).

    ```mlir
    func.func @step(%w: tensor<32x64xf32> {nn.param},
                    %x: tensor<8x32xf32> {nn.data}) -> tensor<8x64xf32> {
      %y = nn.matmul %x, %w : tensor<8x32xf32>, tensor<32x64xf32>
      return %y : tensor<8x64xf32>
    }
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The unit attribute that marks a function argument as a parameter.
    static constexpr ::llvm::StringLiteral getParamAttrName() {
      return ::llvm::StringLiteral("nn.param");
    }
    /// The unit attribute that marks a function argument as per-step data.
    static constexpr ::llvm::StringLiteral getDataAttrName() {
      return ::llvm::StringLiteral("nn.data");
    }

  private:
    void registerAttributes();

  public:
  }];
}

//===----------------------------------------------------------------------===//
// Base class
//===----------------------------------------------------------------------===//

class NN_Op<string mnemonic, list<Trait> traits = []>
    : Op<NN_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def NN_FloatType : AnyTypeOf<[F32, F64, BF16], "f32, f64 or bf16">;
def NN_IntType : AnyTypeOf<[I32, I64], "i32 or i64">;

def NN_FloatTensor : RankedTensorOf<[F32, F64, BF16]> {
  let summary = "float tensor (f32, f64 or bf16)";
}
def NN_IntTensor : RankedTensorOf<[I32, I64]> {
  let summary = "integer tensor (i32 or i64)";
}
def NN_BoolTensor : RankedTensorOf<[I1]> {
  let summary = "i1 tensor";
}
/// Float or integer data: what comparisons and data movement accept.
def NN_NumericTensor : RankedTensorOf<[F32, F64, BF16, I32, I64]> {
  let summary = "tensor of f32, f64, bf16, i32 or i64";
}
/// Anything an nn program stores, predicates included.
def NN_AnyTensor : RankedTensorOf<[F32, F64, BF16, I32, I64, I1]> {
  let summary = "tensor of f32, f64, bf16, i32, i64 or i1";
}
/// A 0-d i64 tensor (a step counter, a seed offset). Its type is implied, so
/// the custom assembly does not spell it.
def NN_I64Scalar : 0DTensorOf<[I64]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI64Type())"> {
  let summary = "0-d i64 tensor";
}

#endif // LOOM_NN_DIALECT
