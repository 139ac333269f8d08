// Host launch wrapper for a whole mixture-of-experts forward from the device library, lab only (moe_lab.py): the
// router logits by the ws GEMM, moe_select / moe_plan / moe_permute (moe_routing.cuh), the grouped ws GEMMs (gated
// SiLU up projection, down projection), moe_combine; and its backward (moe_scatter_grad, the grouped GEMMs of dh and
// dx, moe_activation_grad, the grouped-over-K GEMMs of the expert weights' gradients, moe_select_grad, the router's GEMMs,
// moe_combine with unit weights). bf16; gating and renormalisation chosen at launch.
#include <cuda_runtime.h>

#define FLASHC_F16 0
#include "flashc/device/gemm_ws.cuh"
#include "flashc/device/moe_routing.cuh"
#include "lab_tma.h"

namespace {
using flashc::TensorArg;
using flashc::TmaDescriptor;
using flashc::device::bf16;
namespace dev = flashc::device;

struct GemmBase {
  using Elem = bf16;
  static constexpr bool kTransA = false, kTransB = false, kBias = false, kBatched = false, kAccumulate = false,
                        kSavePre = false;
  static constexpr int kStages = 4, kGroup = 8, kProducerRegs = 40, kConsumerRegs = 232;
};
struct RouterConfig : GemmBase {  // logits [T, E] = x [T, d] · router [d, E]
  static constexpr bool kGated = false;
  static constexpr dev::Act kAct = dev::Act::Identity;
  static constexpr int kBlockN = 128;
};
struct UpConfig : GemmBase {  // hidden = silu(x_e · Wg[e]) ⊙ (x_e · Wu[e])
  static constexpr bool kGated = true, kGrouped = true;
  static constexpr dev::Act kAct = dev::Act::Silu;
  static constexpr int kBlockN = 128;
};
struct UpSaveConfig : UpConfig {  // the training forward: also g and u
  static constexpr bool kSavePre = true;
};
struct DownConfig : GemmBase {  // expert_out = hidden_e · W2[e]
  static constexpr bool kGated = false, kGrouped = true;
  static constexpr dev::Act kAct = dev::Act::Identity;
  static constexpr int kBlockN = 256;
};
struct TransposedWeightConfig : DownConfig {  // dh = d_expert_out_e · W2[e]ᵀ, dx_e = dg_e · Wg[e]ᵀ
  static constexpr bool kTransB = true;
};
struct TransposedWeightAccConfig : TransposedWeightConfig {  // dx_e += du_e · Wu[e]ᵀ (C's tile read: 3 stages fit)
  static constexpr bool kAccumulate = true;
  static constexpr int kStages = 3;
};
struct WeightGradConfig : GemmBase {  // dW[e] = A_eᵀ · B_e over the expert's rows
  static constexpr bool kTransA = true, kGated = false, kGroupedK = true;
  static constexpr dev::Act kAct = dev::Act::Identity;
  static constexpr int kBlockN = 256;
};
struct RouterGradConfig : GemmBase {  // d_router = xᵀ · d_logits
  static constexpr bool kTransA = true, kGated = false;
  static constexpr dev::Act kAct = dev::Act::Identity;
  static constexpr int kBlockN = 128;
};
struct RouterInputGradConfig : GemmBase {  // dx (the router's part) = d_logits · routerᵀ
  static constexpr bool kTransB = true, kGated = false;
  static constexpr dev::Act kAct = dev::Act::Identity;
  static constexpr int kBlockN = 256;
};

template <class Config>
__global__ void __launch_bounds__(dev::GemmWsPlan<Config>::kThreads, 1)
    lab_gemm(const __grid_constant__ TmaDescriptor map_a, const __grid_constant__ TmaDescriptor map_b,
             const __grid_constant__ TmaDescriptor map_b2, const __grid_constant__ TmaDescriptor map_c,
             const __grid_constant__ TmaDescriptor map_pre, const __grid_constant__ TmaDescriptor map_pre2,
             TensorArg a, TensorArg b, TensorArg groups) {
  if constexpr (dev::GemmWsPlan<Config>::kGrouped)
    dev::gemm_ws_grouped<Config>(map_a, map_b, map_b2, map_c, map_pre, map_pre2, a, b, groups, 1.f);
  else if constexpr (dev::GemmWsPlan<Config>::kGroupedK)
    dev::gemm_ws_grouped_k<Config>(map_a, map_b, map_c, a, b, groups, 1.f);
  else
    dev::gemm_ws<Config>(map_a, map_b, map_b2, map_c, map_pre, map_pre2, a, b, TensorArg(), 1.f);
}

template <dev::MoeGating G, bool kRenormalize>
__global__ void lab_select(const bf16* logits, int tokens, int experts, int top_k, int* counts, int* ids,
                           float* weights, int* ranks) {
  dev::moe_select<G, kRenormalize>(logits, experts, tokens, experts, top_k, counts, ids, weights, ranks);
}
__global__ void lab_plan(const int* counts, int experts, int* offsets, int* groups) {
  dev::moe_plan(counts, experts, offsets, groups);
}
__global__ void lab_permute(const bf16* x, int tokens, int d, int top_k, int experts, const int* counts,
                            const int* ids, const int* ranks, const int* offsets, bf16* permuted) {
  dev::moe_permute(x, d, tokens, d, top_k, experts, counts, ids, ranks, offsets, permuted);
}
__global__ void lab_combine(const bf16* expert_out, int tokens, int d_out, int top_k, const int* ids,
                            const float* weights, const int* ranks, const int* offsets, bf16* y, const bf16* addend) {
  dev::moe_combine(expert_out, tokens, d_out, top_k, ids, weights, ranks, offsets, y, d_out, addend);
}
__global__ void lab_scatter_grad(const bf16* dy, const bf16* expert_out, int tokens, int d_out, int top_k, int experts,
                                 const int* counts, const int* ids, const float* weights, const int* ranks,
                                 const int* offsets, bf16* d_expert_out, float* d_weights) {
  dev::moe_scatter_grad(dy, d_out, expert_out, tokens, d_out, top_k, experts, counts, ids, weights, ranks, offsets,
                        d_expert_out, d_weights);
}
__global__ void lab_gated_grad(const bf16* g, const bf16* u, const bf16* dh, int h, int experts, const int* offsets,
                               bf16* dg, bf16* du) {
  dev::moe_activation_grad<dev::Act::Silu, true>(g, u, dh, h, experts, offsets, dg, du);
}
template <dev::MoeGating G, bool kRenormalize>
__global__ void lab_select_grad(const bf16* logits, int tokens, int experts, int top_k, const int* ids,
                                const float* weights, const float* d_weights, bf16* d_logits) {
  dev::moe_select_grad<G, kRenormalize>(logits, tokens, experts, top_k, ids, weights, d_weights, d_logits);
}

int make_map(CUtensorMap* map, const void* data, int rank, long long outer, long long rows, long long cols,
             unsigned box_rows) {
  return make_rowmajor_map(map, data, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank, outer, rows, cols, box_rows);
}

const TmaDescriptor& desc(const CUtensorMap& m) { return *reinterpret_cast<const TmaDescriptor*>(&m); }

int sm_count() {
  static int sms = 0;
  if (sms == 0) {
    int device = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  }
  return sms;
}

// C [M, N] = op(A) · op(B), row-major: A [M, K] (kTransA: [K, M]); B [K, N] (kTransB: [N, K]), grouped [E, K, N] /
// [E, N, K] (gated: B and B2; pre / pre2 saved with kSavePre); grouped over K: C [E, M, N], groups [E + 1] the
// experts' first rows of K. groups: the row-block table (grouped) or the offsets (grouped over K).
template <class Config>
int launch_gemm(const void* a, const void* b, const void* b2, void* c, const int* groups, long long M, long long N,
                long long K, long long E, cudaStream_t stream, void* pre = nullptr, void* pre2 = nullptr) {
  using Plan = dev::GemmWsPlan<Config>;
  static bool configured = false;
  if (!configured) {
    if (cudaError_t e = cudaFuncSetAttribute(lab_gemm<Config>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             Plan::kSmemBytes))
      return e;
    configured = true;
  }
  constexpr bool kGrouped = Plan::kGrouped, kGroupedK = Plan::kGroupedK, kTransA = Config::kTransA,
                 kTransB = Config::kTransB;
  void* pa = const_cast<void*>(a);
  void* pb = const_cast<void*>(b);
  TensorArg ta = kTransA ? TensorArg{pa, {K, M}, {M, 1}} : TensorArg{pa, {M, K}, {K, 1}};
  const long long b_rows = kTransB ? N : K, b_cols = kTransB ? K : N;
  TensorArg tb = kGrouped ? TensorArg{pb, {E, b_rows, b_cols}, {b_rows * b_cols, b_cols, 1}}
                          : TensorArg{pb, {b_rows, b_cols}, {b_cols, 1}};
  TensorArg tg{const_cast<int*>(groups), {kGroupedK ? E + 1 : 1 + M / 128}, {1}};
  CUtensorMap ma, mb, mb2, mc, mp, mp2;
  if (int e = kTransA ? make_map(&ma, a, 2, 1, K, M, 64) : make_map(&ma, a, 2, 1, M, K, Plan::kBlockM)) return e;
  const unsigned b_box = kTransB ? Config::kBlockN : 64;
  if (int e = make_map(&mb, b, kGrouped ? 3 : 2, E, b_rows, b_cols, b_box)) return e;
  if (int e = make_map(&mb2, b2 ? b2 : b, kGrouped ? 3 : 2, E, b_rows, b_cols, b_box)) return e;
  if (int e = make_map(&mc, c, kGroupedK ? 3 : 2, E, M, N, 64)) return e;
  if (int e = make_map(&mp, pre ? pre : c, kGroupedK ? 3 : 2, E, M, N, 64)) return e;
  if (int e = make_map(&mp2, pre2 ? pre2 : c, kGroupedK ? 3 : 2, E, M, N, 64)) return e;
  const long long tiles = (kGroupedK ? E : 1) * ((M + Plan::kBlockM - 1) / Plan::kBlockM) *
                          ((N + Config::kBlockN - 1) / Config::kBlockN);
  const long long blocks = tiles < sm_count() ? tiles : sm_count();
  if (blocks == 0) return 0;
  lab_gemm<Config><<<static_cast<unsigned>(blocks), Plan::kThreads, Plan::kSmemBytes, stream>>>(
      desc(ma), desc(mb), desc(mb2), desc(mc), desc(mp), desc(mp2), ta, tb, tg);
  return cudaGetLastError();
}
}  // namespace

