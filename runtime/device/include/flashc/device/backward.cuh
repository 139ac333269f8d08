// Backward primitives (attention gradient recomputing P from the saved lse).
//
// Row form (tile dialect): score tile S[q][k], per-query lse/D are RegRowVec.
// Column form (key-gridded backward computing S^T[k][q] so that P^T and dS^T feed dV and dK
// straight from registers): per-query lse/D are column vectors, staged in shared memory as
// float[BM] and read by column index.
#pragma once
#include "flashc/device/softmax.cuh"

namespace flashc {
namespace device {

// exp(F s - lse) as exp2(s * F log2e - lse log2e); lse = -inf (row saw no key) -> p = 0.
__device__ __forceinline__ float lse_bias_log2(float lse) { return lse == -INFINITY ? INFINITY : lse * kLog2e; }

// tile op `recompute_probs %s, %lse scale F`: t[r][c] = exp(F t[r][c] - lse[r]), in place, computed
// as exp2(t * scale_log2 - lse * log2e) with scale_log2 = F * log2e; 0 where lse[r] = -inf; masked
// s = -inf give 0.
template <int R, int C, int W>
__device__ __forceinline__ void recompute_probs(RegTileF32<R, C, W>& t, const RegRowVec<R, W>& lse, float scale_log2) {
#pragma unroll
  for (int mt = 0; mt < t.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float bias = lse_bias_log2(lse.v[mt][h]);
#pragma unroll
      for (int nt = 0; nt < t.kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          t.v[mt][nt][2 * h + e] = fast_exp2(fmaf(t.v[mt][nt][2 * h + e], scale_log2, -bias));
    }
}

// Column form: t[r][c] = exp(F t[r][c] - lse[c]) with lse a float[C] in shared memory
// (scale_log2 = F * log2e).
template <int R, int C, int W>
__device__ __forceinline__ void recompute_probs_cols(RegTileF32<R, C, W>& t, const float* lse, float scale_log2) {
#pragma unroll
  for (int nt = 0; nt < t.kNT; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float bias = lse_bias_log2(lse[t.col(nt, e)]);
#pragma unroll
      for (int mt = 0; mt < t.kMT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          t.v[mt][nt][2 * h + e] = fast_exp2(fmaf(t.v[mt][nt][2 * h + e], scale_log2, -bias));
    }
}

// The same with the bias precomputed: t[r][c] = exp2(t[r][c] * scale_log2 - lse_log2[c]), lse_log2[c] = lse[c] ·
// log2e, or +inf for a column with no probability (lse_bias_log2; the warp-specialised backward's producer writes
// it): one FFMA and one exponential an element, each thread's two adjacent columns one 8-byte load (lse_log2 is
// 8-byte aligned: the slots are).
template <int R, int C, int W>
__device__ __forceinline__ void recompute_probs_cols_log2(RegTileF32<R, C, W>& t, const float* lse_log2,
                                                          float scale_log2) {
#pragma unroll
  for (int nt = 0; nt < t.kNT; ++nt) {
    const float2 bias = *reinterpret_cast<const float2*>(lse_log2 + t.col(nt, 0));  // columns 2t, 2t + 1
#pragma unroll
    for (int mt = 0; mt < t.kMT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        t.v[mt][nt][2 * h] = fast_exp2(fmaf(t.v[mt][nt][2 * h], scale_log2, -bias.x));
        t.v[mt][nt][2 * h + 1] = fast_exp2(fmaf(t.v[mt][nt][2 * h + 1], scale_log2, -bias.y));
      }
  }
}

// tile op `softmax_grad %p, %dp, %d`: dp[r][c] := p[r][c] * (dp[r][c] - d[r]), in place in dp.
template <int R, int C, int W>
__device__ __forceinline__ void softmax_grad(RegTileF32<R, C, W>& dp, const RegTileF32<R, C, W>& p,
                                             const RegRowVec<R, W>& d) {
#pragma unroll
  for (int mt = 0; mt < dp.kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < dp.kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) dp.v[mt][nt][i] = p.v[mt][nt][i] * (dp.v[mt][nt][i] - d.v[mt][i >> 1]);
}

// Column form: dp[r][c] := p[r][c] * (dp_scale · dp[r][c] - d[c]), d a float[C] in shared memory (dp_scale · D
// where the caller folds a factor into dS: the FFMA costs what the subtraction did).
template <int R, int C, int W>
__device__ __forceinline__ void softmax_grad_cols(RegTileF32<R, C, W>& dp, const RegTileF32<R, C, W>& p,
                                                  const float* d, float dp_scale = 1.f) {
#pragma unroll
  for (int nt = 0; nt < dp.kNT; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float dc = d[dp.col(nt, e)];
#pragma unroll
      for (int mt = 0; mt < dp.kMT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int i = 2 * h + e;
          dp.v[mt][nt][i] = p.v[mt][nt][i] * fmaf(dp.v[mt][nt][i], dp_scale, -dc);
        }
    }
}

// tile op `mul` (elementwise t *= g; chain rule through softcap with g = 1 - tanh^2).
template <int R, int C, int W>
__device__ __forceinline__ void multiply(RegTileF32<R, C, W>& t, const RegTileF32<R, C, W>& g) {
#pragma unroll
  for (int mt = 0; mt < t.kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < t.kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) t.v[mt][nt][i] *= g.v[mt][nt][i];
}

// dst[0..3] += {a0, a1, a2, a3}: one 16-byte reduction (sm_90+; four scalar ones before). dst 16-byte aligned.
__device__ __forceinline__ void red_add_v4(float* dst, float a0, float a1, float a2, float a3) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst), "f"(a0), "f"(a1), "f"(a2), "f"(a3)
               : "memory");
#else
  atomicAdd(dst, a0), atomicAdd(dst + 1, a1);
  atomicAdd(dst + 2, a2), atomicAdd(dst + 3, a3);
#endif
}

// tile op `atomic_add %x, %t[..] limit [rl, cl]`: dst[row0 + r][c] += x[r][c] for row0 + r < dst.rows
// and c < dst.cols (columns: the caller passes a full-width tile or a columns_from() slice); cols even
// (kWide: a multiple of 4) unless kExact, which reduces element by element where the width ends
// inside a vector. Vector reductions need rows 8 (kWide: 16) bytes aligned: row strides multiples of 4. Order across blocks is
// not deterministic.
//   kWide = false: 8-byte reductions (red.global.add.v2.f32), the C-fragment pairs as they are.
//   kWide = true : lanes 2t and 2t+1 swap halves with one shuffle pair so that each lane holds 4
//                  consecutive columns of one row, then 16-byte reductions (red.global.add.v4.f32):
//                  half the reduction instructions for the same bytes.
template <bool kWide = false, bool kExact = false, int R, int C, int W>
__device__ __forceinline__ void atomic_add(const GlobalMatrix<float>& dst, int row0, const RegTileF32<R, C, W>& t) {
  if constexpr (!kWide) {
#pragma unroll
    for (int mt = 0; mt < t.kMT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row0 + t.row(mt, h);
        if (row < dst.rows) {
          float* base = dst.base + row * dst.row_stride;
#pragma unroll
          for (int nt = 0; nt < t.kNT; ++nt) {
            const int c = t.col(nt, 0);
            if (c >= dst.cols) continue;  // column limit
            if (kExact && c + 1 == dst.cols) {  // a width that ends inside the pair (odd FFN widths)
              atomicAdd(base + c, t.v[mt][nt][2 * h]);
              continue;
            }
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
            asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(base + c), "f"(t.v[mt][nt][2 * h]),
                         "f"(t.v[mt][nt][2 * h + 1])
                         : "memory");
#else  // vector reductions are sm_90+; two scalar reductions before that
            atomicAdd(base + c, t.v[mt][nt][2 * h]);
            atomicAdd(base + c + 1, t.v[mt][nt][2 * h + 1]);
#endif
          }
        }
      }
  } else {
    // Even lane (t = 0, 2) keeps row g and takes its partner's row-g pair (cols +2, +3);
    // odd lane keeps row g + 8 and takes the partner's row-(g+8) pair (cols -2, -1).
    const bool odd = (lane_id() & 1) != 0;
    const int h = odd ? 1 : 0;
#pragma unroll
    for (int mt = 0; mt < t.kMT; ++mt) {
      const int row = row0 + t.row(mt, h);
      float* base = dst.base + row * dst.row_stride;
#pragma unroll
      for (int nt = 0; nt < t.kNT; ++nt) {
        // what this lane gives away: even gives its row g+8 pair, odd gives its row g pair
        const float give0 = odd ? t.v[mt][nt][0] : t.v[mt][nt][2];
        const float give1 = odd ? t.v[mt][nt][1] : t.v[mt][nt][3];
        const float got0 = __shfl_xor_sync(0xffffffffu, give0, 1);
        const float got1 = __shfl_xor_sync(0xffffffffu, give1, 1);
        const float keep0 = odd ? t.v[mt][nt][2] : t.v[mt][nt][0];
        const float keep1 = odd ? t.v[mt][nt][3] : t.v[mt][nt][1];
        // 4 consecutive columns starting at the even lane's column
        const float a0 = odd ? got0 : keep0, a1 = odd ? got1 : keep1;
        const float a2 = odd ? keep0 : got0, a3 = odd ? keep1 : got1;
        const int col = t.col(nt, 0) & ~3;
        if (kExact && row < dst.rows && col < dst.cols && col + 3 >= dst.cols) {  // the width ends inside the four
          const float a[4] = {a0, a1, a2, a3};
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (col + e < dst.cols) atomicAdd(base + col + e, a[e]);
        } else if (row < dst.rows && col < dst.cols) {
          red_add_v4(base + col, a0, a1, a2, a3);
        }
      }
    }
  }
}

