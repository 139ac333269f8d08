// The epilogue of the warp-specialised kernels (attention_fwd_ws, ffn_fwd_ws; attention_bwd_ws's dK and dV): a
// consumer warpgroup's 64 result rows leave through shared memory so that global stores are 16-byte row-contiguous
// chunks.
#pragma once
#include "flashc/device/mbarrier.cuh"
#include "flashc/device/regtile.cuh"
#include "flashc/device/tensor.cuh"
#include "flashc/device/wgmma_tile.cuh"

namespace flashc {
namespace device {

// Stage warpgroup `warpgroup`'s rows of `out` (rows 64g.. of a tile over both consumer warpgroups, fragments in the
// wgmma layout; a warpgroup's own 64-row tile, the backward's role split, passes 0) in its own rows of the panel tile
// `staging` (the caller guarantees no one else reads those rows any more), wait on named
// barrier `barrier` for its 128 threads, then store rows row0 + r < rows of dst, kCols columns (a multiple of 8;
// the tile's padding columns are not stored) as 16-byte chunks: dst's rows 16-byte aligned.
template <int kCols, class Tile, class Out>
__device__ __forceinline__ void store_warpgroup_rows(Tile staging, const Out& out, const GlobalMatrix<typename Tile::Elem>& dst,
                                                     int row0, int rows, int warpgroup, int barrier) {
  static_assert(kCols % 8 == 0, "16-byte chunks");
  detail::store_fragments_to(staging, out);
  named_barrier_sync(barrier, 128);
  constexpr int kChunksPerRow = kCols / 8;
  const unsigned char* base = reinterpret_cast<const unsigned char*>(staging.data);
#pragma unroll
  for (int i = threadIdx.x % 128; i < 64 * kChunksPerRow; i += 128) {
    const int r = warpgroup * 64 + i / kChunksPerRow, c = i % kChunksPerRow;
    if (row0 + r < rows)
      *reinterpret_cast<uint4*>(dst.base + (row0 + r) * dst.row_stride + c * 8) =
          *reinterpret_cast<const uint4*>(base + Tile::chunk_offset(r, c));
  }
}

}  // namespace device
}  // namespace flashc
