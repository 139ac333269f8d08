// Golden attention backward, strategy "ws" (FlashAttention-3 structure, sm_90a): the Sᵀ backward the
// compiler emits under wgmma (128 keys a block in two consumer warpgroups of 64, query blocks of 64;
// Sᵀ = K Qᵀ and dPᵀ = V dOᵀ as SS wgmma, dV += Pᵀ dO and dK += dSᵀ Q as RS wgmma, dQ = dS K from
// dSᵀ in shared memory, f32 atomics), with the loads moved to a producer warp:
//   * TMA: K and V once per block; Q and dO per query block through a ring of kStages slots (full /
//     empty mbarriers as in attention_fwd_ws.cuh); the producer warp's lanes also copy the block's
//     64 lse and D values into the slot and arrive on its full barrier (33 arrivals: one with the
//     TMA byte count, one per lane).
//   * Consumers never meet the producer at a block barrier; the two consumer warpgroups meet once
//     per query block (named barrier 1) when both halves of dSᵀ are in shared memory for dQ. dSᵀ
//     is double-buffered, so the next block's store cannot overwrite what the slower warpgroup's
//     dQ product still reads.
//   * Overlap: Sᵀ and dPᵀ are issued together; dV += Pᵀ dO runs while dS is computed; dK and the dQ
//     part run together.
// Pre/postprocess kernels (D = rowsum(dO O), dQ = scale dQ_accum) are attention_bwd.cu's.
// Host side (tensor maps per call): bench/kernel_lab/launch_bwd.cu, FLASHC_BWD_WS.
#include "attention_bwd.cu"  // bwd_config (the -D flags), the pre/postprocess kernels
#include "flashc/device/all.cuh"

