//===- Interpreter.h - Reference interpreter of nn programs ----*- C++ -*-===//
//
// Evaluates `nn` programs (with func/arith/tensor glue and hspmd annotations,
// which are the identity on one device) on the host, in f32, f64 and bf16.
// It is the oracle later passes are checked against, so it computes exactly
// what the op docs say, in a fixed order: the same inputs give the same bits.
//
// An Interpreter holds no global state: several can run at once (one per
// simulated rank), each on its own module or sharing one, as long as nobody
// mutates the module meanwhile.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_INTERPRETER_INTERPRETER_H
#define LOOM_RUNTIME_INTERPRETER_INTERPRETER_H

#include "runtime/interpreter/KernelRegistry.h"
#include "runtime/interpreter/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>
#include <vector>

namespace loom::interp {

struct InterpreterOptions {
  /// The largest tensor the interpreter creates; larger ones are an error,
  /// not an allocation failure.
  uint64_t maxTensorBytes = uint64_t{1} << 32;
  /// How deeply func.call may nest.
  unsigned maxCallDepth = 128;
  /// The caller has verified the module (the simulator does, once for all
  /// ranks, instead of every rank's interpreter on its own thread).
  bool assumeVerified = false;
};

class Interpreter {
public:
  /// Evaluates functions of `module` with the kernels in `registry` (both
  /// must outlive the interpreter).
  explicit Interpreter(mlir::ModuleOp module,
                       const KernelRegistry &registry =
                           getDefaultKernelRegistry(),
                       InterpreterOptions options = {});

  /// Runs function `func` on `args` and returns its results. Problems (no
  /// such function, arguments that do not fit its signature, an op without
  /// a kernel, a run-time shape mismatch) are emitted as diagnostics at the
  /// module, function or op and give failure.
  mlir::FailureOr<std::vector<Tensor>> call(llvm::StringRef func,
                                            llvm::ArrayRef<Tensor> args);

  /// The function called `name`, or null after a diagnostic that lists the
  /// functions there are.
  mlir::func::FuncOp lookupFunction(llvm::StringRef name);

  /// Checks `args` against `func`'s signature: count, element types and
  /// static dimensions. `sources[i]`, when given and not empty, says where
  /// argument `i` came from (a file name) and goes into the message.
  static mlir::LogicalResult
  checkArguments(mlir::func::FuncOp func, llvm::ArrayRef<Tensor> args,
                 llvm::ArrayRef<std::string> sources = {});

  /// Runs `func` (already checked) on `args`; used by func.call.
  mlir::FailureOr<std::vector<Tensor>>
  callFunction(mlir::func::FuncOp func, llvm::ArrayRef<Tensor> args);

  mlir::ModuleOp getModule() const { return module; }
  const InterpreterOptions &getOptions() const { return options; }

private:
  mlir::LogicalResult evaluate(mlir::Operation *op,
                               llvm::DenseMap<mlir::Value, Tensor> &values);

  mlir::ModuleOp module;
  const KernelRegistry &registry;
  InterpreterOptions options;
  unsigned callDepth = 0;
  /// Whether the module passed the verifier (checked on first use).
  std::optional<bool> verified;
};

} // namespace loom::interp

#endif // LOOM_RUNTIME_INTERPRETER_INTERPRETER_H