// dst[row0 + r][c] += t[r][c] as 16-byte reductions that cover 64 contiguous bytes of a row per quad:
// lanes t and t^1 trade one pair so that, for slabs 2p and 2p + 1 of row g (then of row g + 8), lane
// 0 holds slab 2p cols 0-3, lane 2 slab 2p cols 4-7, lane 1 slab 2p + 1 cols 0-3, lane 3 slab 2p + 1
// cols 4-7. The L2 takes a reduction request per contiguous segment (Nsight Compute: one sector a
// request with the 8-byte form), so 64-byte segments halve the requests for the same bytes. Rows
// past dst.rows skipped; dst.cols a multiple of 4 (a 4-column group is all in or all out); rows 16-byte
// aligned.
template <int R, int C, int W>
__device__ __forceinline__ void atomic_add_row_segments(const GlobalMatrix<float>& dst, int row0,
                                                        const RegTileF32<R, C, W>& t) {
  static_assert(C % 16 == 0, "atomic_add_row_segments: whole pairs of 8-column slabs");
  const int lane = lane_id();
  const bool odd = (lane & 1) != 0;
  const int col_in_pair = 4 * ((lane & 3) >> 1);  // 0 for lanes 0, 1; 4 for lanes 2, 3
#pragma unroll
  for (int mt = 0; mt < t.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + t.row(mt, h);
      float* base = dst.base + row * dst.row_stride;
#pragma unroll
      for (int p = 0; p < t.kNT / 2; ++p) {
        // Even lanes keep slab 2p and give their slab 2p + 1 pair; odd lanes the reverse (selects, not
        // a computed index: the fragment stays in registers).
        const float lo0 = t.v[mt][2 * p][2 * h], lo1 = t.v[mt][2 * p][2 * h + 1];
        const float hi0 = t.v[mt][2 * p + 1][2 * h], hi1 = t.v[mt][2 * p + 1][2 * h + 1];
        const float mine0 = odd ? hi0 : lo0, mine1 = odd ? hi1 : lo1;
        const float got0 = __shfl_xor_sync(0xffffffffu, odd ? lo0 : hi0, 1);
        const float got1 = __shfl_xor_sync(0xffffffffu, odd ? lo1 : hi1, 1);
        // The even lane's pair is the lower two columns of the four, the odd lane's the upper two.
        const float a0 = odd ? got0 : mine0, a1 = odd ? got1 : mine1;
        const float a2 = odd ? mine0 : got0, a3 = odd ? mine1 : got1;
        const int col = (2 * p + (odd ? 1 : 0)) * 8 + col_in_pair;
        if (row < dst.rows && col < dst.cols) {
          red_add_v4(base + col, a0, a1, a2, a3);
        }
      }
    }
}

