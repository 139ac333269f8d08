//===- Passes.h - flashc passes -------------------------------*- C++ -*-===//
#ifndef FLASHC_COMPILER_PASSES_H
#define FLASHC_COMPILER_PASSES_H

#include "flashc/Compiler/ScheduleDefaults.h"
#include "flashc/Dialect/Flash/IR/FlashDialect.h"

#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::flash {

#define GEN_PASS_DECL
#include "flashc/Compiler/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flashc/Compiler/Passes.h.inc"

} // namespace mlir::flash

#endif // FLASHC_COMPILER_PASSES_H