extern "C" long long flashc_lab_moe_capacity(long long routed_rows, int experts) {
  return dev::moe_padded_capacity(routed_rows, experts);
}

// ptrs: x [T, d], router [d, E], w_gate [E, d, h], w_up [E, d, h], w_down [E, h, d_out], y [T, d_out]; workspaces
// logits [T, E] bf16, counts [E], ids / weights (f32) / ranks [T, k], offsets [E + 1], groups [1 + capacity / 128],
// permuted [capacity, d], hidden [capacity, h], expert_out [capacity, d_out]. sizes: T, d, h, d_out, E, k.
// stop_after: 0 everything; 1 after the routing (select, plan, permute); 2 after the up projection. saved: the
// training forward's g and u [capacity, h] (or null).
extern "C" int flashc_lab_moe_forward(void** p, const long long* sizes, int sigmoid, int renormalize, int stop_after,
                                      void** saved, cudaStream_t stream) {
  const long long T = sizes[0], d = sizes[1], h = sizes[2], d_out = sizes[3], E = sizes[4], k = sizes[5];
  if (E > dev::kMoeMaxExperts || k > 32 || k > E || d % 8 || h % 8 || d_out % 8 || E % 8) return -1;
  const long long capacity = dev::moe_padded_capacity(T * k, static_cast<int>(E));
  auto* counts = static_cast<int*>(p[7]);
  auto* ids = static_cast<int*>(p[8]);
  auto* weights = static_cast<float*>(p[9]);
  auto* ranks = static_cast<int*>(p[10]);
  auto* offsets = static_cast<int*>(p[11]);
  auto* groups = static_cast<int*>(p[12]);
  auto* logits = static_cast<bf16*>(p[6]);
  if (cudaError_t e = cudaMemsetAsync(counts, 0, E * sizeof(int), stream)) return e;
  if (int e = launch_gemm<RouterConfig>(p[0], p[1], nullptr, logits, nullptr, T, E, d, 1, stream)) return e;
  const unsigned warps_grid = static_cast<unsigned>((T + 7) / 8);
  const int ti = static_cast<int>(T), ei = static_cast<int>(E), ki = static_cast<int>(k);
  if (sigmoid)
    (renormalize ? lab_select<dev::MoeGating::Sigmoid, true> : lab_select<dev::MoeGating::Sigmoid, false>)
        <<<warps_grid, 256, 0, stream>>>(logits, ti, ei, ki, counts, ids, weights, ranks);
  else
    (renormalize ? lab_select<dev::MoeGating::Softmax, true> : lab_select<dev::MoeGating::Softmax, false>)
        <<<warps_grid, 256, 0, stream>>>(logits, ti, ei, ki, counts, ids, weights, ranks);
  lab_plan<<<1, 1024, 0, stream>>>(counts, ei, offsets, groups);
  const long long permute_warps = T * k + E * (dev::kMoeGroupRows - 1);
  lab_permute<<<static_cast<unsigned>((permute_warps + 7) / 8), 256, 0, stream>>>(
      static_cast<const bf16*>(p[0]), ti, static_cast<int>(d), ki, ei, counts, ids, ranks, offsets,
      static_cast<bf16*>(p[13]));
  if (stop_after == 1) return cudaGetLastError();
  if (saved) {
    if (int e = launch_gemm<UpSaveConfig>(p[13], p[2], p[3], p[14], groups, capacity, h, d, E, stream, saved[0], saved[1]))
      return e;
  } else if (int e = launch_gemm<UpConfig>(p[13], p[2], p[3], p[14], groups, capacity, h, d, E, stream)) {
    return e;
  }
  if (stop_after == 2) return cudaGetLastError();
  if (int e = launch_gemm<DownConfig>(p[14], p[4], nullptr, p[15], groups, capacity, d_out, h, E, stream)) return e;
  lab_combine<<<warps_grid, 256, 0, stream>>>(static_cast<const bf16*>(p[15]), ti, static_cast<int>(d_out), ki, ids,
                                              weights, ranks, offsets, static_cast<bf16*>(p[5]), nullptr);
  return cudaGetLastError();
}

