//===- CudaEmitter.h - tile kernels -> CUDA C++ + manifest -----*- C++ -*-===//
//
// The last compiler stage: prints every tile.kernel of a module as one
// `extern "C" __global__` function against the header-only device library
// (runtime/device/include/flashc/device), one library call per tile op, and
// describes each kernel and each tile.program in a bundle manifest.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_CUDAEMITTER_H
#define FLASHC_COMPILER_CUDAEMITTER_H

#include "flashc/Compiler/KernelUnit.h"
#include "flashc/runtime/Manifest.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <string>
#include <vector>

namespace flashc {

struct CudaModule {
  std::string source;        // kernels.cu
  flashc::rt::Manifest manifest; // kernels and programs (no cubins yet)
  /// The translation units: kernels.cu's include line plus one kernel's text,
  /// unchanged, for the manifest kernels that launch it (KernelUnit.h).
  std::vector<KernelUnit> kernelUnits;
};

/// Code generation choices (what the plan does not already decide).
struct CudaEmitOptions {
  /// The architecture the module's kernels were planned for ("sm_80",
  /// "sm_90a"): named in the source's header and the manifest's `arch` line.
  /// Empty: both sm_80 and sm_90a (a module planned by hand, e.g. in tests).
  std::string arch;
};

/// Emits CUDA C++ and the manifest for every tile.kernel / tile.program in
/// `module`. Reports a diagnostic on the offending op and fails when a kernel
/// uses something the chosen strategy cannot express (e.g. f32 matmul
/// operands under mma.sync).
mlir::FailureOr<CudaModule> emitCuda(mlir::ModuleOp module, const CudaEmitOptions &options = {});

} // namespace flashc

#endif // FLASHC_COMPILER_CUDAEMITTER_H
