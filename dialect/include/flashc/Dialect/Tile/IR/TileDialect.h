//===- TileDialect.h - the tile kernel dialect ----------------*- C++ -*-===//
//
// The dialect class, its enums (MemorySpace, GridAxis, Strategy, Activation,
// KernelRole), attributes (#tile.grid, #tile.strategy, #tile.attention,
// #tile.gemm) and types (!tile.tensor, !tile.tile). Include TileOps.h for ops.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_DIALECT_TILE_IR_TILEDIALECT_H
#define FLASHC_DIALECT_TILE_IR_TILEDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "flashc/Dialect/Tile/IR/TileOpsDialect.h.inc"

#include "flashc/Dialect/Tile/IR/TileEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "flashc/Dialect/Tile/IR/TileAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "flashc/Dialect/Tile/IR/TileTypes.h.inc"

namespace mlir::tile {
/// Name of the unit attribute that marks a func.func as a tile program
/// (a sequence of workspace allocations and kernel launches).
inline constexpr llvm::StringLiteral kProgramAttrName = "tile.program";
} // namespace mlir::tile

#endif // FLASHC_DIALECT_TILE_IR_TILEDIALECT_H
