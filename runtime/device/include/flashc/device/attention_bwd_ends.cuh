// The attention backward's two elementwise ends over dense [B, H, S, C] tensors (rows of C contiguous elements,
// 16-byte aligned), one block of 128 threads a 64-row block of one head (grid (ceil(S / 64), H, B)):
//   attention_bwd_preprocess:  delta[b][h][s] = sum_c dO[b][h][s][c] O[b][h][s][c] in f32, and, where the main kernel
//                              adds dQ into dq_accum, its rows zeroed in the same pass (instead of a memset of the whole
//                              accumulator before the program: as long as the two took, one launch fewer);
//   attention_bwd_postprocess: dQ = dq_accum rounded to the element type (the main kernel scaled it).
// Every access is 16 bytes straight between global memory and registers (no shared memory), and every load of a
// block is issued before its first use. Measured at 16k tokens, H = 16, D = 128 (session 34 call 3): preprocess +
// zero fill 69 µs (the tile kernel and the memset: 40 + 30), postprocess 48 µs (the tile kernel: 61).
#pragma once
#include "flashc/device/tensor.cuh"
#include "flashc/device/types.cuh"

namespace flashc {
namespace device {

namespace detail {
// 8 16-bit elements (16 bytes) of a row as floats: one 16-byte load (the widths are whole chunks).
template <class Elem>
__device__ __forceinline__ void load8(const Elem* p, float (&x)[8]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const Elem* e = reinterpret_cast<const Elem*>(&raw);
#pragma unroll
  for (int i = 0; i < 8; ++i) x[i] = to_float(e[i]);
}
}  // namespace detail

// o, dout [B, H, S, kValueCols] (Elem), delta [B, H, S] f32; dq_accum [B, H, S, kHeadCols] f32 or nullptr (not
// zeroed). A row's kValueCols / 8 chunks go to a group of kLanes lanes (the power of two at or above it, at most
// 32), 32 / kLanes rows a warp at a time; every load of the block's rows is issued before the first sum (the widths
// are compile-time: the loops unroll), then each group sums its products by shuffles.
template <class Elem, int kValueCols, int kHeadCols>
__device__ __forceinline__ void attention_bwd_preprocess(const TensorArg& o, const TensorArg& dout,
                                                         const TensorArg& delta, const TensorArg* dq_accum) {
  // (16-bit head dims are multiples of 8, the compiler's limit: whole 16-byte chunks, whole float4s of dq_accum)
  static_assert(kValueCols % 8 == 0 && kHeadCols % 8 == 0, "attention_bwd_preprocess: widths a multiple of 8");
  constexpr int kChunks = kValueCols / 8;
  constexpr int kLanes = kChunks <= 1 ? 1 : kChunks <= 2 ? 2 : kChunks <= 4 ? 4 : kChunks <= 8 ? 8 : kChunks <= 16 ? 16 : 32;
  constexpr int kRowsAPass = 32 / kLanes, kPasses = (64 + 4 * kRowsAPass - 1) / (4 * kRowsAPass);
  constexpr int kChunksALane = (kChunks + kLanes - 1) / kLanes;
  const int batch = blockIdx.z, head = blockIdx.y, row0 = blockIdx.x * 64;
  const int rows = min(64, static_cast<int>(o.shape[2]) - row0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, chunk0 = lane % kLanes;
  const Elem* o_rows = static_cast<const Elem*>(o.data) + batch * o.stride[0] + head * o.stride[1];
  const Elem* do_rows = static_cast<const Elem*>(dout.data) + batch * dout.stride[0] + head * dout.stride[1];
  float* delta_row = static_cast<float*>(delta.data) + batch * delta.stride[0] + head * delta.stride[1];
  float sum[kPasses];
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
    const int r = (p * 4 + warp) * kRowsAPass + lane / kLanes;
    sum[p] = 0.f;
    if (r < rows) {
#pragma unroll
      for (int k = 0; k < kChunksALane; ++k) {
        const int c = chunk0 + k * kLanes;
        if (c < kChunks) {
          float a[8], b[8];
          detail::load8(o_rows + (row0 + r) * o.stride[2] + c * 8, a);
          detail::load8(do_rows + (row0 + r) * dout.stride[2] + c * 8, b);
#pragma unroll
          for (int i = 0; i < 8; ++i) sum[p] = fmaf(a[i], b[i], sum[p]);
        }
      }
    }
  }
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
    const int r = (p * 4 + warp) * kRowsAPass + lane / kLanes;
#pragma unroll
    for (int offset = kLanes / 2; offset > 0; offset /= 2) sum[p] += __shfl_xor_sync(0xffffffffu, sum[p], offset);
    if (r < rows && chunk0 == 0) delta_row[(row0 + r) * delta.stride[2]] = sum[p];
  }
  if (dq_accum == nullptr) return;
  // The block's rows of dq_accum, kHeadCols / 4 float4 a row, the block's threads across them.
  constexpr int kQuads = kHeadCols / 4;
  float* dq_rows = static_cast<float*>(dq_accum->data) + batch * dq_accum->stride[0] + head * dq_accum->stride[1];
#pragma unroll 4
  for (int i = threadIdx.x; i < 64 * kQuads; i += 128) {
    const int r = i / kQuads, c = i % kQuads;
    if (r < rows)
      *reinterpret_cast<float4*>(dq_rows + (row0 + r) * dq_accum->stride[2] + c * 4) = make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

// dq_accum [B, H, S, kHeadCols] f32 -> dq (Elem): 8 elements a thread a step (two 16-byte loads, one store), the
// block's 64 rows in 64 * kHeadCols / 8 / 128 steps, all loads issued before the first store.
template <class Elem, int kHeadCols>
__device__ __forceinline__ void attention_bwd_postprocess(const TensorArg& dq_accum, const TensorArg& dq) {
  static_assert(kHeadCols % 8 == 0, "attention_bwd_postprocess: a width a multiple of 8");
  constexpr int kChunks = kHeadCols / 8, kSteps = (64 * kChunks + 127) / 128;
  const int batch = blockIdx.z, head = blockIdx.y, row0 = blockIdx.x * 64;
  const int rows = min(64, static_cast<int>(dq.shape[2]) - row0);
  const float* src = static_cast<const float*>(dq_accum.data) + batch * dq_accum.stride[0] + head * dq_accum.stride[1];
  Elem* dst = static_cast<Elem*>(dq.data) + batch * dq.stride[0] + head * dq.stride[1];
  float4 lo[kSteps], hi[kSteps];
#pragma unroll
  for (int t = 0; t < kSteps; ++t) {
    const int i = threadIdx.x + t * 128, r = i / kChunks, c = i % kChunks;
    if (i < 64 * kChunks && r < rows) {
      const float* s = src + (row0 + r) * dq_accum.stride[2] + c * 8;
      lo[t] = *reinterpret_cast<const float4*>(s);
      hi[t] = *reinterpret_cast<const float4*>(s + 4);
    }
  }
#pragma unroll
  for (int t = 0; t < kSteps; ++t) {
    const int i = threadIdx.x + t * 128, r = i / kChunks, c = i % kChunks;
    if (i >= 64 * kChunks || r >= rows) continue;
    uint4 out;
    Elem* e = reinterpret_cast<Elem*>(&out);
    e[0] = from_float<Elem>(lo[t].x), e[1] = from_float<Elem>(lo[t].y), e[2] = from_float<Elem>(lo[t].z),
    e[3] = from_float<Elem>(lo[t].w), e[4] = from_float<Elem>(hi[t].x), e[5] = from_float<Elem>(hi[t].y),
    e[6] = from_float<Elem>(hi[t].z), e[7] = from_float<Elem>(hi[t].w);
    *reinterpret_cast<uint4*>(dst + (row0 + r) * dq.stride[2] + c * 8) = out;
  }
}

}  // namespace device
}  // namespace flashc
