//===- NNDialect.td - The nn dialect -----------------------*- tablegen -*-===//
//
// Training ops on ranked tensors: the single-device program that Loom
// distributes. This file holds the dialect, the op base class and the type
// constraints the ops share.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_NN_DIALECT
#define LOOM_NN_DIALECT

include "dialects/Interfaces/LayoutRuleOpInterface.td"
include "dialects/Interfaces/LocalViewOpInterface.td"
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

    Function arguments are classified by attributes, checked by the
    dialect:

    * `nn.param` (unit): a trainable parameter (gradients and optimizer
      state are created for it, and it persists across steps);
    * `nn.data` (unit): a per-step input (tokens, labels, loss weights);
    * `nn.state = <i>` (integer): optimizer state of the parameter at
      argument `i` (which is marked `nn.param` and has this argument's type);
    * `nn.step` (unit): the step counter, a 0-d `i64` tensor.

    Each must be on an argument of a function (an op implementing
    `FunctionOpInterface`), `nn.param`, `nn.data` and `nn.state` on a
    tensor; an argument carries at most one of them. Arguments with none are
    plain inputs.

    * `nn.name = "<name>"` (string, any argument): the argument's name in
      the source (`%w1` is `"w1"`). The parser does not keep SSA names, so
      tools that read a file themselves (`loom-run`) record them; a run
      configuration's layouts match arguments by it, training-step
      generation keeps it on the step's parameters and data, and generated
      code names the argument's buffer after it.

    * `nn.tokens = <n>` (positive integer, on a function): the tokens one
      call of a training step trains on, where its data arguments do not
      show it (micro-batches of their own shapes, one argument per shape);
      runtimes count throughput by it.

    Results of a training step (see `nn-training-step`) say what they are:

    * `nn.loss` (unit): the loss, a 0-d float tensor;
    * `nn.grad_norm` (unit): the global norm of the step's gradients
      before clipping, a 0-d float tensor (`clip-norm`);
    * `nn.updates = <i>` (integer): the next step's value of argument `i`,
      which is a parameter or optimizer state of the result's type.

    ```mlir
    func.func @step(%w: tensor<32x64xf32> {nn.param},
                    %x: tensor<8x32xf32> {nn.data}) -> tensor<8x64xf32> {
      %y = nn.matmul %x, %w : tensor<8x32xf32>, tensor<32x64xf32>
      return %y : tensor<8x64xf32>
    }
    func.func @train(%w: tensor<4xf32> {nn.param},
                     %m: tensor<4xf32> {nn.state = 0 : i64})
        -> (tensor<f32> {nn.loss}, tensor<4xf32> {nn.updates = 0 : i64},
            tensor<4xf32> {nn.updates = 1 : i64})
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
    /// The integer attribute that marks a function argument as optimizer
    /// state of the parameter at the argument index it holds.
    static constexpr ::llvm::StringLiteral getStateAttrName() {
      return ::llvm::StringLiteral("nn.state");
    }
    /// The unit attribute that marks the step counter argument.
    static constexpr ::llvm::StringLiteral getStepAttrName() {
      return ::llvm::StringLiteral("nn.step");
    }
    /// The string attribute holding an argument's source name.
    static constexpr ::llvm::StringLiteral getNameAttrName() {
      return ::llvm::StringLiteral("nn.name");
    }
    /// The dictionary attribute nn-prefix-dedup sets on a function it
    /// rewrote: the shapes of the packing (batch, bins, capacity, seq and,
    /// with a loss over classes, vocab), all positive integers.
    static constexpr ::llvm::StringLiteral getPrefixDedupAttrName() {
      return ::llvm::StringLiteral("nn.prefix_dedup");
    }
    /// The integer attribute nn-training-step sets on a step whose data
    /// arguments do not show the tokens it trains on (micro-batches of
    /// their own shapes: one argument per shape): how many there are, for
    /// throughput figures.
    static constexpr ::llvm::StringLiteral getTokensAttrName() {
      return ::llvm::StringLiteral("nn.tokens");
    }
    /// The integer attribute hspmd-moe-placement puts on the lookup of a
    /// placed MoE layer's replicas (`nn.embedding` of an expert weight by a
    /// plan's lookup) and autodiff carries to its gradient (the
    /// scatter-add): the value tells the weights of a function apart, so
    /// that hspmd-moe-resident-replicas finds each weight's lookups and
    /// gradients, micro-step by micro-step.
    static constexpr ::llvm::StringLiteral getMoeReplicasAttrName() {
      return ::llvm::StringLiteral("nn.moe_replicas");
    }
    /// The unit attribute that marks a function result as the loss.
    static constexpr ::llvm::StringLiteral getLossAttrName() {
      return ::llvm::StringLiteral("nn.loss");
    }
    /// The unit attribute that marks a function result as the global norm
    /// of the step's gradients (a 0-d float; nn-training-step clip-norm=).
    static constexpr ::llvm::StringLiteral getGradNormAttrName() {
      return ::llvm::StringLiteral("nn.grad_norm");
    }
    /// The integer attribute that marks a function result as the next
    /// step's value of the argument at the index it holds.
    static constexpr ::llvm::StringLiteral getUpdatesAttrName() {
      return ::llvm::StringLiteral("nn.updates");
    }

  private:
    void registerAttributes();

  public:
  }];
}

//===----------------------------------------------------------------------===//
// Base class
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Kernel contract
//===----------------------------------------------------------------------===//
//
// What the targets' kernels of an op take (docs/op-contract.md): loom-tblgen
// generates from it the kernel declarations of every target
// (runtime/kernels/HostKernels.h, runtime/cuda/CudaKernels.h,
// runtime/ascend/AscendKernels.h), the table the call layer is built from
// (codegen/Common/KernelContract.h) and the per-target availability that
// final emission checks. Tensors, optional and variadic operands and
// attributes come from the op's ODS arguments; the fields below say only
// what ODS does not.

/// A target with kernels for nn ops.
class NN_KernelTarget<string targetName> {
  string name = targetName;
}
def NN_Host : NN_KernelTarget<"host">;
def NN_Cuda : NN_KernelTarget<"cuda">;
def NN_Ascend : NN_KernelTarget<"ascend">;

/// How kernels take a tensor of this type constraint: "typed" (a pointer to
/// the kernel's element type), "bool" (`bool *`), "index" (an integer index
/// tensor of i32 or i64: `IndexPtr` on the host), "scalar" (a 0-d i64
/// tensor: `const int64_t *`) or "i64" (an i64 tensor of any rank:
/// `int64_t *`, `const int64_t *` for an operand).
class NN_KernelArg<string kind> {
  string kernelArg = kind;
}

/// The element types of data movement: every type a tensor stores but bf16.
defvar NN_AllKernelTypes = [F32, F64, I32, I64, I1];
/// Float and integer data (no i1).
defvar NN_NumericKernelTypes = [F32, F64, I32, I64];

/// Every nn op states how layouts flow through it (its factor rule,
/// NNLayoutRules.cpp): the interface is declared here, on the base class, so
/// that no op can lack it (a missing rule fails to link).
class NN_Op<string mnemonic, list<Trait> traits = []>
    : Op<NN_Dialect, mnemonic,
         !listconcat(traits,
                     [DeclareOpInterfaceMethods<LayoutRuleOpInterface>])> {
  // The kernel contract.
  /// The element types the kernels take for the op's typed tensors (one
  /// overload per type; all typed tensors of a call share it).
  list<Type> kernelTypes = [F32, F64];
  /// Per target: CUDA's are the host's; Ascend hardware has no f64.
  list<Type> hostKernelTypes = kernelTypes;
  list<Type> cudaKernelTypes = kernelTypes;
  list<Type> ascendKernelTypes =
      !filter(type, kernelTypes, !not(!eq(type, F64)));
  /// The targets that have kernels for the op.
  list<NN_KernelTarget> kernelTargets = [NN_Host, NN_Cuda, NN_Ascend];
  /// Each typed tensor takes any of `kernelTypes`, independently of the
  /// others (nn.cast: one overload per pair).
  bit kernelTypesIndependent = 0;
  /// Loom's own aclnn-style operator that runs the op on Ascend
  /// (runtime/ascend/LoomOps.h: operands, attributes, results), if the op
  /// has no aclnn operator of the same semantics; its Ascend kernel then is
  /// that operator's call, unless `ascendCustomKernel` is set
  /// (runtime/ascend/Kernels.cpp defines it).
  string ascendLoomOperator = "";
  bit ascendCustomKernel = 0;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def NN_FloatType : AnyTypeOf<[F32, F64, BF16], "f32, f64 or bf16">;
def NN_IntType : AnyTypeOf<[I32, I64], "i32 or i64">;

def NN_FloatTensor : RankedTensorOf<[F32, F64, BF16]> {
  let summary = "float tensor (f32, f64 or bf16)";
}
def NN_IntTensor : RankedTensorOf<[I32, I64]>, NN_KernelArg<"index"> {
  let summary = "integer tensor (i32 or i64)";
}
def NN_BoolTensor : RankedTensorOf<[I1]>, NN_KernelArg<"bool"> {
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
/// An i64 tensor of any rank that kernels take as `int64_t *` (integer
/// results: routing slots, counts, top-k indices).
def NN_I64Tensor : RankedTensorOf<[I64]>, NN_KernelArg<"i64"> {
  let summary = "i64 tensor";
}
/// A 0-d i64 tensor (a step counter, a seed offset). Its type is implied, so
/// the custom assembly does not spell it.
def NN_I64Scalar : 0DTensorOf<[I64]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI64Type())">,
    NN_KernelArg<"scalar"> {
  let summary = "0-d i64 tensor";
}

/// Ops whose local form depends on where their part sits in the global
/// tensors (dialects/Interfaces/LocalViewOpInterface.td; NNLocalView.cpp).
def NN_LocalView : DeclareOpInterfaceMethods<LocalViewOpInterface>;

#endif // LOOM_NN_DIALECT
