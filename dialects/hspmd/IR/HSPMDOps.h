//===- HSPMDOps.h - Operations of the hspmd dialect ------------*- C++ -*-===//

#ifndef LOOM_DIALECTS_HSPMD_IR_HSPMDOPS_H
#define LOOM_DIALECTS_HSPMD_IR_HSPMDOPS_H

#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace loom::hspmd {

/// The sub-groups of a collective over mesh axes `axes` of `mesh`: indices
/// into the device group (0 .. product(mesh) - 1), each sub-group in rank
/// order, sub-groups ordered by their first member.
llvm::SmallVector<llvm::SmallVector<int64_t>>
getCollectiveSubgroups(llvm::ArrayRef<int64_t> mesh,
                       llvm::ArrayRef<int64_t> axes);

} // namespace loom::hspmd

#define GET_OP_CLASSES
#include "dialects/hspmd/IR/HSPMDOps.h.inc"

#endif // LOOM_DIALECTS_HSPMD_IR_HSPMDOPS_H
