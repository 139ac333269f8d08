//===- TuningReport.h - flashc --print-tuning-space -----------*- C++ -*-===//
//
// What `python -m flashc.tune` asks the compiler: for each tunable kernel of a
// compiled module, its tuning key, the programs that launch it, the point it
// was planned at and the points of its kind's tuning space, as JSON.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_TOOLS_FLASHC_TUNINGREPORT_H
#define FLASHC_TOOLS_FLASHC_TUNINGREPORT_H

#include "flashc/Compiler/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace flashc {

/// Writes the report for `module`, planned for `target` (the kernel stage has
/// run on it).
void writeTuningSpace(mlir::ModuleOp module, const TargetDescription &target,
                      llvm::raw_ostream &os);

} // namespace flashc

#endif // FLASHC_TOOLS_FLASHC_TUNINGREPORT_H
