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
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void buildFlashcPipeline(OpPassManager &pm, const PipelineOptions &options) {
  buildGraphPipeline(pm, options);
  // Block sizes follow the newest requested architecture's target model.
  std::string target = "sm_80";
  for (const std::string &arch : options.archs)
    if (arch.rfind("sm_90", 0) == 0)
      target = "sm_90a";
  GenerateBackwardOptions backward;
  backward.target = target;
  backward.deterministic = options.deterministicBackward;
  backward.form = options.backwardForm;
  pm.addPass(createGenerateBackward(backward));
  FlashTileOptions tile;
  tile.target = target;
  pm.addPass(createFlashTile(tile));
  PlanMemoryOptions plan;
  plan.target = target;
  plan.wgmmaGemm = options.wgmmaGemm;
  plan.wideGemm = options.wideGemm;
  plan.wsForward = options.wsForward;
  pm.addPass(createPlanMemory(plan));
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
