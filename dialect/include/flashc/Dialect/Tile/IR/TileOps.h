//===- TileOps.h - tile kernel operations ---------------------*- C++ -*-===//
#ifndef FLASHC_DIALECT_TILE_IR_TILEOPS_H
#define FLASHC_DIALECT_TILE_IR_TILEOPS_H

#include "flashc/Dialect/Tile/IR/TileDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "flashc/Dialect/Tile/IR/TileOps.h.inc"

#endif // FLASHC_DIALECT_TILE_IR_TILEOPS_H
