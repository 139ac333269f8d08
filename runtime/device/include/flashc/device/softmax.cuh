// Online softmax in base 2 (FlashAttention-2 formulation), tile-dialect semantics.
//
// Scores s are raw (unscaled) q.k; the softmax scale F is folded into the exponent:
//   p = exp(F s - F m) = exp2(s * F log2e - m * F log2e), one FMA per element.
// exp2 / softmax_correction take `scale_log2` = F * log2(e), the folded constant the emitter
// prints (tile op `scale F` times kLog2e); logsumexp takes the natural F.
// Row state: m (running max of raw scores), l (running sum of p). A row all of whose scores so
// far are -inf has m = -inf; the exponent then uses 0 in place of m, p = 0, and no
// (-inf) - (-inf) = NaN appears. F > 0 is assumed (tile dialect).
#pragma once
#include "flashc/device/reduce.cuh"

namespace flashc {
namespace device {

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float finite_or_zero(float m) { return m == -INFINITY ? 0.f : m; }

// tile op `row_max %s, %m0`: m1[r] = max(m0[r], max_c s[r][c]).
template <int R, int C, int W>
__device__ __forceinline__ RegRowVec<R, W> row_max(const RegTileF32<R, C, W>& s, const RegRowVec<R, W>& m0) {
  return max(m0, row_max(s));
}

// tile op `exp2 %s, %m scale F`: t[r][c] = exp2((t[r][c] - m[r]) * scale_log2), in place, with
// scale_log2 = F * log2e; 0 where m[r] = -inf (then every t[r][c] is -inf too).
template <int R, int C, int W>
__device__ __forceinline__ void exp2(RegTileF32<R, C, W>& t, const RegRowVec<R, W>& m, float scale_log2) {
#pragma unroll
  for (int mt = 0; mt < t.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float bias = finite_or_zero(m.v[mt][h]) * scale_log2;
#pragma unroll
      for (int nt = 0; nt < t.kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          t.v[mt][nt][2 * h + e] = fast_exp2(fmaf(t.v[mt][nt][2 * h + e], scale_log2, -bias));
    }
}

// tile op `softmax_correction %m0, %m1 scale F`: c[r] = exp2((m0[r] - m1[r]) * scale_log2),
// scale_log2 = F * log2e; 1 where m1[r] = -inf; else 0 where m0[r] = -inf.
template <int R, int W>
__device__ __forceinline__ RegRowVec<R, W> softmax_correction(const RegRowVec<R, W>& m0, const RegRowVec<R, W>& m1,
                                                              float scale_log2) {
  RegRowVec<R, W> c;
#pragma unroll
  for (int mt = 0; mt < c.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      c.v[mt][h] = m1.v[mt][h] == -INFINITY ? 1.f : fast_exp2((m0.v[mt][h] - m1.v[mt][h]) * scale_log2);
  return c;
}

// tile op `online_sum %l0, %c, %p`: l1[r] = l0[r] * c[r] + sum_c p[r][c].
template <int R, int C, int W>
__device__ __forceinline__ RegRowVec<R, W> online_sum(const RegRowVec<R, W>& l0, const RegRowVec<R, W>& c,
                                                      const RegTileF32<R, C, W>& p) {
  const RegRowVec<R, W> s = row_sum(p);
  RegRowVec<R, W> l1;
#pragma unroll
  for (int mt = 0; mt < l1.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) l1.v[mt][h] = fmaf(l0.v[mt][h], c.v[mt][h], s.v[mt][h]);
  return l1;
}

// tile op `rescale %a, %c`: a[r][c] *= f[r], in place.
template <int R, int C, int W>
__device__ __forceinline__ void rescale(RegTileF32<R, C, W>& t, const RegRowVec<R, W>& f) {
#pragma unroll
  for (int mt = 0; mt < t.kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < t.kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) t.v[mt][nt][i] *= f.v[mt][i >> 1];
}

// tile op `normalize %acc, %l`: t[r][c] /= l[r], in place; rows with l = 0 (no visible key) -> 0.
template <int R, int C, int W>
__device__ __forceinline__ void normalize(RegTileF32<R, C, W>& t, const RegRowVec<R, W>& l) {
  RegRowVec<R, W> inv;
#pragma unroll
  for (int mt = 0; mt < l.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) inv.v[mt][h] = l.v[mt][h] > 0.f ? 1.f / l.v[mt][h] : 0.f;
  rescale(t, inv);
}

// tile op `lse %m, %l scale F` (named logsumexp: kernels call their lse tensor `lse`): lse[r] = m[r] * F + ln(l[r]) (natural log).
// Convention (flash.attention, tile dialect): a row that sees no key (l = 0) has lse = -inf;
// lse is never NaN. The backward's recompute_probs maps lse = -inf to p = 0.
template <int R, int W>
__device__ __forceinline__ RegRowVec<R, W> logsumexp(const RegRowVec<R, W>& m, const RegRowVec<R, W>& l, float scale) {
  RegRowVec<R, W> out;
#pragma unroll
  for (int mt = 0; mt < m.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      out.v[mt][h] = l.v[mt][h] > 0.f ? fmaf(m.v[mt][h], scale, __logf(l.v[mt][h])) : -INFINITY;
  return out;
}

// tile op `load_rows`: v[r] = src[row0 + r] if row0 + r < limit else 0 (lse, D as row vectors).
template <int R, int W>
__device__ __forceinline__ void load_rows(RegRowVec<R, W>& v, const GlobalVector<float>& src, int row0, int limit) {
#pragma unroll
  for (int mt = 0; mt < v.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + v.row(mt, h);
      v.v[mt][h] = row < limit ? src.base[row * src.stride] : 0.f;
    }
}

// tile op `store_rows`: dst[row0 + r] = v[r] for row0 + r < limit; one lane per quad writes.
// With a multi-column-group layout (block warps > W) every group holds the row: only group 0 writes.
template <int R, int W>
__device__ __forceinline__ void store_rows(const GlobalVector<float>& dst, int row0, int limit, const RegRowVec<R, W>& v) {
  if ((lane_id() & 3) != 0 || warp_id() >= W) return;
#pragma unroll
  for (int mt = 0; mt < v.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + v.row(mt, h);
      if (row < limit) dst.base[row * dst.stride] = v.v[mt][h];
    }
}

}  // namespace device
}  // namespace flashc
