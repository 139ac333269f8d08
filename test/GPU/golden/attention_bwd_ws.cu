// Golden attention backward, strategy "ws" (sm_90a): the device library's attention_bwd_ws<Config>
// (runtime/device/include/flashc/device/attention_bwd_ws.cuh, which says how it works: a TMA
// producer warp; up to D = 128 128 keys a block, the consumer warpgroups split by keys (at D = 64 128 queries
// a step, dQ split by rows); above, 64 keys a
// block, split by role — Pᵀ and dV, dSᵀ and dK — and dQ by halves), shared with the kernel the compiler emits; this file sets its Config from
// the -D flags of attention_bwd.cu. Pre/postprocess kernels (D = rowsum(dO O), dQ = scale dQ_accum)
// are attention_bwd.cu's. Host side (tensor maps per call): bench/kernel_lab/launch_bwd.cu, FLASHC_BWD_WS.
// (The form this replaced — two consumer warpgroups of 64 keys each holding dK and dV — spilled at
// D = 128: docs/design/wgmma-backward.md, step 5.)
#ifdef FLASHC_LAB_PHASE_PROBE
// The kernel lab's phase probe (bench/kernel_lab/phases.py): each consumer warpgroup's first thread records the SM's
// clock at the library's timeline points 0-5 (attention_bwd_ws.cuh), the global timer at 0 and 5, and the SM.
// Defined before attention_bwd.cu includes the library.
constexpr int kProbeBlocks = 8192, kProbeSlots = 9;
__device__ unsigned long long flashc_lab_probe[kProbeBlocks][2][kProbeSlots];
__device__ __forceinline__ void flashc_lab_probe_point(int point) {
  const int wg = static_cast<int>(threadIdx.x / 128);
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  if (threadIdx.x % 128 != 0 || wg > 1 || block >= kProbeBlocks) return;
  unsigned long long* slot = flashc_lab_probe[block][wg];
  slot[point] = clock64();
  if (point == 0 || point == 5) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    slot[point == 0 ? 6 : 7] = t;
  }
  if (point == 0) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    slot[8] = sm;
  }
}
#define FLASHC_BWD_WS_PROBE(point) flashc_lab_probe_point(point)
#endif
#define FLASHC_BWD_ALLOW_WIDE 1  // D = 256: this form keeps one accumulator a warpgroup
#include "attention_bwd.cu"      // bwd_config (the -D flags), the pre/postprocess kernels
#include "flashc/device/attention_bwd_ends.cuh"
#include "flashc/device/attention_bwd_ws.cuh"

static_assert(bwd_config::kSoftcap == 0.f && !FLASHC_BWD_DETERMINISTIC, "ws backward: no softcap, dQ by atomics");
namespace bwd_ws_config {
#ifndef FLASHC_BWD_WS_STAGES
#define FLASHC_BWD_WS_STAGES 2
#endif
#ifndef FLASHC_BWD_WS_DQ_COLS  // dQ columns a product (a warpgroup computes half of D)
#define FLASHC_BWD_WS_DQ_COLS 64
#endif
#ifndef FLASHC_BWD_WS_KEY_SPLIT  // consumers split by keys (128 a block) up to D = 128, else by role
#define FLASHC_BWD_WS_KEY_SPLIT (FLASHC_HEAD_DIM <= 128)
#endif
#ifndef FLASHC_BWD_WS_DQ_TMA  // dQ by TMA reductions: the key split (its only form); the role split's boxes do not fit at D = 256
#define FLASHC_BWD_WS_DQ_TMA FLASHC_BWD_WS_KEY_SPLIT
#endif
#ifndef FLASHC_BWD_WS_BLOCK_M  // queries a step: 128 at D = 64 (dQ by row halves), else 64
#define FLASHC_BWD_WS_BLOCK_M (FLASHC_HEAD_DIM == 64 ? 128 : 64)
#endif
// The device library's pre/postprocess (attention_bwd_ends.cuh: what the compiler emits, the preprocess zeroing
// dq_accum; the main kernel scales dQ) instead of attention_bwd.cu's: the lab's _ends configurations.
#ifndef FLASHC_BWD_WS_LIBRARY_ENDS
#define FLASHC_BWD_WS_LIBRARY_ENDS 0
#endif
struct Config {
  using Elem = bwd_config::Elem;
  static constexpr int kHeadDim = bwd_config::kHeadDim, kValueDim = bwd_config::kHeadDim;
  static constexpr int kHeadCols = kHeadDim, kValueCols = kValueDim;
  static constexpr int kGroup = bwd_config::kGroup;
  static constexpr int kWindowLeft = bwd_config::Mask::L, kWindowRight = bwd_config::Mask::R;
  static constexpr float kScale = bwd_config::kScale;
  // attention_bwd.cu's postprocess scales dQ; the library's converts it only
  static constexpr float kDqScale = FLASHC_BWD_WS_LIBRARY_ENDS ? bwd_config::kScale : 1.f;
  static constexpr int kStages = FLASHC_BWD_WS_STAGES;
  static constexpr int kDqCols = FLASHC_HEAD_DIM == 64 ? 64 : FLASHC_BWD_WS_DQ_COLS;
  static constexpr bool kKeySplit = FLASHC_BWD_WS_KEY_SPLIT;
  static constexpr int kBlockM = FLASHC_BWD_WS_BLOCK_M;
  static constexpr bool kDqTma = FLASHC_BWD_WS_DQ_TMA;
  static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
#if FLASHC_BWD_WS_ROTATE_WALK  // each key block's walk starts at its own query block (attention_bwd_ws.cuh)
  static constexpr bool kRotateWalk = true;
#endif
};
}  // namespace bwd_ws_config

