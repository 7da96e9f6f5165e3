//===- KernelRegistry.cpp - Kernels of the reference interpreter ----------===//

#include "runtime/interpreter/KernelRegistry.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace loom::interp;

const Tensor *KernelCall::operandFor(Value value) const {
  for (auto [index, operand] : llvm::enumerate(op->getOperands()))
    if (operand == value && index < operands.size())
      return operands[index];
  return nullptr;
}

LogicalResult KernelCall::checkSize(ElementKind kind,
                                    llvm::ArrayRef<int64_t> shape) const {
  std::optional<int64_t> count = getCheckedNumElements(shape);
  if (!count)
    return emitError() << "cannot create a tensor of shape "
                       << formatShape(shape);
  uint64_t size = getElementSize(kind);
  if (static_cast<uint64_t>(*count) > maxTensorBytes / size)
    return emitError() << "a tensor of shape " << formatShape(shape) << " of "
                       << getElementKindName(kind)
                       << " exceeds the interpreter's limit of "
                       << maxTensorBytes << " bytes";
  return success();
}

Tensor *KernelCall::addResult(ElementKind kind, llvm::ArrayRef<int64_t> shape) {
  if (failed(checkSize(kind, shape)))
    return nullptr;
  results.emplace_back(kind, shape);
  return &results.back();
}

void KernelRegistry::add(llvm::StringRef opName, KernelFn fn,
                         bool computesBf16InF32) {
  kernels[opName] = Kernel{std::move(fn), computesBf16InF32};
}

const Kernel *KernelRegistry::lookup(llvm::StringRef opName) const {
  auto it = kernels.find(opName);
  return it == kernels.end() ? nullptr : &it->second;
}

std::vector<std::string> KernelRegistry::getOpNames() const {
  std::vector<std::string> names;
  for (const auto &entry : kernels)
    names.push_back(entry.getKey().str());
  llvm::sort(names);
  return names;
}

void loom::interp::registerAllKernels(KernelRegistry &registry) {
  registerGlueKernels(registry);
  registerElementwiseKernels(registry);
  registerReductionKernels(registry);
  registerMatmulKernels(registry);
  registerShapeKernels(registry);
  registerNormKernels(registry);
  registerRopeDropoutKernels(registry);
  registerGatherKernels(registry);
  registerMoeKernels(registry);
  registerAttentionKernels(registry);
  registerLossKernels(registry);
  registerOptimizerKernels(registry);
  registerBackwardKernels(registry);
}

const KernelRegistry &loom::interp::getDefaultKernelRegistry() {
  static const KernelRegistry registry = [] {
    KernelRegistry all;
    registerAllKernels(all);
    return all;
  }();
  return registry;
}
