//===- HSPMDOps.h - Operations of the hspmd dialect ------------*- C++ -*-===//

#ifndef LOOM_DIALECTS_HSPMD_IR_HSPMDOPS_H
#define LOOM_DIALECTS_HSPMD_IR_HSPMDOPS_H

#include "dialects/hspmd/IR/HSPMDDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/hspmd/IR/HSPMDOps.h.inc"

#endif // LOOM_DIALECTS_HSPMD_IR_HSPMDOPS_H