#ifdef FLASHC_LAB_SKIP_ELEMENT_MASK
// Lab timing experiment only (never set in use; results wrong by construction): the window's bounds kept, so the
// walk is the same, but no step applies the element mask, which prices the masked steps' extra work.
template <int kLeft, int kRight>
struct LabBoundsOnly : flashc::device::Window<kLeft, kRight> {
  static __device__ __forceinline__ int mask_parts(int, int, int, int, int, int, const flashc::device::MaskEnv&) { return 0; }
};
template <>
struct flashc::device::MaskSpecOf<bwd_ws_config::Config, void> {
  using type = LabBoundsOnly<bwd_ws_config::Config::kWindowLeft, bwd_ws_config::Config::kWindowRight>;
};
#endif

namespace bwd_ws_config {
using Plan = flashc::device::AttentionBwdWsPlan<Config>;
constexpr int kBlockN = Plan::kBlockN, kBlockM = Plan::kBlockM, kThreads = Plan::kThreads, kSmemBytes = Plan::kSmemBytes;
}  // namespace bwd_ws_config

extern "C" __global__ void __launch_bounds__(bwd_ws_config::kThreads, 1)
FLASHC_PASTE(FLASHC_KERNEL_PREFIX, _bwd_ws)(flashc::TensorArg q, flashc::TensorArg k, flashc::TensorArg lse,
                                            flashc::TensorArg delta, flashc::TensorArg dq_accum,
                                            flashc::TensorArg dk, flashc::TensorArg dv,
                                            const __grid_constant__ flashc::TmaDescriptor q_map,
                                            const __grid_constant__ flashc::TmaDescriptor k_map,
                                            const __grid_constant__ flashc::TmaDescriptor v_map,
                                            const __grid_constant__ flashc::TmaDescriptor do_map,
                                            const __grid_constant__ flashc::TmaDescriptor dq_map) {
  flashc::device::attention_bwd_ws<bwd_ws_config::Config>(q_map, k_map, v_map, do_map, q, k, lse, delta, dq_accum,
                                                          dk, dv, static_cast<int>(k.shape[2] - q.shape[2]), &dq_map);
}

#if FLASHC_BWD_WS_LIBRARY_ENDS
// The library's ends (grid (ceil(Sq / 64), Hq, B), 128 threads): delta and dq_accum zeroed; dQ converted.
extern "C" __global__ void __launch_bounds__(128)
FLASHC_PASTE(FLASHC_KERNEL_PREFIX, _bwd_ws_preprocess)(flashc::TensorArg o, flashc::TensorArg dout,
                                                       flashc::TensorArg delta, flashc::TensorArg dq_accum) {
  flashc::device::attention_bwd_preprocess<bwd_config::Elem, bwd_config::kHeadDim, bwd_config::kHeadDim>(
      o, dout, delta, &dq_accum);
}
extern "C" __global__ void __launch_bounds__(128)
FLASHC_PASTE(FLASHC_KERNEL_PREFIX, _bwd_ws_postprocess)(flashc::TensorArg dq_accum, flashc::TensorArg dq) {
  flashc::device::attention_bwd_postprocess<bwd_config::Elem, bwd_config::kHeadDim>(dq_accum, dq);
}
#endif

// Packed variable-length sequences (varlen.cuh), the same Config: the plan of key tiles (offsets checked, the map of
// each sequence's kBlockN-key tiles), then the main kernel on grid (packed_tile_bound(Tk, B, kBlockN), kHeadsKV, 1).
// q, k, v, dout [T, H, D] (3-D maps (D, H, T), box (64, 1, rows)); lse, delta [Hq, Tq] f32; dq_accum [Tq, Hq, D] f32
// zeroed (3-D map, box (32, 1, 64)); dk, dv [Tk, Hkv, D]; cu_q / cu_k [B + 1] int32; key_map int2; status int32 [4].
extern "C" __global__ void FLASHC_PASTE(FLASHC_KERNEL_PREFIX, _varlen_key_plan)(
    flashc::TensorArg cu_q, flashc::TensorArg cu_k, flashc::TensorArg q, flashc::TensorArg k,
    flashc::TensorArg key_map, flashc::TensorArg status) {
  flashc::device::attention_varlen_plan(cu_q, cu_k, static_cast<int>(q.shape[0]), static_cast<int>(k.shape[0]),
                                        bwd_ws_config::kBlockN, key_map, static_cast<int*>(status.data),
                                        /*key_tiles=*/true);
}

extern "C" __global__ void __launch_bounds__(bwd_ws_config::kThreads, 1)
FLASHC_PASTE(FLASHC_KERNEL_PREFIX, _bwd_ws_varlen)(flashc::TensorArg q, flashc::TensorArg k, flashc::TensorArg lse,
                                                   flashc::TensorArg delta, flashc::TensorArg dq_accum,
                                                   flashc::TensorArg dk, flashc::TensorArg dv, flashc::TensorArg cu_q,
                                                   flashc::TensorArg cu_k, flashc::TensorArg key_map,
                                                   flashc::TensorArg status,
                                                   const __grid_constant__ flashc::TmaDescriptor q_map,
                                                   const __grid_constant__ flashc::TmaDescriptor k_map,
                                                   const __grid_constant__ flashc::TmaDescriptor v_map,
                                                   const __grid_constant__ flashc::TmaDescriptor do_map,
                                                   const __grid_constant__ flashc::TmaDescriptor dq_map) {
  flashc::device::attention_bwd_ws_varlen<bwd_ws_config::Config>(q_map, k_map, v_map, do_map, q, k, lse, delta,
                                                                  dq_accum, dk, dv, cu_q, cu_k, key_map,
                                                                  static_cast<const int*>(status.data), &dq_map);
}
