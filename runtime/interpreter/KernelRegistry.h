//===- KernelRegistry.h - Kernels of the reference interpreter -*- C++ -*-===//
//
// The interpreter evaluates an op by looking up a kernel under the op's name.
// Each kernel file fills the registry with one `registerXKernels` function,
// so adding an op is a local change: write the kernel, add it in that file's
// register function.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_INTERPRETER_KERNELREGISTRY_H
#define LOOM_RUNTIME_INTERPRETER_KERNELREGISTRY_H

#include "runtime/interpreter/Tensor.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringMap.h"

#include <functional>

namespace loom::interp {

class Interpreter;

/// One evaluation of one op: its operands, already computed, and the results
/// the kernel appends, one per op result, in order.
class KernelCall {
public:
  KernelCall(mlir::Operation *op, llvm::ArrayRef<const Tensor *> operands,
             llvm::SmallVectorImpl<Tensor> &results, Interpreter &interpreter,
             uint64_t maxTensorBytes)
      : op(op), operands(operands), results(results),
        interpreter(interpreter), maxTensorBytes(maxTensorBytes) {}

  mlir::Operation *getOp() const { return op; }
  unsigned getNumOperands() const { return operands.size(); }
  const Tensor &operand(unsigned index) const { return *operands[index]; }
  /// The operand that feeds `value` (an operand of the op), or null.
  const Tensor *operandFor(mlir::Value value) const;
  Interpreter &getInterpreter() const { return interpreter; }

  /// Appends a zero-filled result of `kind` and `shape`. Fails, with a
  /// diagnostic, when the shape is invalid or larger than the interpreter's
  /// limit; the returned pointer is valid until the next result is added.
  Tensor *addResult(ElementKind kind, llvm::ArrayRef<int64_t> shape);
  /// Appends a computed result.
  void addResult(Tensor tensor) { results.push_back(std::move(tensor)); }
  /// Result `index`, added before (adding results moves earlier ones, so
  /// kernels with several results fetch them here after adding all).
  Tensor &result(unsigned index) { return results[index]; }

  /// An error at the op, prefixed with its name (`'nn.matmul' op ...`).
  mlir::InFlightDiagnostic emitError() const { return op->emitOpError(); }

  /// Checks that a tensor of `shape` with elements of `kind` is within the
  /// interpreter's limits; reports the problem otherwise.
  mlir::LogicalResult checkSize(ElementKind kind,
                                llvm::ArrayRef<int64_t> shape) const;

private:
  mlir::Operation *op;
  llvm::ArrayRef<const Tensor *> operands;
  llvm::SmallVectorImpl<Tensor> &results;
  Interpreter &interpreter;
  uint64_t maxTensorBytes;
};

using KernelFn = std::function<mlir::LogicalResult(KernelCall &)>;

struct Kernel {
  KernelFn fn;
  /// The kernel computes in f32 or f64 only: the interpreter hands it bf16
  /// operands widened to f32 and rounds its f32 results back to bf16 (round
  /// to nearest even) where the op's result type is bf16. Kernels that only
  /// move or compare elements leave this off and see bf16 bits.
  bool computesBf16InF32 = false;
};

class KernelRegistry {
public:
  /// Registers `fn` for `OpTy`; `fn` receives the op already cast.
  template <typename OpTy>
  void add(mlir::LogicalResult (*fn)(OpTy, KernelCall &),
           bool computesBf16InF32 = false) {
    add(OpTy::getOperationName(),
        [fn](KernelCall &call) {
          return fn(llvm::cast<OpTy>(call.getOp()), call);
        },
        computesBf16InF32);
  }
  /// Registers a kernel under an operation name.
  void add(llvm::StringRef opName, KernelFn fn, bool computesBf16InF32 = false);

  /// The kernel of `opName`, or null.
  const Kernel *lookup(llvm::StringRef opName) const;

  /// The names of all registered ops, sorted.
  std::vector<std::string> getOpNames() const;

private:
  llvm::StringMap<Kernel> kernels;
};

// One function per kernel file.
void registerGlueKernels(KernelRegistry &registry);
void registerElementwiseKernels(KernelRegistry &registry);
void registerReductionKernels(KernelRegistry &registry);
void registerMatmulKernels(KernelRegistry &registry);
void registerShapeKernels(KernelRegistry &registry);
void registerNormKernels(KernelRegistry &registry);
void registerRopeDropoutKernels(KernelRegistry &registry);
void registerGatherKernels(KernelRegistry &registry);
void registerMoeKernels(KernelRegistry &registry);
void registerAttentionKernels(KernelRegistry &registry);
void registerLossKernels(KernelRegistry &registry);
void registerOptimizerKernels(KernelRegistry &registry);
void registerBackwardKernels(KernelRegistry &registry);

/// Adds every kernel above.
void registerAllKernels(KernelRegistry &registry);

/// A registry holding every kernel, built once (thread-safe) and never
/// changed afterwards.
const KernelRegistry &getDefaultKernelRegistry();

} // namespace loom::interp

#endif // LOOM_RUNTIME_INTERPRETER_KERNELREGISTRY_H
