//===- Interpreter.cpp - Reference interpreter of nn programs -------------===//

#include "runtime/interpreter/Interpreter.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace loom::interp;

namespace {

Tensor widenBf16(const Tensor &input) {
  Tensor result(ElementKind::F32, input.getShape());
  llvm::ArrayRef<uint16_t> in = input.values<uint16_t>();
  llvm::MutableArrayRef<float> out = result.values<float>();
  for (size_t i = 0; i < in.size(); ++i)
    out[i] = bf16ToFloat(in[i]);
  return result;
}

Tensor roundToBf16(const Tensor &input) {
  Tensor result(ElementKind::BF16, input.getShape());
  llvm::ArrayRef<float> in = input.values<float>();
  llvm::MutableArrayRef<uint16_t> out = result.values<uint16_t>();
  for (size_t i = 0; i < in.size(); ++i)
    out[i] = floatToBf16(in[i]);
  return result;
}

/// The ranked tensor type `type` if the interpreter can hold its values.
RankedTensorType getSupportedType(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked || !getElementKind(ranked.getElementType()))
    return {};
  return ranked;
}

constexpr llvm::StringLiteral kSupportedTypes =
    "ranked tensors of f32, f64, bf16, i1, i32 or i64";

} // namespace

Interpreter::Interpreter(ModuleOp module, const KernelRegistry &registry,
                         InterpreterOptions options)
    : module(module), registry(registry), options(options) {}

func::FuncOp Interpreter::lookupFunction(llvm::StringRef name) {
  auto func = module.lookupSymbol<func::FuncOp>(name);
  if (!func) {
    InFlightDiagnostic diag = emitError(module.getLoc())
                              << "no function '@" << name << "' in the module";
    std::string names;
    llvm::raw_string_ostream os(names);
    llvm::interleaveComma(module.getOps<func::FuncOp>(), os,
                          [&](func::FuncOp f) { os << '@' << f.getSymName(); });
    if (names.empty())
      diag.attachNote() << "the module defines no func.func";
    else
      diag.attachNote() << "functions: " << names;
    return {};
  }
  if (func.isExternal()) {
    func.emitError() << "function '@" << name
                     << "' is a declaration without a body";
    return {};
  }
  return func;
}

LogicalResult Interpreter::checkArguments(func::FuncOp func,
                                          llvm::ArrayRef<Tensor> args,
                                          llvm::ArrayRef<std::string> sources) {
  FunctionType type = func.getFunctionType();
  auto describe = [&](size_t index) {
    std::string text = "argument #" + std::to_string(index) + " of @" +
                       func.getSymName().str();
    if (index < sources.size() && !sources[index].empty())
      text += " (from '" + sources[index] + "')";
    return text;
  };
  for (auto [index, argType] : llvm::enumerate(type.getInputs()))
    if (!getSupportedType(argType))
      return func.emitError()
             << "argument #" << index << " of @" << func.getSymName()
             << " has type " << argType << "; the interpreter supports "
             << kSupportedTypes;
  if (args.size() != type.getNumInputs()) {
    InFlightDiagnostic diag = func.emitError()
                              << "@" << func.getSymName() << " takes "
                              << type.getNumInputs() << " argument"
                              << (type.getNumInputs() == 1 ? "" : "s")
                              << ", got " << args.size();
    if (args.size() < type.getNumInputs())
      diag.attachNote() << "missing argument #" << args.size() << " of type "
                        << type.getInput(args.size());
    return diag;
  }
  for (auto [index, arg] : llvm::enumerate(args)) {
    auto expected = cast<RankedTensorType>(type.getInput(index));
    if (arg.matchesType(expected))
      continue;
    if (getElementKind(expected.getElementType()) != arg.getKind())
      return func.emitError()
             << describe(index) << " has element type "
             << getElementKindName(arg.getKind()) << ", expected " << expected;
    return func.emitError() << describe(index) << " has shape "
                            << formatShape(arg.getShape()) << ", expected "
                            << expected;
  }
  return success();
}

FailureOr<std::vector<Tensor>> Interpreter::call(llvm::StringRef name,
                                                 llvm::ArrayRef<Tensor> args) {
  if (!verified)
    verified = options.assumeVerified || succeeded(verify(module));
  if (!*verified)
    return emitError(module.getLoc())
           << "the module does not verify; the interpreter runs only valid "
              "programs";
  func::FuncOp func = lookupFunction(name);
  if (!func || failed(checkArguments(func, args)))
    return failure();
  return callFunction(func, args);
}