namespace flashc {
namespace device {

// Config: Elem, kHeadDim (64 or 128), kGroup (query heads per KV head, > 0), kWindowLeft,
// kWindowRight, kScale, kStages (Q/dO ring depth).
template <class Config>
struct AttentionBwdWsPlan {
  using Elem = typename Config::Elem;
  static constexpr int kHeadDim = Config::kHeadDim;
  static_assert(kHeadDim == 64 || kHeadDim == 128, "ws backward: head dim 64 or 128");
  static constexpr int kGroup = Config::kGroup;
  using Mask = Window<Config::kWindowLeft, Config::kWindowRight>;
  static constexpr float kScale = Config::kScale;
  static constexpr float kScaleLog2 = kScale * kLog2e;
  // ---- schedule ----
  static constexpr int kBlockN = 128;  // keys a block: consumer warpgroup g owns keys 64g..64g+63
  static constexpr int kBlockM = 64;   // queries a step
  static constexpr int kStages = Config::kStages;
  static constexpr int kWarps = 8;                    // consumer warps (the register tiles' row bands)
  static constexpr int kThreads = kWarps * 32 + 128;  // + the producer warpgroup (one warp works)
  static constexpr int kProducer = 2;                 // its warpgroup index
  static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
  // ---- memory plan ----
  using KTile = SmemPanelTile<Elem, kBlockN, kHeadDim>;
  using QTile = SmemPanelTile<Elem, kBlockM, kHeadDim>;
  using DSTile = SmemPanelTile<Elem, kBlockN, kBlockM>;  // dSᵀ [key][query]
  static constexpr int kSmemK = 0;
  static constexpr int kSmemV = kSmemK + KTile::kBytes;
  static constexpr int kSmemQ = kSmemV + KTile::kBytes;                // kStages slots
  static constexpr int kSmemDO = kSmemQ + kStages * QTile::kBytes;     // kStages slots
  static constexpr int kSmemDS = kSmemDO + kStages * QTile::kBytes;    // 2 buffers
  static constexpr int kSmemLse = kSmemDS + 2 * DSTile::kBytes;        // float[kBlockM] a slot
  static constexpr int kSmemDelta = kSmemLse + kStages * kBlockM * 4;  // float[kBlockM] a slot
  static constexpr int kSmemBar = kSmemDelta + kStages * kBlockM * 4;
  static constexpr int kBarKV = 0, kBarFull = 1, kBarEmpty = 1 + kStages, kNumBars = 1 + 2 * kStages;
  static constexpr int kSmemBytes = kSmemBar + 8 * kNumBars + 1024;
  static_assert(kSmemBytes <= 227 * 1024, "shared memory plan exceeds 227 KB");
  static constexpr int kBarDs = 1;  // named barrier: both halves of dSᵀ stored
};

#ifndef FLASHC_BWD_WS_ORDER  // 0: Sᵀ and dPᵀ issued together; 1: Sᵀ, then dPᵀ with dV (fewer live registers)
#define FLASHC_BWD_WS_ORDER 1
#endif

// dp[r][c] := p[r][c] * (dp[r][c] - d[c]) with p the 16-bit probabilities (the A operand of dV += Pᵀ dO).
template <class T, int R, int C, int W>
__device__ __forceinline__ void softmax_grad_cols16(RegTileF32<R, C, W>& dp, const RegTile16<T, R, C, W>& p,
                                                    const float* d) {
#pragma unroll
  for (int mt = 0; mt < dp.kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < dp.kNT; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float2 pf = ElemTraits<T>::unpack(p.v[mt][nt][h]);
        dp.v[mt][nt][2 * h] = pf.x * (dp.v[mt][nt][2 * h] - d[dp.col(nt, 0)]);
        dp.v[mt][nt][2 * h + 1] = pf.y * (dp.v[mt][nt][2 * h + 1] - d[dp.col(nt, 1)]);
      }
}

template <class Config>
__device__ __forceinline__ void attention_bwd_ws(const TmaDescriptor& tma_q, const TmaDescriptor& tma_k,
                                                 const TmaDescriptor& tma_v, const TmaDescriptor& tma_do,
                                                 const TensorArg& q, const TensorArg& k, const TensorArg& lse,
                                                 const TensorArg& delta, const TensorArg& dq_accum,
                                                 const TensorArg& dk, const TensorArg& dv) {
  using P = AttentionBwdWsPlan<Config>;
  using Elem = typename P::Elem;
  using Mask = typename P::Mask;
  using KTile = typename P::KTile;
  using QTile = typename P::QTile;
  using DSTile = typename P::DSTile;
  constexpr int kHeadDim = P::kHeadDim, kBlockM = P::kBlockM, kBlockN = P::kBlockN, kStages = P::kStages,
                kWarps = P::kWarps, kGroup = P::kGroup;

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = align_smem_1024(smem_raw);

  const int Sq = static_cast<int>(q.shape[2]), Sk = static_cast<int>(k.shape[2]);
  const int offset = Sk - Sq;
  const int k0 = blockIdx.x * kBlockN, kv_head = blockIdx.y, batch = blockIdx.z;
  const int warpgroup = warp_id() / 4;
  const int m_begin = Mask::query_block_begin(k0, kBlockM, offset);
  const int m_end = Mask::query_block_end(k0, kBlockN, kBlockM, Sq, offset);
  const int num_m = m_end > m_begin ? m_end - m_begin : 0;
  const int num_iters = kGroup * num_m;  // (group head, query block) pairs, head-major

  const KTile Ks{reinterpret_cast<Elem*>(smem + P::kSmemK)};
  const KTile Vs{reinterpret_cast<Elem*>(smem + P::kSmemV)};
  auto q_tile = [&](int s) { return QTile{reinterpret_cast<Elem*>(smem + P::kSmemQ + s * QTile::kBytes)}; };
  auto do_tile = [&](int s) { return QTile{reinterpret_cast<Elem*>(smem + P::kSmemDO + s * QTile::kBytes)}; };
  auto ds_tile = [&](int b) { return DSTile{reinterpret_cast<Elem*>(smem + P::kSmemDS + b * DSTile::kBytes)}; };
  auto lse_slot = [&](int s) { return reinterpret_cast<float*>(smem + P::kSmemLse + s * kBlockM * 4); };
  auto delta_slot = [&](int s) { return reinterpret_cast<float*>(smem + P::kSmemDelta + s * kBlockM * 4); };
  auto bar = [&](int i) { return smem_u32(smem + P::kSmemBar) + 8u * i; };
  auto phase = [](int it) { return static_cast<unsigned>(it / kStages) & 1u; };

  if (threadIdx.x == 0) {
    mbarrier_init(bar(P::kBarKV), 1);
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(bar(P::kBarFull + s), 1 + 32);  // the TMA arrival + one per producer lane
      mbarrier_init(bar(P::kBarEmpty + s), kWarps);  // lane 0 of every consumer warp
    }
    mbarrier_init_fence();
  }
  __syncthreads();  // the last block-wide barrier

