//===- InitAllDialects.h - Register every dialect Loom tools use ----------===//
//
// One place that lists the dialects a Loom tool loads: Loom's own (`nn`,
// `hspmd`) and the upstream ones users combine them with.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_INITALLDIALECTS_H
#define LOOM_DIALECTS_INITALLDIALECTS_H

#include "dialects/hspmd/Extensions/GradientOpInterfaceImpl.h"
#include "dialects/hspmd/Extensions/LayoutRuleOpInterfaceImpl.h"
#include "dialects/hspmd/IR/HSPMDDialect.h"
#include "dialects/nn/IR/NNDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

namespace loom {

/// Adds Loom's dialects and the upstream dialects Loom programs use to
/// `registry`, with the interfaces Loom attaches to them from outside (the
/// gradients of `hspmd` ops, the factor rule of `hspmd.exchange`). The
/// upstream `shard` dialect is registered for interop only; none of its
/// passes are.
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<hspmd::HSPMDDialect, nn::NNDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::shard::ShardDialect,
                  mlir::tensor::TensorDialect>();
  hspmd::registerGradientOpInterfaceExternalModels(registry);
  hspmd::registerLayoutRuleOpInterfaceExternalModels(registry);
}

} // namespace loom

#endif // LOOM_DIALECTS_INITALLDIALECTS_H
