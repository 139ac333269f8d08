//===- TileKernels.h - builders of tile kernels ---------------*- C++ -*-===//
//
// Every generated tile.kernel is built by one function here from a recipe
// (#tile.attention / #tile.gemm, kept in the kernel's `spec` attribute) and a
// TilePlan (block sizes, warps, stages). flash-tile and
// flash-generate-backward build kernels; flash-plan-memory rebuilds them at
// the block sizes it chooses. docs/tile-dialect.md describes each kernel.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_TILEKERNELS_H
#define FLASHC_COMPILER_TILEKERNELS_H

#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace flashc {

/// Block-level decisions of one kernel. For attention, blockM = Br (query
/// rows), blockN = Bc (key rows). For GEMMs, blockM x blockN is the output
/// tile and blockK the contraction step.
struct TilePlan {
  int64_t blockM = 64;
  int64_t blockN = 64;
  int64_t blockK = 32;
  int64_t warps = 4;
  int64_t stages = 2;
  mlir::tile::Strategy strategy = mlir::tile::Strategy::MmaSyncSm80;
};

/// The plan a built kernel carries (its attributes).
TilePlan planOf(mlir::tile::KernelOp kernel);

/// Converts a ranked tensor type of the graph into the kernel-argument type.
mlir::tile::GlobalTensorType toGlobalTensorType(mlir::RankedTensorType type);

/// Whether the recipe `spec` (#tile.attention or #tile.gemm, which may have
/// been built in memory rather than parsed) is in range and can be built for
/// kernel arguments `argTypes`: count, ranks, element types and static head
/// dims per role. Reports through `emitError` and fails otherwise.
mlir::LogicalResult checkKernelRecipe(llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
                                      mlir::Attribute spec, llvm::ArrayRef<mlir::Type> argTypes);

/// Whether `plan`'s sizes are in the ranges of TileLimits.h (block sizes,
/// stages, warps); role-specific shapes are flash-plan-memory's to check.
mlir::LogicalResult checkTilePlan(llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
                                  mlir::Attribute spec, const TilePlan &plan);

/// Whether the tiles `plan` makes of arguments `argTypes` are within the tile type's bounds (TileLimits.h) where an
/// argument or a head dim, not the plan, sets a tile's width: the fused FFN's [block_m x d_out] f32 accumulator and
/// its [block_n x d_out] slab of w2; attention's f32 accumulators of a block's rows by a head dim. Reports in the
/// spec's terms (what to change) and fails otherwise.
mlir::LogicalResult checkPlannedTiles(llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
                                      mlir::Attribute spec, llvm::ArrayRef<mlir::Type> argTypes,
                                      const TilePlan &plan);

/// Builds the kernel `name` at the builder's insertion point (module level)
/// from `spec` (an AttentionSpecAttr or GemmSpecAttr) for the argument types
/// `argTypes`, following `plan`. Returns null and reports on `loc` when the
/// recipe cannot be built (checkKernelRecipe, checkTilePlan, checkPlannedTiles) or the built
/// kernel does not verify.
mlir::tile::KernelOp buildKernel(mlir::OpBuilder &builder, mlir::Location loc, llvm::StringRef name,
                                 mlir::Attribute spec, llvm::ArrayRef<mlir::Type> argTypes,
                                 const TilePlan &plan);

/// Replaces `kernel` by the same recipe built with `plan`; returns the new
/// kernel (same symbol name) or null after reporting an error.
mlir::tile::KernelOp rebuildKernel(mlir::tile::KernelOp kernel, const TilePlan &plan);

} // namespace flashc

#endif // FLASHC_COMPILER_TILEKERNELS_H