  // =============================== producer warp ===============================
  if (warpgroup == P::kProducer) {
    warpgroup_reg_dealloc<P::kProducerRegs>();
    if (warp_id() != P::kProducer * 4) return;
    const int lane = lane_id();
    if (lane == 0) {
      tma_prefetch_descriptor(&tma_q);
      tma_prefetch_descriptor(&tma_do);
      mbarrier_arrive_expect_tx(bar(P::kBarKV), 2 * KTile::kBytes);
      tma_load_panels(Ks, &tma_k, bar(P::kBarKV), k0, kv_head, batch);
      tma_load_panels(Vs, &tma_v, bar(P::kBarKV), k0, kv_head, batch);
    }
    for (int it = 0; it < num_iters; ++it) {
      const int s = it % kStages, head = kv_head * kGroup + it / num_m, q0 = (m_begin + it % num_m) * kBlockM;
      mbarrier_wait(bar(P::kBarEmpty + s), phase(it) ^ 1);  // slot free (first pass: at once)
      if (lane == 0) {
        mbarrier_arrive_expect_tx(bar(P::kBarFull + s), 2 * QTile::kBytes);
        tma_load_panels(q_tile(s), &tma_q, bar(P::kBarFull + s), q0, head, batch);
        tma_load_panels(do_tile(s), &tma_do, bar(P::kBarFull + s), q0, head, batch);
      }
      // lse (-inf past Sq: P = 0 there) and D (0), two rows a lane.
      const GlobalVector<float> lse_v = vector_at<float>(lse, batch, head);
      const GlobalVector<float> delta_v = vector_at<float>(delta, batch, head);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = lane + 32 * h, row = q0 + r;
        lse_slot(s)[r] = row < Sq ? lse_v.base[row * lse_v.stride] : -INFINITY;
        delta_slot(s)[r] = row < Sq ? delta_v.base[row * delta_v.stride] : 0.f;
      }
      mbarrier_arrive(bar(P::kBarFull + s));  // releases this lane's shared stores
    }
    return;
  }

  // =============================== consumer warpgroups ==============================
  warpgroup_reg_alloc<P::kConsumerRegs>();
  RegTileF32<kBlockN, kHeadDim, kWarps> acc_dk, acc_dv;  // this warpgroup's 64 keys
  fill(acc_dk, 0.f);
  fill(acc_dv, 0.f);
  mbarrier_wait(bar(P::kBarKV), 0);

  for (int it = 0; it < num_iters; ++it) {
    const int s = it % kStages, head = kv_head * kGroup + it / num_m, q0 = (m_begin + it % num_m) * kBlockM;
    const QTile Qs = q_tile(s), dOs = do_tile(s);
    const DSTile dSs = ds_tile(it & 1);
    mbarrier_wait(bar(P::kBarFull + s), phase(it));

    RegTileF32<kBlockN, kBlockM, kWarps> dpt;
    RegTile16<Elem, kBlockN, kBlockM, kWarps> pt16;
#if FLASHC_BWD_WS_ORDER == 0
    // Sᵀ = K Qᵀ and dPᵀ = V dOᵀ, both in flight.
    RegTileF32<kBlockN, kBlockM, kWarps> st;
    fill(st, 0.f);
    fill(dpt, 0.f);
    wgmma_matmul_tb<false>(st, Ks, Qs);
    wgmma_matmul_tb<false>(dpt, Vs, dOs);
    wgmma_wait<1>();  // Sᵀ complete
    if (Mask::needs_mask(q0, kBlockM, k0, kBlockN, Sk, offset)) mask_transposed<Mask>(st, k0, q0, Sk, offset);
    recompute_probs_cols(st, lse_slot(s), P::kScaleLog2);  // Pᵀ = exp(scale Sᵀ - lse)
    convert(pt16, st);
    wgmma_matmul<false>(acc_dv, pt16, dOs);  // dV += Pᵀ dO, under the dS math
    wgmma_wait<1>();                          // dPᵀ complete
    softmax_grad_cols(dpt, st, delta_slot(s));  // dSᵀ = Pᵀ (dPᵀ - D)
#else
    // Sᵀ first; Pᵀ leaves f32 registers before dPᵀ = V dOᵀ and dV += Pᵀ dO are issued together
    // (O(1) fewer live accumulators: 128 + 32 + 16 at the peak).
    {
      RegTileF32<kBlockN, kBlockM, kWarps> st;
      fill(st, 0.f);
      wgmma_matmul_tb<true>(st, Ks, Qs);
      if (Mask::needs_mask(q0, kBlockM, k0, kBlockN, Sk, offset)) mask_transposed<Mask>(st, k0, q0, Sk, offset);
      recompute_probs_cols(st, lse_slot(s), P::kScaleLog2);  // Pᵀ = exp(scale Sᵀ - lse)
      convert(pt16, st);
    }
    fill(dpt, 0.f);
    wgmma_matmul_tb<false>(dpt, Vs, dOs);
    wgmma_matmul<false>(acc_dv, pt16, dOs);  // dV += Pᵀ dO
    wgmma_wait<1>();                          // dPᵀ complete (dV may still run: pt16 stays read-only)
    softmax_grad_cols16(dpt, pt16, delta_slot(s));  // dSᵀ = Pᵀ (dPᵀ - D), Pᵀ as rounded for dV
#endif
    RegTile16<Elem, kBlockN, kBlockM, kWarps> dst16;
    convert(dst16, dpt);
    store_fragments(dSs, dst16);
    fence_async_shared();  // generic-proxy stores -> the wgmma (async proxy) reads below
    named_barrier_sync(P::kBarDs, kWarps * 32);
    wgmma_wait<0>();  // dV complete: Pᵀ's registers are free for the dQ part
    wgmma_matmul<false>(acc_dk, dst16, Qs);  // dK += dSᵀ Q (scale at the end)
    // dQ_accum[:, 64g..64g+63] += dS K (D = 64: warpgroup 0 only); scale in the postprocess.
    RegTileF32<kBlockM, 64, 4> dq;
    const bool dq_cols = warpgroup * 64 < kHeadDim;
    if (dq_cols) {
      fill(dq, 0.f);
      wgmma_matmul_ta<false>(dq, dSs, Ks, warpgroup * 64);
    }
    wgmma_wait<0>();
    if (lane_id() == 0) mbarrier_arrive(bar(P::kBarEmpty + s));  // Q, dO, lse, D of slot s read
    if (dq_cols) atomic_add_tile(matrix_at<float>(dq_accum, batch, head), q0, warpgroup * 64, Sq, kHeadDim, dq);
  }

