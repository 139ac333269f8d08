//===- TileKernels.cpp - kernel recipes: dispatch and rebuild -------------===//
#include "flashc/Compiler/TileKernels.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::tile;

namespace flashc {

KernelOp buildAttentionKernel(OpBuilder &builder, Location loc, StringRef name,
                              AttentionSpecAttr spec, ArrayRef<Type> argTypes,
                              const TilePlan &plan);
KernelOp buildGemmKernel(OpBuilder &builder, Location loc, StringRef name, GemmSpecAttr spec,
                         ArrayRef<Type> argTypes, const TilePlan &plan);

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
  if (plan.blockM < 1 || plan.blockN < 1 || plan.warps < 1 || plan.stages < 1) {
    emitError(loc) << "invalid tile plan: block_m = " << plan.blockM
                   << ", block_n = " << plan.blockN << ", warps = " << plan.warps
                   << ", stages = " << plan.stages;
    return nullptr;
  }
  if (auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(spec))
    return buildAttentionKernel(builder, loc, name, attention, argTypes, plan);
  if (auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(spec)) {
    if (gemm.getBlockK() != plan.blockK)
      gemm = GemmSpecAttr::get(builder.getContext(), gemm.getRole(), gemm.getActivation(),
                               gemm.getTransposeA(), gemm.getTransposeB(), gemm.getBias1(),
                               gemm.getBias2(), gemm.getGated(), gemm.getAccumulate(),
                               gemm.getAlpha(), plan.blockK, gemm.getElementType());
    return buildGemmKernel(builder, loc, name, gemm, argTypes, plan);
  }
  emitError(loc) << "kernel @" << name << " has no recipe (spec attribute) to build from";
  return nullptr;
}

KernelOp rebuildKernel(KernelOp kernel, const TilePlan &plan) {
  OpBuilder builder(kernel);
  std::string name = kernel.getSymName().str();
  SmallVector<Type> argTypes(kernel.getFunctionType().getInputs());
  KernelOp rebuilt = buildKernel(builder, kernel.getLoc(), name + ".rebuild", kernel.getSpecAttr(),
                                 argTypes, plan);
  if (!rebuilt)
    return nullptr;
  kernel.erase();
  rebuilt.setSymName(name);
  return rebuilt;
}

} // namespace flashc
