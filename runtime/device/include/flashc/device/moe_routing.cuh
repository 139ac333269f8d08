// Routing of a mixture-of-experts layer (flash.moe) around the grouped expert GEMMs (gemm_ws.cuh, kGrouped):
//   1. moe_select: a warp a token reads its router logits [T, E] (E <= 256), scores them (softmax or sigmoid, f32),
//      takes the top k (ties to the lower expert, as a stable sort), weights them (renormalized: divided by their
//      sum), and claims a row of each chosen expert: ranks[t, s] = the entry's place among its expert's rows
//      (an atomic count: rows of an expert in any order; each row's products do not depend on its place).
//   2. moe_plan: one block scans the counts into each expert's first row, every expert's rows padded to 128
//      (kMoeGroupRows, the grouped GEMM's row blocks), and writes the grouped GEMM's row-block table: blocks in use,
//      then each block's expert.
//   3. moe_permute: a warp a routed row copies token t's x row to its expert's row; the padding rows are zeroed
//      (the backward's weight gradients read them).
//   4. moe_combine: a warp a token sums its k expert rows times their weights in f32.
// Workspaces (int32 unless named): counts [E] (zeroed before moe_select), ids [T, k], weights [T, k] f32, ranks
// [T, k], offsets [E + 1] (padded), groups [1 + capacity / 128], with capacity = moe_padded_capacity(T k, E).
#pragma once
#include "flashc/device/types.cuh"

namespace flashc {
namespace device {

constexpr int kMoeGroupRows = 128;
constexpr int kMoeMaxExperts = 256;

enum class MoeGating { Softmax, Sigmoid };

// Rows the permuted layout needs at most: every expert's rows rounded up to 128.
__host__ __device__ constexpr long long moe_padded_capacity(long long routed_rows, int experts) {
  return (routed_rows + static_cast<long long>(experts) * (kMoeGroupRows - 1)) / kMoeGroupRows * kMoeGroupRows;
}

// Launch: a warp a token (grid (ceil(T / warps a block)), any multiple of 32 threads). logits row t at
// logits + t * logits_stride.
template <MoeGating kGating, bool kRenormalize, class Elem>
__device__ __forceinline__ void moe_select(const Elem* logits, long long logits_stride, int tokens, int experts,
                                           int top_k, int* counts, int* ids, float* weights, int* ranks) {
  constexpr int kPerLane = kMoeMaxExperts / 32;
  const int lane = threadIdx.x % 32;
  const int t = static_cast<int>((blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32);
  if (t >= tokens) return;
  // Lane l holds experts l, l + 32, ...: scores, -inf where there is no expert (or it is taken).
  float score[kPerLane];
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int e = lane + 32 * j;
    score[j] = e < experts ? to_float(logits[t * logits_stride + e]) : -INFINITY;
  }
  if constexpr (kGating == MoeGating::Softmax) {
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) m = fmaxf(m, score[j]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      score[j] = score[j] == -INFINITY ? 0.f : __expf(score[j] - m);
      sum += score[j];
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) score[j] = lane + 32 * j < experts ? score[j] / sum : -INFINITY;
  } else {
#pragma unroll
    for (int j = 0; j < kPerLane; ++j)
      if (score[j] != -INFINITY) score[j] = 1.f / (1.f + __expf(-score[j]));
  }
  // k rounds of a warp arg-max (the lower expert on equal scores); the winner's lane retires it.
  float chosen_sum = 0.f, my_weight = 0.f;
  int my_expert = -1;  // lane s keeps slot s's expert and weight (top_k <= 32)
  for (int s = 0; s < top_k; ++s) {
    float best = -INFINITY;
    int best_e = 0x7fffffff;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j)
      if (score[j] > best) best = score[j], best_e = lane + 32 * j;  // j ascending: the lower expert on ties
    for (int o = 16; o > 0; o >>= 1) {
      const float b = __shfl_xor_sync(0xffffffffu, best, o);
      const int be = __shfl_xor_sync(0xffffffffu, best_e, o);
      if (b > best || (b == best && be < best_e)) best = b, best_e = be;
    }
    if (best_e % 32 == lane) {
#pragma unroll
      for (int j = 0; j < kPerLane; ++j)
        if (lane + 32 * j == best_e) score[j] = -INFINITY;
    }
    chosen_sum += best;
    if (lane == s) my_expert = best_e, my_weight = best;
  }
  if (lane < top_k) {
    const long long i = static_cast<long long>(t) * top_k + lane;
    ids[i] = my_expert;
    weights[i] = kRenormalize ? my_weight / chosen_sum : my_weight;
    ranks[i] = atomicAdd(&counts[my_expert], 1);
  }
}