// The backward after a training forward (same p and sizes; saved g, u). q: dy [T, d_out]; outputs dx [T, d], d_router
// [d, E], d_w_gate [E, d, h], d_w_up [E, d, h], d_w_down [E, h, d_out]; workspaces d_expert_out [capacity, d_out],
// d_weights [T, k] f32, dh, dg, du [capacity, h], dx_perm [capacity, d], d_logits [T, E], dx_router [T, d].
extern "C" int flashc_lab_moe_backward(void** p, const long long* sizes, int sigmoid, int renormalize, void** saved,
                                       void** q, cudaStream_t stream) {
  const long long T = sizes[0], d = sizes[1], h = sizes[2], d_out = sizes[3], E = sizes[4], k = sizes[5];
  const long long capacity = dev::moe_padded_capacity(T * k, static_cast<int>(E));
  const int ti = static_cast<int>(T), ei = static_cast<int>(E), ki = static_cast<int>(k);
  const auto* counts = static_cast<const int*>(p[7]);
  const auto* ids = static_cast<const int*>(p[8]);
  const auto* weights = static_cast<const float*>(p[9]);
  const auto* ranks = static_cast<const int*>(p[10]);
  const auto* offsets = static_cast<const int*>(p[11]);
  const auto* groups = static_cast<const int*>(p[12]);
  auto* d_weights = static_cast<float*>(q[7]);
  auto* d_logits = static_cast<bf16*>(q[12]);
  const long long scatter_warps = T * k + E * (dev::kMoeGroupRows - 1);
  lab_scatter_grad<<<static_cast<unsigned>((scatter_warps + 7) / 8), 256, 0, stream>>>(
      static_cast<const bf16*>(q[0]), static_cast<const bf16*>(p[15]), ti, static_cast<int>(d_out), ki, ei, counts, ids,
      weights, ranks, offsets, static_cast<bf16*>(q[6]), d_weights);
  // dh = d_expert_out · W2[e]ᵀ, then dg, du
  if (int e = launch_gemm<TransposedWeightConfig>(q[6], p[4], nullptr, q[8], groups, capacity, h, d_out, E, stream)) return e;
  lab_gated_grad<<<4 * sm_count(), 256, 0, stream>>>(static_cast<const bf16*>(saved[0]), static_cast<const bf16*>(saved[1]),
                                                     static_cast<const bf16*>(q[8]), static_cast<int>(h), ei, offsets,
                                                     static_cast<bf16*>(q[9]), static_cast<bf16*>(q[10]));
  // dx_perm = dg · Wgᵀ + du · Wuᵀ
  if (int e = launch_gemm<TransposedWeightConfig>(q[9], p[2], nullptr, q[11], groups, capacity, d, h, E, stream)) return e;
  if (int e = launch_gemm<TransposedWeightAccConfig>(q[10], p[3], nullptr, q[11], groups, capacity, d, h, E, stream)) return e;
  // The experts' weight gradients over their rows: dW2 = hiddenᵀ d_expert_out, dWg = x_permᵀ dg, dWu = x_permᵀ du
  if (int e = launch_gemm<WeightGradConfig>(p[14], q[6], nullptr, q[5], offsets, h, d_out, capacity, E, stream)) return e;
  if (int e = launch_gemm<WeightGradConfig>(p[13], q[9], nullptr, q[3], offsets, d, h, capacity, E, stream)) return e;
  if (int e = launch_gemm<WeightGradConfig>(p[13], q[10], nullptr, q[4], offsets, d, h, capacity, E, stream)) return e;
  // The router: d_logits, d_router = xᵀ d_logits, dx = d_logits routerᵀ + sum of the token's dx_perm rows
  const unsigned token_warps = static_cast<unsigned>((T + 7) / 8);
  if (sigmoid)
    (renormalize ? lab_select_grad<dev::MoeGating::Sigmoid, true> : lab_select_grad<dev::MoeGating::Sigmoid, false>)
        <<<token_warps, 256, 0, stream>>>(static_cast<const bf16*>(p[6]), ti, ei, ki, ids, weights, d_weights, d_logits);
  else
    (renormalize ? lab_select_grad<dev::MoeGating::Softmax, true> : lab_select_grad<dev::MoeGating::Softmax, false>)
        <<<token_warps, 256, 0, stream>>>(static_cast<const bf16*>(p[6]), ti, ei, ki, ids, weights, d_weights, d_logits);
  if (int e = launch_gemm<RouterGradConfig>(p[0], d_logits, nullptr, q[2], nullptr, d, E, T, 1, stream)) return e;
  if (int e = launch_gemm<RouterInputGradConfig>(d_logits, p[1], nullptr, q[13], nullptr, T, d, E, 1, stream)) return e;
  lab_combine<<<token_warps, 256, 0, stream>>>(static_cast<const bf16*>(q[11]), ti, static_cast<int>(d), ki, ids, nullptr,
                                               ranks, offsets, static_cast<bf16*>(q[1]), static_cast<const bf16*>(q[13]));
  return cudaGetLastError();
}
