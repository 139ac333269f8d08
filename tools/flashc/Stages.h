//===- Stages.h - flashc stage dispatch -----------------------*- C++ -*-===//
//
// The one place that maps `--emit=` to the stages that run and the output
// that is written. Plug new stages (tile, cuda, ptx, cubin, bundle) in here.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_TOOLS_FLASHC_STAGES_H
#define FLASHC_TOOLS_FLASHC_STAGES_H

#include "flashc/Compiler/CudaEmitter.h"
#include "flashc/Compiler/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <string>

namespace flashc {

struct CompileOptions {
  mlir::flash::EmitKind emit = mlir::flash::EmitKind::Bundle;
  /// Output path; "-" is stdout.
  std::string outputPath = "-";
  mlir::flash::PipelineOptions pipeline;
  bool printIrAfterAll = false;
  /// Print ptxas' resource report (registers, spills, shared memory).
  bool ptxasReport = false;
  CudaEmitOptions cuda;
  /// NVRTC compiles of a bundle at once (0: $FLASHC_COMPILE_JOBS, else the cores).
  int compileJobs = 0;
  /// Instead of `emit`: the tuning report of the kernel stage (TuningReport.h).
  bool printTuningSpace = false;
};

/// Runs the stages up to `options.emit` on `module` and writes the result.
/// Errors are reported (diagnostics through the context, or on stderr with a
/// "flashc: error:" prefix); the output file is only created on success.
mlir::LogicalResult runStages(mlir::ModuleOp module,
                              const CompileOptions &options);

} // namespace flashc

#endif // FLASHC_TOOLS_FLASHC_STAGES_H
