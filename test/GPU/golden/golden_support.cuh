// Device helpers that only the hand-written golden kernels use (the kernel lab's backward: its own
// preprocess / postprocess, the deterministic dQ and the bulk-reduce dQ variants). The generated
// kernels never call them, so they live beside the golden kernels, not in the device library.
#pragma once
#include "flashc/device/all.cuh"

namespace flashc {
namespace device {

// tile op `row_dot` straight from global memory (preprocess kernel, no tiles needed):
// out[row] = sum_c a[row][c] * b[row][c] for rows [row0, row0 + nrows) below a.rows.
// One warp per row, 16-byte loads, f32 sums.
template <int kThreads, int Cols, class T>
__device__ __forceinline__ void row_dot_global(const GlobalVector<float>& out, const GlobalMatrix<T>& a,
                                               const GlobalMatrix<T>& b, int row0, int nrows) {
  constexpr int kChunks = Cols / 8;
  for (int r = warp_id(); r < nrows; r += kThreads / 32) {
    const int row = row0 + r;
    if (row >= a.rows) break;
    float acc = 0.f;
    for (int c = lane_id(); c < kChunks; c += 32) {
      const uint4 va = *reinterpret_cast<const uint4*>(a.base + row * a.row_stride + c * 8);
      const uint4 vb = *reinterpret_cast<const uint4*>(b.base + row * b.row_stride + c * 8);
      const unsigned wa[4] = {va.x, va.y, va.z, va.w}, wb[4] = {vb.x, vb.y, vb.z, vb.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 fa = ElemTraits<T>::unpack(wa[i]), fb = ElemTraits<T>::unpack(wb[i]);
        acc = fmaf(fa.x, fb.x, fmaf(fa.y, fb.y, acc));
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane_id() == 0) out.base[row * out.stride] = acc;
  }
}

// Zero (fill) global f32 rows [row0, row0 + nrows) below dst.rows: the dQ accumulator.
template <int kThreads, int Cols>
__device__ __forceinline__ void fill_rows(const GlobalMatrix<float>& dst, int row0, int nrows, float value) {
  constexpr int kVec = Cols / 4;
  const float4 v = make_float4(value, value, value, value);
  for (int idx = threadIdx.x; idx < nrows * kVec; idx += kThreads) {
    const int row = row0 + idx / kVec;
    if (row < dst.rows) *reinterpret_cast<float4*>(dst.base + row * dst.row_stride + (idx % kVec) * 4) = v;
  }
}

// Global f32 rows -> 16-bit rows times a factor (dQ = scale * dQ_accum), rows below dst.rows.
template <int kThreads, int Cols, class T>
__device__ __forceinline__ void convert_rows(const GlobalMatrix<T>& dst, const GlobalMatrix<float>& src, int row0,
                                             int nrows, float factor) {
  constexpr int kVec = Cols / 4;
  for (int idx = threadIdx.x; idx < nrows * kVec; idx += kThreads) {
    const int row = row0 + idx / kVec, c = (idx % kVec) * 4;
    if (row < dst.rows) {
      const float4 f = *reinterpret_cast<const float4*>(src.base + row * src.row_stride + c);
      uint2 w;
      w.x = ElemTraits<T>::pack(f.x * factor, f.y * factor);
      w.y = ElemTraits<T>::pack(f.z * factor, f.w * factor);
      *reinterpret_cast<uint2*>(dst.base + row * dst.row_stride + c) = w;
    }
  }
}

// tile op `load` of a row vector (lse, D) into shared memory: v[i] = src[row0 + i] for
// row0 + i < src.size, else `fill` (lse: +inf so that exp(s - lse) = 0 on padding rows).
template <int kThreads, int N>
__device__ __forceinline__ void load_vector_async(float* dst, const GlobalVector<float>& src,
                                                  int row0, float fill) {
  for (int i = threadIdx.x; i < N; i += kThreads) {
    if (row0 + i < src.size) {
      cp_async_4(smem_u32(dst + i), src.base + (row0 + i) * src.stride);
    } else {
      dst[i] = fill;
    }
  }
}

// tile op `atomic_add` through the bulk engine: dst[row0 + r][0, Cols) += src[r][0, Cols) for
// row0 + r < dst.rows. Threads 0 .. Rows-1 each issue one row and commit a bulk group. Before
// src is rewritten, the same threads call bulk_wait_read<0>() and the block syncs.
template <int Rows, int Cols>
__device__ __forceinline__ void bulk_reduce_add_rows(const GlobalMatrix<float>& dst, int row0, SmemTileF32<Rows, Cols> src) {
  const int r = static_cast<int>(threadIdx.x);
  if (r < Rows) {
    if (row0 + r < dst.rows) {
      float* g = dst.base + (row0 + r) * dst.row_stride;
      asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(g),
                   "r"(smem_u32(src.row(r))), "n"(Cols * 4)
                   : "memory");
    }
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
  }
}

// Wait until at most N of this thread's bulk groups still read their shared source.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

// Wait until all of this thread's bulk groups have completed (writes performed): before exit.
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// Inter-block ordering for deterministic accumulation (the deterministic dQ of the backward):
// blocks that add into the same rows take turns on a per-row-block int counter in global memory.
// A block waits until the counter equals its rank, adds, then passes the turn on. Waits only
// ever target blocks with a smaller rank, which the hardware dispatched earlier: no deadlock.

// Whole block: returns once *counter == turn (thread 0 spins with acquire loads).
__device__ __forceinline__ void wait_turn(const int* counter, int turn) {
  if (threadIdx.x == 0) {
    int seen;
    do {
      asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(seen) : "l"(counter) : "memory");
    } while (seen != turn);
  }
  __syncthreads();
}

// Whole block: after every thread's global writes/reductions, hand the turn to the next rank.
__device__ __forceinline__ void pass_turn(int* counter) {
  __threadfence();  // this thread's reductions are performed before the release below
  __syncthreads();
  if (threadIdx.x == 0) asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(counter) : "memory");
}

}  // namespace device
}  // namespace flashc
