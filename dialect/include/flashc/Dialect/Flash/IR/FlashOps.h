//===- FlashOps.h - flash graph operations --------------------*- C++ -*-===//
#ifndef FLASHC_DIALECT_FLASH_IR_FLASHOPS_H
#define FLASHC_DIALECT_FLASH_IR_FLASHOPS_H

#include "flashc/Dialect/Flash/IR/FlashDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

namespace mlir::flash {
/// The largest flash.attention scale and softcap: the tile kernels bound every
/// scale-like attribute by this (TileLimits.h's kMaxScale; FlashTile.cpp
/// asserts they agree), so that the f32 constants folded from them
/// (scale·log2(e), ...) stay finite. The f32 1e30 (1.0000000150e30): the
/// attributes are f32, and `1e30` written in a spec must be at the bound, not
/// past it.
constexpr double kMaxAttentionScale = static_cast<double>(1.0e30f);
} // namespace mlir::flash

#define GET_OP_CLASSES
#include "flashc/Dialect/Flash/IR/FlashOps.h.inc"

#endif // FLASHC_DIALECT_FLASH_IR_FLASHOPS_H
