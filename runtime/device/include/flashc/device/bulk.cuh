// Bulk asynchronous reduction (sm_90 TMA engine): rows of an f32 shared tile added into global
// memory by cp.reduce.async.bulk, one instruction per row, off the load/store pipeline. Used for
// the backward's dQ accumulator instead of per-thread red.global atomics.
#pragma once
#include "flashc/device/regtile.cuh"

namespace flashc {
namespace device {

// f32 shared tile [Rows][Cols] with rows padded by 8 floats (32 B): fragment float2 stores of a
// half-warp (4 rows x 4 lanes) hit distinct banks, and every row stays contiguous and 16-byte
// aligned for the bulk copy engine.
template <int Rows, int Cols>
struct SmemTileF32 {
  static_assert(Cols % 4 == 0, "rows must be whole 16-byte units");
  using Elem = float;
  static constexpr int kRowStride = Cols + 8;
  static constexpr int kBytes = Rows * kRowStride * 4;
  float* data;
  __device__ __forceinline__ float* row(int r) const { return data + r * kRowStride; }
};

// Register f32 tile -> columns [col0, col0 + C) of the shared f32 tile (8-byte stores).
template <int R, int C, int W, int SC>
__device__ __forceinline__ void store_fragments(SmemTileF32<R, SC> dst, const RegTileF32<R, C, W>& src, int col0 = 0) {
#pragma unroll
  for (int mt = 0; mt < src.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int nt = 0; nt < src.kNT; ++nt)
        *reinterpret_cast<float2*>(dst.row(src.row(mt, h)) + col0 + src.col(nt, 0)) =
            make_float2(src.v[mt][nt][2 * h], src.v[mt][nt][2 * h + 1]);
}

}  // namespace device
}  // namespace flashc
