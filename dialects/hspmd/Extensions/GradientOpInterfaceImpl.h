//===- GradientOpInterfaceImpl.h - Gradients of hspmd ops ------*- C++ -*-===//
//
// GradientOpInterface for the hspmd ops, as external models: the gradient of
// an annotated value is annotated with the dual layout, and a reshard's
// gradient reshards back between the dual layouts.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_HSPMD_EXTENSIONS_GRADIENTOPINTERFACEIMPL_H
#define LOOM_DIALECTS_HSPMD_EXTENSIONS_GRADIENTOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace loom::hspmd {

/// Attaches GradientOpInterface to hspmd.annotate and hspmd.reshard when
/// the hspmd dialect loads.
void registerGradientOpInterfaceExternalModels(mlir::DialectRegistry &registry);

} // namespace loom::hspmd

#endif // LOOM_DIALECTS_HSPMD_EXTENSIONS_GRADIENTOPINTERFACEIMPL_H
