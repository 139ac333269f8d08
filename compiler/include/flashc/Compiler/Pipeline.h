//===- Pipeline.h - flashc pass pipelines ---------------------*- C++ -*-===//
//
// The stages of flashc in order, and the pass pipelines that run them. flashc
// and flash-run-tile both build their passes here.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_PIPELINE_H
#define FLASHC_COMPILER_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::flash {

/// What `flashc --emit=` produces; each kind names the last stage that runs.
enum class EmitKind { Graph, Tile, Cuda, Ptx, Cubin, Bundle };

/// All kinds in pipeline order.
llvm::ArrayRef<EmitKind> allEmitKinds();
llvm::StringRef stringifyEmitKind(EmitKind kind);
std::optional<EmitKind> parseEmitKind(llvm::StringRef text);

struct PipelineOptions {
  /// GPU architectures to generate code for, e.g. "sm_90a", "sm_80". The
  /// tile stage plans for the first; flashc runs it once per architecture.
  std::vector<std::string> archs{"sm_90a"};
  /// Backward attention computes dQ without atomics (bitwise reproducible).
  bool deterministicBackward = false;
  /// Backward attention kernel form: "rows", "transposed" (the Sᵀ form: keys
  /// as rows, Pᵀ and dSᵀ feed dV and dK from registers; dS goes through shared
  /// memory once, for dQ) or "auto" (the form the target runs faster).
  std::string backwardForm = "auto";
  /// The tuning table the plan passes read (flash-generate-backward's form,
  /// flash-plan-memory's plans): "" the target's built-in table, "none" the
  /// hand rules only, else a file (flashc --tuning-table; docs/tuning.md).
  std::string tuningTable;

  // Knobs of the kernel stage that flashc leaves at their defaults and
  // flash-run-tile exposes (so both build their passes here and cannot drift).
  /// Generate the backward tile programs (flash-run-tile without --backward: off).
  bool generateBackward = true;
  /// flash-tile's FFN plan: auto (fused when it fits the target), fused, two-kernel.
  std::string ffnPlan = "auto";
  /// flash-plan-memory overrides; 0 keeps the target's choice.
  int64_t blockM = 0, blockN = 0, blockK = 0, warps = 0, stages = 0;
};

/// Whether `form` names a backward kernel form (auto, rows, transposed).
bool isBackwardForm(llvm::StringRef form);

/// Graph stage: fuse attention, fuse FFNs, then canonicalize and CSE.
void buildGraphPipeline(OpPassManager &pm, const PipelineOptions &options);

/// The target model the kernel stage plans for: the first of options.archs
/// (flashc runs the pipeline once per --arch, each on its own copy of the
/// module); sm_90a when none is given.
std::string pipelineTarget(const PipelineOptions &options);

/// Kernel stage, on a module the graph stage has run on: generate the
/// backward programs, tile (flash-tile), plan memory (flash-plan-memory),
/// schedule the warp-specialised kernels (flash-warp-specialize), order the
/// blocks (flash-order-blocks).
void buildKernelPipeline(OpPassManager &pm, const PipelineOptions &options);

/// Every pass stage, in order: the graph stage, then the kernel stage.
void buildFlashcPipeline(OpPassManager &pm, const PipelineOptions &options);

/// Registers `--flashc-graph-pipeline` and `--flashc-pipeline` for flash-opt.
void registerFlashcPipelines();

} // namespace mlir::flash

#endif // FLASHC_COMPILER_PIPELINE_H
