//===- TileLimits.h - bounds of tile attributes ----------------*- C++ -*-===//
//
// What the tile dialect's verifiers accept, flash-plan-memory plans and the
// CUDA emitter prints. Tile IR is an input (flashc and flash-opt read it), so
// every integer and float attribute is bounded here, once, and the verifiers,
// the planner and the kernel builders check against the same numbers.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_DIALECT_TILE_IR_TILELIMITS_H
#define FLASHC_DIALECT_TILE_IR_TILELIMITS_H

#include <cstdint>

namespace mlir::tile::limits {

/// The generated kernels index with 32-bit ints: a static tensor dimension,
/// a grid size or divisor and a shared-memory offset must fit one.
constexpr int64_t kMaxInt32 = 2147483647;

/// A block dimension (block_m, block_n, block_k): the widest tile the kernels
/// use is 256 (wide GEMMs); larger blocks cannot live in registers.
constexpr int64_t kMaxBlock = 256;

/// Tile dimensions and total size. The largest register file (64 Ki 32-bit
/// registers a block) or shared memory (227 KiB) holds no more than 256 KiB;
/// one dimension stays below 2^16 so that sizes never overflow.
constexpr int64_t kMaxTileDim = 65536;
constexpr int64_t kMaxTileBytes = 256 * 1024;

/// Head dims of an attention recipe: a 16-row block of Q, K and V in 16-bit
/// must fit shared memory at least in principle; the planner reports the
/// exact shortfall for the larger ones.
constexpr int64_t kMaxHeadDim = 1024;

/// Pipeline depth: `stages` of a kernel, `buffers` of a tile.load.
constexpr int64_t kMaxStages = 8;

/// Window sides: the device library adds them to 32-bit positions as int
/// template arguments (the flash mask attribute has the same bound).
constexpr int64_t kMaxWindowSide = (int64_t(1) << 30) - 1;

/// Warps of a block: a power of two up to 16 (512 threads); a
/// warp-specialised kernel's consumers are whole warpgroups (4, 8 or 12
/// warps: three consumer warpgroups beside the producer make 512 threads).
constexpr int64_t kMaxWarps = 16;
constexpr bool isWarpCount(int64_t warps, bool warpSpecialised) {
  if (warps < 1 || warps > kMaxWarps)
    return false;
  return (warps & (warps - 1)) == 0 || (warpSpecialised && warps % 4 == 0 && warps < kMaxWarps);
}

/// setmaxnreg moves registers between the warpgroups of a warp-specialised
/// block: together they keep what the launch gave each thread, the 64 Ki
/// registers of a multiprocessor over the block's threads, rounded down to a
/// multiple of 8 (a producer warpgroup + `consumerWarpgroups`).
constexpr int64_t registersAtLaunch(int64_t consumerWarpgroups) {
  return 65536 / (128 * (1 + consumerWarpgroups)) / 8 * 8;
}
/// The most each consumer warpgroup can take once the producer keeps
/// `producerRegisters` (a multiple of 8, at most 256): 240 with two consumer
/// warpgroups, 160 with three (a 24-register producer).
constexpr int64_t maxConsumerRegisters(int64_t producerRegisters, int64_t consumerWarpgroups) {
  int64_t most = ((1 + consumerWarpgroups) * registersAtLaunch(consumerWarpgroups) - producerRegisters) /
                 consumerWarpgroups / 8 * 8;
  return most < 256 ? most : 256;
}

/// Scales, caps and alphas: finite and at most 1e30 in magnitude, so that the
/// f32 constants the emitter prints from them (scale · log2 e, ...) stay
/// finite floats. The f32 1e30: a flash attribute's f32 `1e30` is at the bound.
constexpr double kMaxScale = static_cast<double>(1.0e30f);
inline bool isBoundedScale(double value) { return value >= -kMaxScale && value <= kMaxScale; }

} // namespace mlir::tile::limits

#endif // FLASHC_DIALECT_TILE_IR_TILELIMITS_H
