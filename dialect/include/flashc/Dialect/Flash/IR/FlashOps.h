//===- FlashOps.h - flash graph operations --------------------*- C++ -*-===//
#ifndef FLASHC_DIALECT_FLASH_IR_FLASHOPS_H
#define FLASHC_DIALECT_FLASH_IR_FLASHOPS_H

#include "flashc/Dialect/Flash/IR/FlashDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "flashc/Dialect/Flash/IR/FlashOps.h.inc"

#endif // FLASHC_DIALECT_FLASH_IR_FLASHOPS_H
