// tile ops `row_max`, `row_sum`: reductions along the columns of a register tile.
// A row's values live in the 4 lanes of one quad, so two xor-shuffles finish the reduction
// and leave the result in all 4 lanes.
#pragma once
#include "flashc/device/regtile.cuh"

namespace flashc {
namespace device {

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// out = max over columns of t (-inf for a row whose entries are all -inf).
template <int R, int C, int W>
__device__ __forceinline__ RegRowVec<R, W> row_max(const RegTileF32<R, C, W>& t) {
  RegRowVec<R, W> out;
#pragma unroll
  for (int mt = 0; mt < t.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float m = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < t.kNT; ++nt) m = fmaxf(m, fmaxf(t.v[mt][nt][2 * h], t.v[mt][nt][2 * h + 1]));
      out.v[mt][h] = quad_max(m);
    }
  return out;
}

// out = sum over columns of t.
template <int R, int C, int W>
__device__ __forceinline__ RegRowVec<R, W> row_sum(const RegTileF32<R, C, W>& t) {
  RegRowVec<R, W> out;
#pragma unroll
  for (int mt = 0; mt < t.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float s = 0.f;
#pragma unroll
      for (int nt = 0; nt < t.kNT; ++nt) s += t.v[mt][nt][2 * h] + t.v[mt][nt][2 * h + 1];
      out.v[mt][h] = quad_sum(s);
    }
  return out;
}

// Elementwise max of two row vectors (m_new = max(m_old, row_max(S))).
template <int R, int W>
__device__ __forceinline__ RegRowVec<R, W> max(const RegRowVec<R, W>& a, const RegRowVec<R, W>& b) {
  RegRowVec<R, W> out;
#pragma unroll
  for (int mt = 0; mt < a.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) out.v[mt][h] = fmaxf(a.v[mt][h], b.v[mt][h]);
  return out;
}

}  // namespace device
}  // namespace flashc