// tile op `row_dot %a, %b` on two shared tiles: d[r] = sum_c a[r][c] * b[r][c] in f32, as a
// register row vector of the usual layout (each quad reduces its two rows; 16-byte reads).
template <int W, class T, int R, int C>
__device__ __forceinline__ RegRowVec<R, W> row_dot(SmemTile<T, R, C> a, SmemTile<T, R, C> b) {
  RegRowVec<R, W> d;
  constexpr int kChunks = SmemTile<T, R, C>::kChunksPerRow;
  const int t = lane_id() & 3;
#pragma unroll
  for (int mt = 0; mt < d.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = d.row(mt, h);
      float acc = 0.f;
#pragma unroll
      for (int c = t; c < kChunks; c += 4) {
        const uint4 va = *reinterpret_cast<const uint4*>(a.ptr(row, c));
        const uint4 vb = *reinterpret_cast<const uint4*>(b.ptr(row, c));
        const unsigned wa[4] = {va.x, va.y, va.z, va.w}, wb[4] = {vb.x, vb.y, vb.z, vb.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float2 fa = ElemTraits<T>::unpack(wa[i]), fb = ElemTraits<T>::unpack(wb[i]);
          acc = fmaf(fa.x, fb.x, fmaf(fa.y, fb.y, acc));
        }
      }
      d.v[mt][h] = quad_sum(acc);
    }
  return d;
}

}  // namespace device
}  // namespace flashc
