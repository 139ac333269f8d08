//===- TileKernels.cpp - kernel recipes: dispatch and rebuild -------------===//
#include "flashc/Compiler/TileKernels.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace mlir::tile;

namespace flashc {

KernelOp buildAttentionKernel(OpBuilder &builder, Location loc, StringRef name,
                              AttentionSpecAttr spec, ArrayRef<Type> argTypes,
                              const TilePlan &plan);
KernelOp buildGemmKernel(OpBuilder &builder, Location loc, StringRef name, GemmSpecAttr spec,
                         ArrayRef<Type> argTypes, const TilePlan &plan);
KernelOp buildDecodeKernel(OpBuilder &builder, Location loc, StringRef name, DecodeSpecAttr spec,
                           ArrayRef<Type> argTypes, const TilePlan &plan);
KernelOp buildVarlenKernel(OpBuilder &builder, Location loc, StringRef name, VarlenSpecAttr spec,
                           ArrayRef<Type> argTypes, const TilePlan &plan);
KernelOp buildMoeKernel(OpBuilder &builder, Location loc, StringRef name, MoeSpecAttr spec, ArrayRef<Type> argTypes,
                        const TilePlan &plan);

TilePlan planOf(KernelOp kernel) {
  TilePlan plan;
  plan.blockM = static_cast<int64_t>(kernel.getBlockM());
  plan.blockN = static_cast<int64_t>(kernel.getBlockN());
  plan.warps = static_cast<int64_t>(kernel.getWarps());
  plan.stages = static_cast<int64_t>(kernel.getStages());
  plan.strategy = kernel.getStrategy();
  if (auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(kernel.getSpecAttr()))
    plan.blockK = gemm.getBlockK();
  return plan;
}

GlobalTensorType toGlobalTensorType(RankedTensorType type) {
  return GlobalTensorType::get(type.getContext(), type.getShape(), type.getElementType());
}

KernelOp buildKernel(OpBuilder &builder, Location loc, StringRef name, Attribute spec,
                     ArrayRef<Type> argTypes, const TilePlan &plan) {
  // A decode, packed-sequences or mixture-of-experts kernel is one library block (tile.decode_block,
  // tile.varlen_block, tile.moe_block): its recipe checks its own arguments.
  if (llvm::isa_and_nonnull<DecodeSpecAttr, VarlenSpecAttr, MoeSpecAttr>(spec)) {
    KernelOp kernel = llvm::isa<DecodeSpecAttr>(spec)
                          ? buildDecodeKernel(builder, loc, name, llvm::cast<DecodeSpecAttr>(spec), argTypes, plan)
                      : llvm::isa<VarlenSpecAttr>(spec)
                          ? buildVarlenKernel(builder, loc, name, llvm::cast<VarlenSpecAttr>(spec), argTypes, plan)
                          : buildMoeKernel(builder, loc, name, llvm::cast<MoeSpecAttr>(spec), argTypes, plan);
    if (kernel && failed(mlir::verify(kernel))) {
      kernel.erase();
      emitError(loc) << "internal error: kernel @" << name << " built from " << spec << " does not verify";
      return nullptr;
    }
    return kernel;
  }
  if (!llvm::isa_and_nonnull<AttentionSpecAttr, GemmSpecAttr>(spec)) {
    emitError(loc) << "kernel @" << name << " has no recipe (spec attribute) to build from";
    return nullptr;
  }
  // Everything the builders read is checked before the first op is created.
  auto report = [&] { return emitError(loc) << "cannot build kernel @" << name << ": "; };
  if (failed(checkTilePlan(report, spec, plan)) || failed(checkKernelRecipe(report, spec, argTypes)) ||
      failed(checkPlannedTiles(report, spec, argTypes, plan)))
    return nullptr;
  KernelOp kernel;
  if (auto attention = llvm::dyn_cast<AttentionSpecAttr>(spec)) {
    kernel = buildAttentionKernel(builder, loc, name, attention, argTypes, plan);
  } else {
    auto gemm = llvm::cast<GemmSpecAttr>(spec);
    if (gemm.getBlockK() != plan.blockK)
      gemm = GemmSpecAttr::get(builder.getContext(), gemm.getRole(), gemm.getActivation(),
                               gemm.getTransposeA(), gemm.getTransposeB(), gemm.getBias1(),
                               gemm.getBias2(), gemm.getGated(), gemm.getAccumulate(),
                               gemm.getAlpha(), plan.blockK, gemm.getElementType(),
                               gemm.getSavePre(), gemm.getActGrad());
    kernel = buildGemmKernel(builder, loc, name, gemm, argTypes, plan);
  }
  // A pass hands on only kernels that verify: a recipe the checks above let
  // through by mistake is an error here, not an invalid module later.
  if (kernel && failed(mlir::verify(kernel))) {
    kernel.erase();
    emitError(loc) << "internal error: kernel @" << name << " built from " << spec
                   << " does not verify";
    return nullptr;
  }
  return kernel;
}

KernelOp rebuildKernel(KernelOp kernel, const TilePlan &plan) {
  OpBuilder builder(kernel);
  std::string name = kernel.getSymName().str();
  SmallVector<Type> argTypes(kernel.getFunctionType().getInputs());
  KernelOp rebuilt = buildKernel(builder, kernel.getLoc(), name + ".rebuild", kernel.getSpecAttr(),
                                 argTypes, plan);
  if (!rebuilt)
    return nullptr;
  if (RunIfAttr runIf = kernel.getRunIfAttr())
    rebuilt.setRunIfAttr(runIf);
  kernel.erase();
  rebuilt.setSymName(name);
  return rebuilt;
}

} // namespace flashc
