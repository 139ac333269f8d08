//===- FlashDialect.h - the flash graph dialect ---------------*- C++ -*-===//
//
// The dialect class, its enums (MaskKind, GeluApproximation, Activation) and
// attributes (#flash.mask). Include FlashOps.h for the operations.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_H
#define FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "flashc/Dialect/Flash/IR/FlashOpsDialect.h.inc"

#include "flashc/Dialect/Flash/IR/FlashEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "flashc/Dialect/Flash/IR/FlashAttrs.h.inc"

#endif // FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_H
