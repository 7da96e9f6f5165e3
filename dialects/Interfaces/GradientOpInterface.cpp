//===- GradientOpInterface.cpp - Reverse-mode gradients -------------------===//

#include "dialects/Interfaces/GradientOpInterface.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

bool loom::isDifferentiableType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

std::string loom::formatValueName(Value value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  value.printAsOperand(os, OpPrintingFlags().printNameLocAsPrefix());
  return text;
}

#include "dialects/Interfaces/GradientOpInterface.cpp.inc"