// Launch: one block of 1024 threads (experts <= 1024). offsets [E + 1]: expert e's first row in the padded layout;
// groups [1 + capacity / 128]: the row blocks in use, then each block's expert.
__device__ __forceinline__ void moe_plan(const int* counts, int experts, int* offsets, int* groups) {
  __shared__ int warp_sums[32];
  const int e = threadIdx.x, lane = e % 32, warp = e / 32;
  const int blocks = e < experts ? (counts[e] + kMoeGroupRows - 1) / kMoeGroupRows : 0;
  // Inclusive scan of the blocks: within the warp, then over the warps' sums.
  int scan = blocks;
  for (int o = 1; o < 32; o <<= 1) {
    const int v = __shfl_up_sync(0xffffffffu, scan, o);
    if (lane >= o) scan += v;
  }
  if (lane == 31) warp_sums[warp] = scan;
  __syncthreads();
  if (warp == 0) {
    int s = lane < static_cast<int>(blockDim.x / 32) ? warp_sums[lane] : 0;
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, s, o);
      if (lane >= o) s += v;
    }
    warp_sums[lane] = s;
  }
  __syncthreads();
  const int first_block = scan - blocks + (warp > 0 ? warp_sums[warp - 1] : 0);
  if (e < experts) {
    offsets[e] = first_block * kMoeGroupRows;
    for (int b = 0; b < blocks; ++b) groups[1 + first_block + b] = e;
    if (e == experts - 1) {
      offsets[experts] = (first_block + blocks) * kMoeGroupRows;
      groups[0] = first_block + blocks;
    }
  }
}

// 16-byte chunks of a row of `cols` 16-bit elements (cols a multiple of 8), lanes striding.
template <class Elem>
__device__ __forceinline__ void moe_copy_row(Elem* dst, const Elem* src, int cols, int lane) {
  for (int c = 8 * lane; c < cols; c += 8 * 32)
    *reinterpret_cast<uint4*>(dst + c) = src ? *reinterpret_cast<const uint4*>(src + c) : make_uint4(0, 0, 0, 0);
}

// Launch: a warp a row, routed_rows + experts * 127 warps (the routed rows, then every expert's padding rows).
// x [T, d] rows x_stride apart, permuted [capacity, d] (contiguous); d a multiple of 8.
template <class Elem>
__device__ __forceinline__ void moe_permute(const Elem* x, long long x_stride, int tokens, int d, int top_k,
                                            int experts, const int* counts, const int* ids, const int* ranks,
                                            const int* offsets, Elem* permuted) {
  const int lane = threadIdx.x % 32;
  const long long w = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32;
  const long long routed = static_cast<long long>(tokens) * top_k;
  if (w < routed) {
    const int e = ids[w];
    moe_copy_row(permuted + static_cast<long long>(offsets[e] + ranks[w]) * d, x + (w / top_k) * x_stride, d, lane);
    return;
  }
  const long long p = w - routed;  // padding row p % 127 of expert p / 127
  const int e = static_cast<int>(p / (kMoeGroupRows - 1)), j = static_cast<int>(p % (kMoeGroupRows - 1));
  if (e >= experts) return;
  const int row = offsets[e] + counts[e] + j;
  if (row < offsets[e + 1]) moe_copy_row<Elem>(permuted + static_cast<long long>(row) * d, nullptr, d, lane);
}

// Launch: a warp a token. y [T, d_out] (rows y_stride apart) = sum over the token's k slots of weight x its expert
// row of expert_out [capacity, d_out] (contiguous); d_out a multiple of 8.
template <class Elem>
__device__ __forceinline__ void moe_combine(const Elem* expert_out, int tokens, int d_out, int top_k, const int* ids,
                                            const float* weights, const int* ranks, const int* offsets, Elem* y,
                                            long long y_stride) {
  const int lane = threadIdx.x % 32;
  const int t = static_cast<int>((blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32);
  if (t >= tokens) return;
  for (int c = 8 * lane; c < d_out; c += 8 * 32) {
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int s = 0; s < top_k; ++s) {
      const long long i = static_cast<long long>(t) * top_k + s;
      const float w = weights[i];
      const uint4 v = *reinterpret_cast<const uint4*>(expert_out + static_cast<long long>(offsets[ids[i]] + ranks[i]) * d_out + c);
      const unsigned parts[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float2 f = ElemTraits<Elem>::unpack(parts[q]);
        acc[2 * q] = fmaf(w, f.x, acc[2 * q]);
        acc[2 * q + 1] = fmaf(w, f.y, acc[2 * q + 1]);
      }
    }
    uint4 out;
    out.x = ElemTraits<Elem>::pack(acc[0], acc[1]);
    out.y = ElemTraits<Elem>::pack(acc[2], acc[3]);
    out.z = ElemTraits<Elem>::pack(acc[4], acc[5]);
    out.w = ElemTraits<Elem>::pack(acc[6], acc[7]);
    *reinterpret_cast<uint4*>(y + static_cast<long long>(t) * y_stride + c) = out;
  }
}

}  // namespace device
}  // namespace flashc
