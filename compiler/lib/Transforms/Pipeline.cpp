//===- Pipeline.cpp - flashc pass pipelines -------------------------------===//
#include "flashc/Compiler/Pipeline.h"
#include "flashc/Compiler/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::flash {

namespace {
struct EmitKindName {
  EmitKind kind;
  llvm::StringLiteral name;
};
constexpr EmitKindName kEmitKindNames[] = {
    {EmitKind::Graph, "graph"}, {EmitKind::Tile, "tile"},
    {EmitKind::Cuda, "cuda"},   {EmitKind::Ptx, "ptx"},
    {EmitKind::Cubin, "cubin"}, {EmitKind::Bundle, "bundle"}};
} // namespace

llvm::ArrayRef<EmitKind> allEmitKinds() {
  static const EmitKind kinds[] = {EmitKind::Graph, EmitKind::Tile,
                                   EmitKind::Cuda,  EmitKind::Ptx,
                                   EmitKind::Cubin, EmitKind::Bundle};
  return kinds;
}

llvm::StringRef stringifyEmitKind(EmitKind kind) {
  for (const EmitKindName &entry : kEmitKindNames)
    if (entry.kind == kind)
      return entry.name;
  return "unknown";
}

std::optional<EmitKind> parseEmitKind(llvm::StringRef text) {
  for (const EmitKindName &entry : kEmitKindNames)
    if (entry.name == text)
      return entry.kind;
  return std::nullopt;
}

bool isBackwardForm(llvm::StringRef form) {
  return form == "auto" || form == "rows" || form == "transposed";
}

void buildGraphPipeline(OpPassManager &pm, const PipelineOptions &) {
  pm.addPass(createFuseAttention());
  pm.addPass(createFuseFFN());
  pm.addPass(createFuseMoE());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

std::string pipelineTarget(const PipelineOptions &options) {
  // One plan per architecture: an architecture without a target model fails
  // in the passes, naming the known ones.
  return options.archs.empty() ? "sm_90a" : options.archs.front();
}

void buildKernelPipeline(OpPassManager &pm, const PipelineOptions &options) {
  std::string target = pipelineTarget(options);
  if (options.generateBackward) {
    GenerateBackwardOptions backward;
    backward.target = target;
    backward.deterministic = options.deterministicBackward;
    backward.form = options.backwardForm;
    backward.tuningTable = options.tuningTable;
    pm.addPass(createGenerateBackward(backward));
  }
  FlashTileOptions tile;
  tile.target = target;
  tile.ffnPlan = options.ffnPlan;
  tile.tuningTable = options.tuningTable;
  pm.addPass(createFlashTile(tile));
  PlanMemoryOptions plan;
  plan.target = target;
  plan.blockM = options.blockM;
  plan.blockN = options.blockN;
  plan.blockK = options.blockK;
  plan.warps = options.warps;
  plan.stages = options.stages;
  plan.tuningTable = options.tuningTable;
  pm.addPass(createPlanMemory(plan));
  pm.addPass(createWarpSpecialize());
  pm.addPass(createOrderBlocks());
}

void buildFlashcPipeline(OpPassManager &pm, const PipelineOptions &options) {
  buildGraphPipeline(pm, options);
  buildKernelPipeline(pm, options);
}

void registerFlashcPipelines() {
  PassPipelineRegistration<>(
      "flashc-graph-pipeline",
      "flashc graph stage: fuse attention and FFNs, canonicalize, CSE",
      [](OpPassManager &pm) { buildGraphPipeline(pm, PipelineOptions()); });
  PassPipelineRegistration<>(
      "flashc-pipeline", "the default flashc pipeline (all pass stages)",
      [](OpPassManager &pm) { buildFlashcPipeline(pm, PipelineOptions()); });
}

} // namespace mlir::flash
