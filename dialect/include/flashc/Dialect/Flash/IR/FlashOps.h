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

#include <limits>

namespace mlir::flash {
/// The largest flash.attention scale: the kernels run softmax in base 2 and
/// fold scale·log2(e) into one f32 constant, which must stay finite.
constexpr double kMaxAttentionScale =
    static_cast<double>(std::numeric_limits<float>::max()) / 1.4426950408889634;
} // namespace mlir::flash

#define GET_OP_CLASSES
#include "flashc/Dialect/Flash/IR/FlashOps.h.inc"

#endif // FLASHC_DIALECT_FLASH_IR_FLASHOPS_H
