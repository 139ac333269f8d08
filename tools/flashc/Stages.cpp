//===- Stages.cpp - flashc stage dispatch ---------------------------------===//
#include "Stages.h"
#include "TuningReport.h"

#include "flashc/Compiler/BundleWriter.h"
#include "flashc/Compiler/CudaEmitter.h"
#include "flashc/Compiler/Target.h"
#include "flashc/Compiler/Tuning.h"
#include "flashc/runtime/Nvrtc.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
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

/// The options of one architecture's compile: planned and emitted for `arch`.
CompileOptions forArch(const CompileOptions &options, const std::string &arch) {
  CompileOptions one = options;
  one.pipeline.archs = {arch};
  one.cuda.arch = arch;
  return one;
}

/// Every requested architecture has a target model (block sizes, strategy):
/// an unknown one is an error here, never planned as another silently.
LogicalResult checkTargets(const CompileOptions &options) {
  for (const std::string &arch : options.pipeline.archs)
    if (!lookupTarget(arch)) {
      llvm::errs() << "flashc: error: " << unknownTargetMessage(arch) << "\n";
      return failure();
    }
  return success();
}

/// The tuning table of every requested architecture reads and parses (a
/// malformed line is reported once, here, as "<file>:<line>: ...").
LogicalResult checkTuningTables(const CompileOptions &options) {
  for (const std::string &arch : options.pipeline.archs) {
    std::string error;
    if (!loadTuningTable(options.pipeline.tuningTable, arch, error)) {
      llvm::errs() << "flashc: error: " << error << "\n";
      return failure();
    }
  }
  return success();
}

/// The stages past the graph write one architecture's code; a bundle holds
/// several (one plan each).
LogicalResult checkSingleArch(const CompileOptions &options) {
  if (options.pipeline.archs.size() == 1)
    return success();
  std::string archs;
  for (const std::string &arch : options.pipeline.archs)
    archs += (archs.empty() ? "" : ", ") + arch;
  llvm::errs() << "flashc: error: "
               << (options.printTuningSpace
                       ? std::string("--print-tuning-space")
                       : "--emit=" + flash::stringifyEmitKind(options.emit).str())
               << " writes one architecture's code, but --arch gives " << archs
               << ": give one --arch, or --emit=bundle for a bundle holding each\n";
  return failure();
}

/// Tile stage and CUDA emission for the single architecture of `options`:
/// the module's tile kernels as CUDA C++ plus the manifest that describes them.
FailureOr<CudaModule> emitCudaModule(ModuleOp module, const CompileOptions &options) {
  if (failed(runPasses(module, options, flash::buildFlashcPipeline)))
    return failure();
  return emitCuda(module, options.cuda);
}

/// Compiles the generated source for the (single) requested architecture.
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

LogicalResult runStages(ModuleOp module, const CompileOptions &options) {
  if (options.emit != EmitKind::Graph || options.printTuningSpace) {
    if (failed(checkTargets(options)) || failed(checkTuningTables(options)))
      return failure();
    if ((options.emit != EmitKind::Bundle || options.printTuningSpace) &&
        failed(checkSingleArch(options)))
      return failure();
  }
  if (options.printTuningSpace) {
    CompileOptions one = forArch(options, options.pipeline.archs.front());
    if (failed(runPasses(module, one, flash::buildFlashcPipeline)))
      return failure();
    return writeText(options, [&](llvm::raw_ostream &os) {
      writeTuningSpace(module, *lookupTarget(options.pipeline.archs.front()), os);
    });
  }
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
    if (failed(runPasses(module, forArch(options, options.pipeline.archs.front()),
                         flash::buildFlashcPipeline)))
      return failure();
    return writeText(options, [&](llvm::raw_ostream &os) {
      module->print(os);
      os << "\n";
    });
  case EmitKind::Cuda: {
    FailureOr<CudaModule> cuda =
        emitCudaModule(module, forArch(options, options.pipeline.archs.front()));
    if (failed(cuda))
      return failure();
    return writeText(options, [&](llvm::raw_ostream &os) { os << cuda->source; });
  }
  case EmitKind::Ptx:
  case EmitKind::Cubin: {
    FailureOr<CudaModule> cuda =
        emitCudaModule(module, forArch(options, options.pipeline.archs.front()));
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
    const std::vector<std::string> &archs = options.pipeline.archs;
    BundleWriteOptions write;
    write.cubinArchs = archs;
    write.jobs = options.compileJobs;
    if (const char *verbose = std::getenv("FLASHC_VERBOSE"); verbose && *verbose && std::string(verbose) != "0")
      write.onUnitDone = [](const UnitReport &r) {
        llvm::errs() << llvm::formatv("flashc: [{0}/{1}] {2}: {3} in {4:f2} s\n", r.done, r.total, r.unit,
                                      r.fromCache ? "cached" : "compiled", r.seconds);
      };
    rt::Status status;
    if (archs.size() == 1) {
      // One architecture: a version-1 bundle (manifest, kernels.cu, cubin).
      FailureOr<CudaModule> cuda = emitCudaModule(module, forArch(options, archs.front()));
      if (failed(cuda))
        return failure();
      status = writeBundle(options.outputPath, cuda->manifest,
                           BundleSource{std::move(cuda->source), std::move(cuda->kernelUnits)}, write);
    } else {
      // Several: each planned and emitted on its own copy of the module
      // (mma.sync on sm_80, wgmma on sm_90a, even other backward kernels),
      // one subdirectory each under a version-2 index.
      std::vector<ArchVariant> variants;
      for (const std::string &arch : archs) {
        OwningOpRef<ModuleOp> copy = module.clone();
        FailureOr<CudaModule> cuda = emitCudaModule(*copy, forArch(options, arch));
        if (failed(cuda)) {
          llvm::errs() << "flashc: note: while compiling for " << arch << "\n";
          return failure();
        }
        variants.push_back({arch, std::move(cuda->manifest),
                            BundleSource{std::move(cuda->source), std::move(cuda->kernelUnits)}});
      }
      status = writeMultiArchBundle(options.outputPath, std::move(variants), write);
    }
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
