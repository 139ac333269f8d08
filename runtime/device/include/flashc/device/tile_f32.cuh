// f32 shared tiles in generated kernels: `tile.load` of an f32 tensor into shared memory (e.g. the
// backward's dQ accumulator) and `tile.convert` from such a tile into a register tile. The layout
// is SmemTileF32 (rows padded by 8 floats: fragment reads of a warp hit distinct banks).
#pragma once
#include "flashc/device/bulk.cuh"
#include "flashc/device/copy.cuh"
#include "flashc/device/regtile.cuh"

namespace flashc {
namespace device {

// tile.load %t[.., row0, col0] limit [rl, cl] -> f32 shared: 16-byte cp.async per 4 floats,
// zero-filled past the limits: whole 4-float chunks, or (kExact) only the floats inside a width that
// ends inside 4 (the split-K accumulator of an FFN width that is not a multiple of 4).
template <int kThreads, bool kExact = false, int R, int C>
__device__ __forceinline__ void load_tile_async(SmemTileF32<R, C> dst, const GlobalMatrix<float>& m, int row0,
                                                int col0, int rl, int cl) {
  constexpr int kChunks = C / 4;
  for (int idx = threadIdx.x; idx < R * kChunks; idx += kThreads) {
    const int r = idx / kChunks, c = (idx % kChunks) * 4;
    const int row = row0 + r, col = col0 + c;
    if constexpr (kExact) {
      const int n = min(cl, m.cols) - col;  // floats of this chunk inside the width
      const int bytes = row < rl && row < m.rows && n > 0 ? min(n, 4) * 4 : 0;
      const float* src = bytes ? m.base + static_cast<long long>(row) * m.row_stride + col : m.base;
      cp_async_16_bytes(smem_u32(dst.row(r) + c), src, bytes);
    } else {
      const bool valid = row < rl && row < m.rows && col < cl && col < m.cols;
      const float* src = valid ? m.base + static_cast<long long>(row) * m.row_stride + col : m.base;
      cp_async_16(smem_u32(dst.row(r) + c), src, valid);
    }
  }
}

// tile.convert f32 shared -> register (f32 or 16-bit) in the fragment layout of the register tile.
template <int R, int C, int W>
__device__ __forceinline__ void convert(RegTileF32<R, C, W>& dst, SmemTileF32<R, C> src) {
#pragma unroll
  for (int mt = 0; mt < dst.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int nt = 0; nt < dst.kNT; ++nt) {
        const float2 f = *reinterpret_cast<const float2*>(src.row(dst.row(mt, h)) + dst.col(nt, 0));
        dst.v[mt][nt][2 * h] = f.x;
        dst.v[mt][nt][2 * h + 1] = f.y;
      }
}
template <class T, int R, int C, int W>
__device__ __forceinline__ void convert(RegTile16<T, R, C, W>& dst, SmemTileF32<R, C> src) {
#pragma unroll
  for (int mt = 0; mt < dst.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int nt = 0; nt < dst.kNT; ++nt) {
        const float2 f = *reinterpret_cast<const float2*>(src.row(dst.row(mt, h)) + dst.col(nt, 0));
        dst.v[mt][nt][h] = ElemTraits<T>::pack(f.x, f.y);
      }
}

}  // namespace device
}  // namespace flashc
