// Routing of a mixture-of-experts layer (flash.moe) around the grouped expert GEMMs (gemm_ws.cuh, kGrouped):
//   1. moe_select: a warp a token reads its router logits [T, E] (E <= 256), scores them (softmax or sigmoid, f32),
//      takes the top k by logit (the scores' order; ties to the lower expert, as a stable sort), weights them
//      (renormalized: divided by their sum), and claims a row of each chosen expert: ranks[t, s] = the entry's
//      place among its expert's rows (an atomic count: rows of an expert in any order; each row's products do not
//      depend on its place).
//   2. moe_plan: one block scans the counts into each expert's first row, every expert's rows padded to 128
//      (kMoeGroupRows, the grouped GEMM's row blocks), and writes the grouped GEMM's row-block table: blocks in use,
//      then each block's expert.
//   3. moe_permute: a warp a routed row copies token t's x row to its expert's row; the padding rows are zeroed
//      (the backward's weight gradients read them).
//   4. moe_combine: a warp a token sums its k expert rows times their weights in f32.
// The backward (the same workspaces, saved by the forward):
//   moe_scatter_grad: a warp a routed row: d(expert row) = weight x dy[t], d(weight) = dy[t] . (expert row);
//     padding rows zeroed. moe_activation_grad: dg (and du) of the experts' h = act(g) (u) from dh. moe_select_grad: a
//     warp a token: d(logits) from d(weights) through the renormalisation and the softmax / sigmoid (the choice
//     held fixed). moe_combine with unit weights sums a token's k rows of dx (the compiled backward adds the router's
//     part by a GEMM after it; the lab passes it as the addend).
// Workspaces (int32 unless named): counts [E] (zeroed before moe_select), ids [T, k], weights [T, k] f32, ranks
// [T, k], offsets [E + 1] (padded), groups [1 + capacity / 128], with capacity = moe_padded_capacity(T k, E).
#pragma once
#include "flashc/device/activation.cuh"
#include "flashc/device/moe_layout.h"
#include "flashc/device/types.cuh"

