//===- KernelContract.h - What the nn ops' kernels take ---------*- C++ -*-===//
//
// The kernel contract of every nn op, generated from its ODS by loom-tblgen
// (-gen-kernel-contracts; dialects/nn/IR/NNDialect.td, docs/op-contract.md):
// the arguments of `loom.kernel.<op>` in order (results, operands, then
// attributes by name) and, per target, whether it has kernels for the op
// and for which element types. The call layer (LowerToCalls.cpp) is built
// from it; final emission (checkKernels) reports what a target lacks.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_COMMON_KERNELCONTRACT_H
#define LOOM_CODEGEN_COMMON_KERNELCONTRACT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace loom::codegen {

/// A result or operand of a kernel.
struct KernelTensor {
  /// How the kernel takes it: a pointer to the kernel's element type, to
  /// bool, an integer index tensor (IndexPtr), a 0-d i64 tensor, an i64
  /// tensor of any rank (int64_t pointers both).
  enum Kind { Typed, Bool, Index, Scalar, I64 };
  const char *name;
  Kind kind;
  /// May be absent (`nullptr, {}`).
  bool optional;
  /// A list (two braced lists: the pointers and the shapes).
  bool variadic;
};

/// An attribute of a kernel, passed in order of names.
struct KernelAttr {
  enum Kind { F64, I64, Unit, Bool, I64Array, Enum };
  const char *name;
  Kind kind;
  bool optional;
};

/// What one target has for an op.
struct KernelTarget {
  bool implemented;
  /// The element types of the op's typed tensors it has kernels for
  /// ("f32", "f64", "i32", "i64", "i1").
  llvm::ArrayRef<const char *> types;

  bool hasType(llvm::StringRef type) const {
    for (const char *t : types)
      if (type == t)
        return true;
    return false;
  }
};

struct KernelContract {
  /// "nn.layer_norm".
  const char *op;
  llvm::ArrayRef<KernelTensor> results, operands;
  llvm::ArrayRef<KernelAttr> attributes;
  /// Each typed tensor takes any of the types, independently (nn.cast).
  bool typesIndependent;
  KernelTarget host, cuda, ascend;

  /// The target named `name` ("host", "cuda", "ascend"), or null.
  const KernelTarget *getTarget(llvm::StringRef name) const;
};

/// The contract of the op named `name` ("nn.layer_norm"), or null.
const KernelContract *lookupKernelContract(llvm::StringRef name);

/// Every op's contract, by name (the conformance suite checks each op with
/// a kernel has cases).
llvm::ArrayRef<KernelContract> getKernelContracts();

} // namespace loom::codegen

#endif // LOOM_CODEGEN_COMMON_KERNELCONTRACT_H