  // Epilogue: dK = scale dK, dV, straight from the fragments (rows >= Sk skipped).
  scale(acc_dk, P::kScale);
  RegTile16<Elem, kBlockN, kHeadDim, kWarps> dk16, dv16;
  convert(dk16, acc_dk);
  convert(dv16, acc_dv);
  store_fragments(with_limits(matrix_at<Elem>(dk, batch, kv_head), Sk, kHeadDim), k0, dk16);
  store_fragments(with_limits(matrix_at<Elem>(dv, batch, kv_head), Sk, kHeadDim), k0, dv16);
}

}  // namespace device
}  // namespace flashc

// ---- the lab's kernel: Config from the -D flags of attention_bwd.cu ----
static_assert(bwd_config::kSoftcap == 0.f && !FLASHC_BWD_DETERMINISTIC, "ws backward: no softcap, dQ by atomics");
namespace bwd_ws_config {
struct Config {
  using Elem = bwd_config::Elem;
  static constexpr int kHeadDim = bwd_config::kHeadDim;
  static constexpr int kGroup = bwd_config::kGroup;
  static constexpr int kWindowLeft = bwd_config::Mask::L, kWindowRight = bwd_config::Mask::R;
  static constexpr float kScale = bwd_config::kScale;
#ifndef FLASHC_BWD_WS_STAGES
#define FLASHC_BWD_WS_STAGES 2
#endif
  static constexpr int kStages = FLASHC_BWD_WS_STAGES;
};
using Plan = flashc::device::AttentionBwdWsPlan<Config>;
constexpr int kBlockN = Plan::kBlockN, kThreads = Plan::kThreads, kSmemBytes = Plan::kSmemBytes;
}  // namespace bwd_ws_config

extern "C" __global__ void __launch_bounds__(bwd_ws_config::kThreads, 1)
FLASHC_PASTE(FLASHC_KERNEL_PREFIX, _bwd_ws)(flashc::TensorArg q, flashc::TensorArg k, flashc::TensorArg lse,
                                            flashc::TensorArg delta, flashc::TensorArg dq_accum,
                                            flashc::TensorArg dk, flashc::TensorArg dv,
                                            const __grid_constant__ flashc::TmaDescriptor q_map,
                                            const __grid_constant__ flashc::TmaDescriptor k_map,
                                            const __grid_constant__ flashc::TmaDescriptor v_map,
                                            const __grid_constant__ flashc::TmaDescriptor do_map) {
  flashc::device::attention_bwd_ws<bwd_ws_config::Config>(q_map, k_map, v_map, do_map, q, k, lse, delta, dq_accum,
                                                          dk, dv);
}