FailureOr<std::vector<Tensor>>
Interpreter::callFunction(func::FuncOp func, llvm::ArrayRef<Tensor> args) {
  if (func.isExternal())
    return func.emitError() << "function '@" << func.getSymName()
                            << "' is a declaration without a body";
  if (!func.getBody().hasOneBlock())
    return func.emitError() << "the interpreter runs single-block functions "
                               "only; @"
                            << func.getSymName() << " has "
                            << func.getBody().getBlocks().size() << " blocks";
  if (callDepth >= options.maxCallDepth)
    return func.emitError() << "calls nest deeper than "
                            << options.maxCallDepth << " at @"
                            << func.getSymName();
  ++callDepth;
  llvm::scope_exit restoreDepth([&] { --callDepth; });

  Block &body = func.getBody().front();
  if (body.getNumArguments() != args.size())
    return func.emitError() << "@" << func.getSymName() << " takes "
                            << body.getNumArguments() << " arguments, got "
                            << args.size();

  // Values die after their last use, so long programs keep only live
  // tensors.
  llvm::DenseMap<Value, Operation *> lastUser;
  for (Operation &op : body)
    for (Value operand : op.getOperands())
      lastUser[operand] = &op;

  llvm::DenseMap<Value, Tensor> values;
  for (auto [arg, tensor] : llvm::zip_equal(body.getArguments(), args))
    values.try_emplace(arg, tensor);

  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<Tensor> results;
      for (auto [index, operand] : llvm::enumerate(ret.getOperands())) {
        auto it = values.find(operand);
        if (it == values.end())
          return ret.emitOpError()
                 << "operand #" << index << " has no value the interpreter "
                 << "holds (type " << operand.getType() << ")";
        results.push_back(it->second);
      }
      return results;
    }
    if (failed(evaluate(&op, values)))
      return failure();
    for (Value operand : op.getOperands())
      if (lastUser.lookup(operand) == &op)
        values.erase(operand);
  }
  return func.emitError() << "@" << func.getSymName()
                          << " ends without func.return";
}

LogicalResult Interpreter::evaluate(Operation *op,
                                    llvm::DenseMap<Value, Tensor> &values) {
  llvm::StringRef name = op->getName().getStringRef();
  const Kernel *kernel = registry.lookup(name);
  if (!kernel)
    return op->emitError() << "no interpreter kernel for '" << name << "'";

  for (auto [index, result] : llvm::enumerate(op->getResults()))
    if (!getSupportedType(result.getType()))
      return op->emitOpError()
             << "result #" << index << " has type " << result.getType()
             << "; the interpreter supports " << kSupportedTypes;

  // Operands, with bf16 widened for kernels that compute in f32.
  llvm::SmallVector<const Tensor *> operands;
  llvm::SmallVector<Tensor> widened;
  widened.reserve(op->getNumOperands());
  bool promoted = false;
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    auto it = values.find(operand);
    if (it == values.end())
      return op->emitOpError()
             << "operand #" << index << " has no value the interpreter holds "
             << "(type " << operand.getType() << "; the interpreter supports "
             << kSupportedTypes << ")";
    const Tensor *tensor = &it->second;
    if (kernel->computesBf16InF32 && tensor->getKind() == ElementKind::BF16) {
      widened.push_back(widenBf16(*tensor));
      tensor = &widened.back();
      promoted = true;
    }
    operands.push_back(tensor);
  }

  llvm::SmallVector<Tensor> results;
  KernelCall call(op, operands, results, *this, options.maxTensorBytes);
  // Static result types are checked against the size limit up front, so a
  // kernel never allocates more than the limit.
  for (Type type : op->getResultTypes()) {
    auto ranked = cast<RankedTensorType>(type);
    if (ranked.hasStaticShape() &&
        failed(call.checkSize(*getElementKind(ranked.getElementType()),
                              ranked.getShape())))
      return failure();
  }
  if (failed(kernel->fn(call)))
    return failure();
  if (results.size() != op->getNumResults())
    return op->emitOpError() << "interpreter kernel produced " << results.size()
                             << " results, expected " << op->getNumResults();

  for (auto [index, result] : llvm::enumerate(op->getResults())) {
    auto type = cast<RankedTensorType>(result.getType());
    Tensor &tensor = results[index];
    if (promoted && tensor.getKind() == ElementKind::F32 &&
        type.getElementType().isBF16())
      tensor = roundToBf16(tensor);
    if (!tensor.matchesType(type))
      return op->emitOpError()
             << "result #" << index << " evaluated to "
             << tensor.getTypeString() << ", which does not match its type "
             << type;
    values.insert_or_assign(result, std::move(tensor));
  }
  return success();
}
