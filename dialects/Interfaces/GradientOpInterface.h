//===- GradientOpInterface.h - Reverse-mode gradients ----------*- C++ -*-===//
//
// The op interface through which autodiff asks an op for the gradients of
// its operands. See GradientOpInterface.td.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_INTERFACES_GRADIENTOPINTERFACE_H
#define LOOM_DIALECTS_INTERFACES_GRADIENTOPINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace loom {

/// Whether values of `type` carry gradients: ranked tensors of a float
/// element type.
bool isDifferentiableType(mlir::Type type);

/// The name of `value` as the printer shows it (`%3`, `%arg0`, or the name
/// of a NameLoc location, `%w2`), for diagnostics.
std::string formatValueName(mlir::Value value);

} // namespace loom

#include "dialects/Interfaces/GradientOpInterface.h.inc"

#endif // LOOM_DIALECTS_INTERFACES_GRADIENTOPINTERFACE_H