namespace flashc {
namespace device {

constexpr int kMoeMaxExperts = 256;

enum class MoeGating { Softmax, Sigmoid };

// Launch: a warp a token (grid (ceil(T / warps a block)), any multiple of 32 threads). logits row t at
// logits + t * logits_stride.
template <MoeGating kGating, bool kRenormalize, class Elem>
__device__ __forceinline__ void moe_select(const Elem* logits, long long logits_stride, int tokens, int experts,
                                           int top_k, int* counts, int* ids, float* weights, int* ranks) {
  constexpr int kPerLane = kMoeMaxExperts / 32;
  const int lane = threadIdx.x % 32;
  const int t = static_cast<int>((blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32);
  if (t >= tokens) return;
  // Lane l holds experts l, l + 32, ...: their logits, and their scores (-inf where there is no expert).
  float logit[kPerLane], score[kPerLane];
  unsigned available = 0;  // bit j: expert lane + 32 j exists and is not taken
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int e = lane + 32 * j;
    logit[j] = e < experts ? to_float(logits[t * logits_stride + e]) : -INFINITY;
    score[j] = logit[j];
    if (e < experts) available |= 1u << j;
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
  // k rounds of a warp arg-max over the logits (the scores' order, which f32 sigmoids past a logit of ~17 and
  // softmaxes of far-apart logits lose to ties), the lower expert on equal logits; the winner's lane retires it.
  float chosen_sum = 0.f, my_weight = 0.f;
  int my_expert = -1;  // lane s keeps slot s's expert and weight (top_k <= 32)
  constexpr int kNone = 0x7fffffff;
  for (int s = 0; s < top_k; ++s) {
    float best = -INFINITY, best_score = 0.f;
    int best_e = kNone;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j)  // j ascending: the lower expert on ties
      if ((available >> j & 1u) && (best_e == kNone || logit[j] > best))
        best = logit[j], best_score = score[j], best_e = lane + 32 * j;
    for (int o = 16; o > 0; o >>= 1) {
      const float b = __shfl_xor_sync(0xffffffffu, best, o), bs = __shfl_xor_sync(0xffffffffu, best_score, o);
      const int be = __shfl_xor_sync(0xffffffffu, best_e, o);
      if (be != kNone && (best_e == kNone || b > best || (b == best && be < best_e)))
        best = b, best_score = bs, best_e = be;
    }
    if (best_e % 32 == lane) available &= ~(1u << (best_e / 32));
    chosen_sum += best_score;
    if (lane == s) my_expert = best_e, my_weight = best_score;
  }
  if (lane < top_k) {
    const long long i = static_cast<long long>(t) * top_k + lane;
    ids[i] = my_expert;
    weights[i] = kRenormalize ? my_weight / chosen_sum : my_weight;
    ranks[i] = atomicAdd(&counts[my_expert], 1);
  }
}

// Launch: one block of 1024 threads (experts <= 1024). offsets [E + 1]: expert e's first row in the padded layout;
// groups [1 + capacity / 128]: the row blocks in use, then each block's expert. saved_counts (a training forward's,
// or null): a copy of the counts for the backward (the counts' own buffer is the program's zeroed scratch).
__device__ __forceinline__ void moe_plan(const int* counts, int experts, int* offsets, int* groups,
                                         int* saved_counts = nullptr) {
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
    if (saved_counts) saved_counts[e] = counts[e];
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

// Padding row p % 127 of expert p / 127 (if the expert has it) of a permuted [capacity, cols] tensor: zeros.
template <class Elem>
__device__ __forceinline__ void moe_zero_padding_row(Elem* permuted, int cols, long long p, int experts,
                                                     const int* counts, const int* offsets, int lane) {
  const int e = static_cast<int>(p / (kMoeGroupRows - 1)), j = static_cast<int>(p % (kMoeGroupRows - 1));
  if (e >= experts) return;
  const int row = offsets[e] + counts[e] + j;
  if (row < offsets[e + 1]) moe_copy_row<Elem>(permuted + static_cast<long long>(row) * cols, nullptr, cols, lane);
}

// Launch: any grid of whole warps (a warp a row, looping over the grid): the routed rows, then every expert's padding
// rows (routed_rows + experts * 127 in all). x [T, d] rows x_stride apart, permuted [capacity, d] (contiguous); d a
// multiple of 8.
template <class Elem>
__device__ __forceinline__ void moe_permute(const Elem* x, long long x_stride, int tokens, int d, int top_k,
                                            int experts, const int* counts, const int* ids, const int* ranks,
                                            const int* offsets, Elem* permuted) {
  const int lane = threadIdx.x % 32;
  const long long routed = static_cast<long long>(tokens) * top_k;
  const long long total = routed + static_cast<long long>(experts) * (kMoeGroupRows - 1);
  const long long warps = static_cast<long long>(gridDim.x) * blockDim.x / 32;
  for (long long w = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32; w < total; w += warps) {
    if (w < routed) {
      const int e = ids[w];
      moe_copy_row(permuted + static_cast<long long>(offsets[e] + ranks[w]) * d, x + (w / top_k) * x_stride, d,
                   lane);
    } else {
      moe_zero_padding_row(permuted, d, w - routed, experts, counts, offsets, lane);
    }
  }
}

// Launch: a warp a token. y [T, d_out] (rows y_stride apart) = addend (if given, [T, d_out] as y) + the sum over the
// token's k slots of weight (1 without weights) x its expert row of expert_out [capacity, d_out] (contiguous); d_out a
// multiple of 8. (The backward's dx: unit weights, the router's part as the addend.)
template <class Elem>
__device__ __forceinline__ void moe_combine(const Elem* expert_out, int tokens, int d_out, int top_k, const int* ids,
                                            const float* weights, const int* ranks, const int* offsets, Elem* y,
                                            long long y_stride, const Elem* addend = nullptr) {
  const int lane = threadIdx.x % 32;
  const int t = static_cast<int>((blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32);
  if (t >= tokens) return;
  for (int c = 8 * lane; c < d_out; c += 8 * 32) {
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (addend) {
      const uint4 v = *reinterpret_cast<const uint4*>(addend + static_cast<long long>(t) * y_stride + c);
      const unsigned parts[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float2 f = ElemTraits<Elem>::unpack(parts[q]);
        acc[2 * q] = f.x;
        acc[2 * q + 1] = f.y;
      }
    }
    for (int s = 0; s < top_k; ++s) {
      const long long i = static_cast<long long>(t) * top_k + s;
      const float w = weights ? weights[i] : 1.f;
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

// Launch: any grid of whole warps (a grid-stride loop: a warp a routed row, then the padding rows). d_expert_out
// [capacity, d_out] (contiguous): row (t, s) = weights[t, s] x dy[t] (rows dy_stride apart), padding rows zero;
// d_weights[t, s] = dy[t] . expert_out row (f32).
template <class Elem>
__device__ __forceinline__ void moe_scatter_grad(const Elem* dy, long long dy_stride, const Elem* expert_out,
                                                 int tokens, int d_out, int top_k, int experts, const int* counts,
                                                 const int* ids, const float* weights, const int* ranks,
                                                 const int* offsets, Elem* d_expert_out, float* d_weights) {
  const int lane = threadIdx.x % 32;
  const long long routed = static_cast<long long>(tokens) * top_k;
  const long long total = routed + static_cast<long long>(experts) * (kMoeGroupRows - 1);
  const long long warps = static_cast<long long>(gridDim.x) * blockDim.x / 32;
  for (long long w = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32; w < total; w += warps) {
    if (w >= routed) {
      moe_zero_padding_row(d_expert_out, d_out, w - routed, experts, counts, offsets, lane);
      continue;
    }
    const long long row = offsets[ids[w]] + ranks[w];
    const Elem* g = dy + (w / top_k) * dy_stride;
    const Elem* o = expert_out + row * d_out;
    Elem* out = d_expert_out + row * d_out;
    const float weight = weights[w];
    float dot = 0.f;
    for (int c = 8 * lane; c < d_out; c += 8 * 32) {
      const uint4 gv = *reinterpret_cast<const uint4*>(g + c), ov = *reinterpret_cast<const uint4*>(o + c);
      const unsigned gp[4] = {gv.x, gv.y, gv.z, gv.w}, op[4] = {ov.x, ov.y, ov.z, ov.w};
      unsigned res[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float2 gf = ElemTraits<Elem>::unpack(gp[q]), of = ElemTraits<Elem>::unpack(op[q]);
        dot = fmaf(gf.x, of.x, fmaf(gf.y, of.y, dot));
        res[q] = ElemTraits<Elem>::pack(weight * gf.x, weight * gf.y);
      }
      *reinterpret_cast<uint4*>(out + c) = make_uint4(res[0], res[1], res[2], res[3]);
    }
    for (int o2 = 16; o2 > 0; o2 >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o2);
    if (lane == 0) d_weights[w] = dot;
  }
}

// Grid-stride over the rows in use (offsets[experts]) x h / 8 chunks (any grid, any block): the experts' activation
// backward from dh [capacity, h]. Gated (h = act(g) u): dg = dh u act'(g), du = dh act(g); plain (h = act(g), u and
// du unused): dg = dh act'(g). Padding rows hold g = u = 0 (the permuted padding rows are zero) and dh = 0 there.
template <Act kAct, bool kGated, class Elem>
__device__ __forceinline__ void moe_activation_grad(const Elem* g, const Elem* u, const Elem* dh, int h, int experts,
                                                    const int* offsets, Elem* dg, Elem* du) {
  const long long chunks = static_cast<long long>(offsets[experts]) * (h / 8);
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < chunks;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long at = i * 8;
    const uint4 gv = *reinterpret_cast<const uint4*>(g + at), hv = *reinterpret_cast<const uint4*>(dh + at);
    const uint4 uv = kGated ? *reinterpret_cast<const uint4*>(u + at) : gv;
    const unsigned gp[4] = {gv.x, gv.y, gv.z, gv.w}, up[4] = {uv.x, uv.y, uv.z, uv.w}, hp[4] = {hv.x, hv.y, hv.z, hv.w};
    unsigned rg[4], ru[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float2 gf = ElemTraits<Elem>::unpack(gp[q]), uf = ElemTraits<Elem>::unpack(up[q]),
                   hf = ElemTraits<Elem>::unpack(hp[q]);
      if constexpr (kGated) {
        rg[q] = ElemTraits<Elem>::pack(hf.x * uf.x * act_grad<kAct, true>(gf.x), hf.y * uf.y * act_grad<kAct, true>(gf.y));
        ru[q] = ElemTraits<Elem>::pack(hf.x * act<kAct, true>(gf.x), hf.y * act<kAct, true>(gf.y));
      } else {
        rg[q] = ElemTraits<Elem>::pack(hf.x * act_grad<kAct, true>(gf.x), hf.y * act_grad<kAct, true>(gf.y));
      }
    }
    *reinterpret_cast<uint4*>(dg + at) = make_uint4(rg[0], rg[1], rg[2], rg[3]);
    if constexpr (kGated) *reinterpret_cast<uint4*>(du + at) = make_uint4(ru[0], ru[1], ru[2], ru[3]);
  }
}

// Launch: a warp a token. d_logits [T, E] (contiguous) of the router logits [T, E] from d_weights [T, k] (f32), the
// choice ids and the forward's weights held fixed: softmax d_l = p (g - p . g) with g the d_weights at the chosen
// experts (renormalised: over the chosen ones only, d_l = w (dw - w . dw) there, 0 elsewhere); sigmoid d_l = dσ σ (1 - σ)
// at the chosen ones, dσ = dw (renormalised: (dw - w . dw) / sum σ).
template <MoeGating kGating, bool kRenormalize, class Elem>
__device__ __forceinline__ void moe_select_grad(const Elem* logits, int tokens, int experts, int top_k, const int* ids,
                                                const float* weights, const float* d_weights, Elem* d_logits) {
  const int lane = threadIdx.x % 32;
  const int t = static_cast<int>((blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32);
  if (t >= tokens) return;
  const long long base = static_cast<long long>(t) * top_k;
  // w . dw over the chosen experts (lane s holds slot s).
  const float w_s = lane < top_k ? weights[base + lane] : 0.f, dw_s = lane < top_k ? d_weights[base + lane] : 0.f;
  const int e_s = lane < top_k ? ids[base + lane] : 0;
  float w_dot = w_s * dw_s;
  for (int o = 16; o > 0; o >>= 1) w_dot += __shfl_xor_sync(0xffffffffu, w_dot, o);
  const Elem* row = logits + static_cast<long long>(t) * experts;
  // Softmax without renormalisation: every expert's probability.
  float m = -INFINITY, sum = 0.f;
  if constexpr (kGating == MoeGating::Softmax && !kRenormalize) {
    for (int e = lane; e < experts; e += 32) m = fmaxf(m, to_float(row[e]));
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    for (int e = lane; e < experts; e += 32) sum += __expf(to_float(row[e]) - m);
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  }
  // Sigmoid renormalised: sum of the chosen σ (the weights are σ / that sum).
  float sigma_sum = 0.f;
  if constexpr (kGating == MoeGating::Sigmoid && kRenormalize) {
    float sg = lane < top_k ? 1.f / (1.f + __expf(-to_float(row[e_s]))) : 0.f;
    for (int o = 16; o > 0; o >>= 1) sg += __shfl_xor_sync(0xffffffffu, sg, o);
    sigma_sum = sg;
  }
  for (int e = lane; e < experts; e += 32) {
    // This expert's slot (if chosen): d_weights and weight.
    float dw = 0.f, w = 0.f;
    bool chosen = false;
    for (int s = 0; s < top_k; ++s)
      if (ids[base + s] == e) chosen = true, dw = d_weights[base + s], w = weights[base + s];
    const float l = to_float(row[e]);
    float grad = 0.f;
    if constexpr (kGating == MoeGating::Softmax) {
      if constexpr (kRenormalize)
        grad = chosen ? w * (dw - w_dot) : 0.f;
      else
        grad = __expf(l - m) / sum * (dw - w_dot);  // p (g - p . g): the chosen weights are their p
    } else {
      const float sg = 1.f / (1.f + __expf(-l));
      const float d_sigma = kRenormalize ? (dw - w_dot) / sigma_sum : dw;
      // σ' = σ(l) σ(-l): 1 - σ(l) cancels to 0 in f32 past l ~ 17, where σ(-l) is still e^-l.
      grad = chosen ? d_sigma * sg * (1.f / (1.f + __expf(l))) : 0.f;
    }
    d_logits[static_cast<long long>(t) * experts + e] = from_float<Elem>(grad);
  }
}

}  // namespace device
}  // namespace flashc
