//===- Stages.cpp - flashc stage dispatch ---------------------------------===//
#include "Stages.h"

#include "flashc/Compiler/BundleWriter.h"
#include "flashc/Compiler/CudaEmitter.h"
#include "flashc/runtime/Nvrtc.h"

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
    // `error` reads "cannot open output file '<path>': <reason>".
    llvm::errs() << "flashc: error: " << error << "\n";
    return failure();
  }
  print(output->os());
  output->os().flush();
  if (output->os().has_error()) {
    // Reported here, and cleared so that the stream's destructor does not
    // abort with "LLVM ERROR: IO failure on output stream".
    llvm::errs() << "flashc: error: cannot write output file '" << options.outputPath
                 << "': " << output->os().error().message() << "\n";
    output->os().clear_error();
    return failure();
  }
  output->keep();
  return success();
}

/// Tile stage and CUDA emission: the module's tile kernels as CUDA C++ plus
/// the manifest that describes them.
FailureOr<CudaModule> emitCudaModule(ModuleOp module, const CompileOptions &options) {
  if (failed(runPasses(module, options, flash::buildFlashcPipeline)))
    return failure();
  return emitCuda(module, options.cuda);
}

/// Compiles the generated source for the first requested architecture.
FailureOr<rt::CompileOutput> compileFirstArch(const CudaModule &cuda, const CompileOptions &options) {
  const std::string &arch = options.pipeline.archs.front();
  std::vector<std::string> nvrtcOptions = cuda.manifest.nvrtcOptions;
  if (options.ptxasReport)
    nvrtcOptions.push_back("--ptxas-options=-v");
  auto compiled = rt::compileCuda(cuda.source, arch, nvrtcOptions);
  if (!compiled.ok()) {
    llvm::errs() << "flashc: error: " << compiled.error().message << "\n";
    return failure();
  }
  if (options.ptxasReport)
    llvm::errs() << compiled->log;
  return std::move(*compiled);
}

} // namespace

bool enableExperiment(CompileOptions &options, llvm::StringRef name) {
  if (name == "wide-gemm")
    options.pipeline.wideGemm = true;
  else if (name == "wgmma-overlap")
    options.cuda.overlapWgmma = true;
  else if (name == "narrow-hidden")
    options.pipeline.narrowHidden = true;
  else if (name == "mma-gemm")
    options.pipeline.wgmmaGemm = false;
  else if (name == "mma-dq")
    options.cuda.wgmmaDq = false;
  else if (name == "sync-lse")
    options.cuda.asyncColumnVectors = false;
  else if (name == "two-barrier")
    options.cuda.oneBarrierPipeline = false;
  else
    return false;
  return true;
}

const char *experimentNames() {
  return "wide-gemm, wgmma-overlap, narrow-hidden, mma-gemm, mma-dq, sync-lse, two-barrier";
}

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
    if (failed(runPasses(module, options, flash::buildFlashcPipeline)))
      return failure();
    return writeText(options, [&](llvm::raw_ostream &os) {
      module->print(os);
      os << "\n";
    });
  case EmitKind::Cuda: {
    FailureOr<CudaModule> cuda = emitCudaModule(module, options);
    if (failed(cuda))
      return failure();
    return writeText(options, [&](llvm::raw_ostream &os) { os << cuda->source; });
  }
  case EmitKind::Ptx:
  case EmitKind::Cubin: {
    FailureOr<CudaModule> cuda = emitCudaModule(module, options);
    if (failed(cuda))
      return failure();
    FailureOr<rt::CompileOutput> compiled = compileFirstArch(*cuda, options);
    if (failed(compiled))
      return failure();
    return writeText(options, [&](llvm::raw_ostream &os) {
      if (options.emit == EmitKind::Ptx)
        os << compiled->ptx;
      else
        os.write(compiled->cubin.data(), compiled->cubin.size());
    });
  }
  case EmitKind::Bundle: {
    if (options.outputPath == "-") {
      llvm::errs() << "flashc: error: --emit=bundle writes a directory: give it with -o DIR\n";
      return failure();
    }
    FailureOr<CudaModule> cuda = emitCudaModule(module, options);
    if (failed(cuda))
      return failure();
    cuda->manifest.archs = options.pipeline.archs;
    BundleWriteOptions write;
    write.cubinArchs = options.pipeline.archs;
    rt::Status status = writeBundle(options.outputPath, cuda->manifest, cuda->source, write);
    if (!status.ok()) {
      llvm::errs() << "flashc: error: writing bundle '" << options.outputPath
                   << "': " << status.error().message << "\n";
      return failure();
    }
    return success();
  }
  }
  return failure();
}

} // namespace flashc
