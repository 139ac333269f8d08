//===- Stages.cpp - flashc stage dispatch ---------------------------------===//
#include "Stages.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

using namespace mlir;
using mlir::flash::EmitKind;

namespace flashc {
namespace {

LogicalResult runPasses(ModuleOp module, const CompileOptions &options,
                        void (*build)(OpPassManager &,
                                      const flash::PipelineOptions &)) {
  PassManager pm(module->getContext());
  if (options.printIrAfterAll) {
    // Whole-module printing needs a single-threaded context (set by main).
    pm.enableIRPrinting(
        /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
        /*shouldPrintAfterPass=*/[](Pass *, Operation *) { return true; },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false);
  }
  build(pm, options.pipeline);
  return pm.run(module);
}

LogicalResult writeText(const CompileOptions &options,
                        llvm::function_ref<void(llvm::raw_ostream &)> print) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(options.outputPath, &error);
  if (!output) {
    llvm::errs() << "flashc: error: cannot open output file '"
                 << options.outputPath << "': " << error << "\n";
    return failure();
  }
  print(output->os());
  output->keep();
  return success();
}

LogicalResult notYetImplemented(EmitKind kind) {
  llvm::errs() << "flashc: error: --emit=" << flash::stringifyEmitKind(kind)
               << " is not yet implemented in this build\n";
  return failure();
}

} // namespace

LogicalResult runStages(ModuleOp module, const CompileOptions &options) {
  switch (options.emit) {
  case EmitKind::Graph:
    if (failed(runPasses(module, options, flash::buildGraphPipeline)))
      return failure();
    return writeText(options,
                     [&](llvm::raw_ostream &os) {
      module->print(os);
      os << "\n";
    });
  case EmitKind::Tile:
  case EmitKind::Cuda:
  case EmitKind::Ptx:
  case EmitKind::Cubin:
  case EmitKind::Bundle:
    return notYetImplemented(options.emit);
  }
  return notYetImplemented(options.emit);
}

} // namespace flashc
