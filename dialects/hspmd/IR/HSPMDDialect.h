//===- HSPMDDialect.h - The hspmd dialect and its attributes ---*- C++ -*-===//

#ifndef LOOM_DIALECTS_HSPMD_IR_HSPMDDIALECT_H
#define LOOM_DIALECTS_HSPMD_IR_HSPMDDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "dialects/hspmd/IR/HSPMDAxis.h"

#include "dialects/hspmd/IR/HSPMDDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/hspmd/IR/HSPMDAttrs.h.inc"

#endif // LOOM_DIALECTS_HSPMD_IR_HSPMDDIALECT_H
