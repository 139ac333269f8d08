//===- FlashDialect.cpp - flash dialect registration ----------------------===//
#include "flashc/Dialect/Flash/IR/FlashDialect.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::flash;

#include "flashc/Dialect/Flash/IR/FlashOpsDialect.cpp.inc"

void FlashDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "flashc/Dialect/Flash/IR/FlashOps.cpp.inc"
      >();
}
