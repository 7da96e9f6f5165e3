//===- NNDialect.h - The nn dialect and its attributes ---------*- C++ -*-===//
//
// The `nn` dialect: training ops on ranked tensors. Include NNOps.h for the
// ops themselves.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECTS_NN_IR_NNDIALECT_H
#define LOOM_DIALECTS_NN_IR_NNDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "dialects/nn/IR/NNDialect.h.inc"

#include "dialects/nn/IR/NNEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/nn/IR/NNAttrs.h.inc"

#endif // LOOM_DIALECTS_NN_IR_NNDIALECT_H
