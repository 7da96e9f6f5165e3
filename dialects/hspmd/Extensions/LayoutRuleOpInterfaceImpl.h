//===- LayoutRuleOpInterfaceImpl.h - Factor rules of hspmd ops -*- C++ -*-===//
//
// LayoutRuleOpInterface for the hspmd ops that layout propagation lays out
// inside a device group, as external models: `hspmd.exchange` (a layout
// change across groups) is, seen from inside one group, an identity on the
// dimensions whose extent it keeps.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_HSPMD_EXTENSIONS_LAYOUTRULEOPINTERFACEIMPL_H
#define LOOM_DIALECTS_HSPMD_EXTENSIONS_LAYOUTRULEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace loom::hspmd {

/// Attaches LayoutRuleOpInterface to hspmd.exchange when the hspmd dialect
/// loads.
void registerLayoutRuleOpInterfaceExternalModels(
    mlir::DialectRegistry &registry);

} // namespace loom::hspmd

#endif // LOOM_DIALECTS_HSPMD_EXTENSIONS_LAYOUTRULEOPINTERFACEIMPL_H
