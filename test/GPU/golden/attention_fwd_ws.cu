// Golden attention forward, strategy "ws" (FlashAttention-3 style, sm_90a): what the compiler's
// Hopper schedule must emit. Same spec, numerics, grid and row ownership as attention_fwd_wgmma.cu
// (two consumer warpgroups x 64 query rows, SS wgmma for S = Q K^T, RS wgmma for O += P V, every
// softmax/mask library call unchanged); TMA loads, a producer warpgroup and two consumer warpgroups
// that ping-pong. The body is the device library's attention_fwd_ws<Config>
// (runtime/device/include/flashc/device/attention_fwd_ws.cuh, which says how it works), shared
// with the kernel flashc --experiment=ws-forward emits; this file sets its Config from -D flags.
// Host side (tensor maps per call): bench/kernel_lab/launch_fwd.cu, FLASHC_FWD_WS.
#include "flashc/device/all.cuh"

#ifndef FLASHC_KERNEL_NAME
#define FLASHC_KERNEL_NAME flashc_attention_fwd
#endif
#ifndef FLASHC_HEAD_DIM
#define FLASHC_HEAD_DIM 128
#endif
#ifndef FLASHC_HEADS_Q
#define FLASHC_HEADS_Q 16
#endif
#ifndef FLASHC_GQA_GROUP
#define FLASHC_GQA_GROUP 1
#endif
#ifndef FLASHC_F16
#define FLASHC_F16 0
#endif
#ifndef FLASHC_CAUSAL
#define FLASHC_CAUSAL 0
#endif
#ifndef FLASHC_WINDOW_LEFT
#define FLASHC_WINDOW_LEFT (-1)
#endif
#ifndef FLASHC_WINDOW_RIGHT
#define FLASHC_WINDOW_RIGHT (-1)
#endif
#ifndef FLASHC_SOFTCAP
#define FLASHC_SOFTCAP 0.0f
#endif
#ifndef FLASHC_WS_BLOCK_N  // keys per block: 128 (wgmma N = 128)
#define FLASHC_WS_BLOCK_N 128
#endif
#ifndef FLASHC_WS_STAGES  // K/V ring depth (D = 128: 2 fits 227 KB; D = 64 can take 3-4)
#define FLASHC_WS_STAGES 2
#endif
#ifndef FLASHC_WS_PERSISTENT  // 1: a grid of min(units, SMs) blocks that loop over pairs of query-row blocks
#define FLASHC_WS_PERSISTENT 0
#endif
#ifndef FLASHC_WS_CONSUMERS  // consumer warpgroups: 2 (128 query rows a tile) or 3 (192 rows)
#define FLASHC_WS_CONSUMERS 2
#endif
#ifndef FLASHC_WS_PINGPONG  // 1: the two consumer warpgroups take turns issuing their GEMMs
#define FLASHC_WS_PINGPONG 1
#endif

namespace fwd_config {
using namespace flashc::device;
// ---- spec parameters ----
struct Config {
#if FLASHC_F16
  using Elem = f16;
#else
  using Elem = bf16;
#endif
  static constexpr int kHeadDim = FLASHC_HEAD_DIM, kValueDim = FLASHC_HEAD_DIM, kValueCols = kValueDim;
  static constexpr int kBlockN = FLASHC_WS_BLOCK_N;
  static constexpr int kStages = FLASHC_WS_STAGES;
  static constexpr int kGroup = FLASHC_GQA_GROUP;
  static constexpr int kWindowLeft = FLASHC_WINDOW_LEFT;
  static constexpr int kWindowRight = FLASHC_CAUSAL ? 0 : FLASHC_WINDOW_RIGHT;
  static constexpr float kScale = float(1.0 / constexpr_sqrt(kHeadDim));
  static constexpr float kSoftcap = FLASHC_SOFTCAP;
  static constexpr bool kPingPong = FLASHC_WS_PINGPONG != 0;
  static constexpr bool kLongestFirst = kWindowRight >= 0 && kWindowLeft < 0;  // causal: longest blocks first
  static constexpr bool kPersistent = FLASHC_WS_PERSISTENT != 0;
  static constexpr int kConsumerWarpgroups = FLASHC_WS_CONSUMERS;
  static constexpr int kProducerRegs = 24, kConsumerRegs = kConsumerWarpgroups == 3 ? 160 : 240;
};
using Plan = AttentionFwdWsPlan<Config>;
// What the lab launcher reads.
constexpr int kHeadDim = Plan::kHeadDim;
constexpr int kHeadsQ = FLASHC_HEADS_Q;
constexpr int kGroup = Plan::kGroup;
constexpr int kHeadsKV = kHeadsQ / kGroup;
constexpr int kBlockM = Plan::kBlockM, kBlockN = Plan::kBlockN, kThreads = Plan::kThreads;
constexpr int kSmemBytes = Plan::kSmemBytes;
constexpr bool kPersistent = Plan::kPersistent;
}  // namespace fwd_config

// Grid: (ceil(Sq / kBlockM), kHeadsQ, B), persistent (min(persistent_units(...), SMs), 1, 1); kThreads threads; kSmemBytes dynamic shared memory.
// tma_q / tma_k / tma_v: 4-D maps (D, S, H, B) of q, k, v, box (64, kBlockM or kBlockN, 1, 1), 128B swizzle.
extern "C" __global__ void __launch_bounds__(fwd_config::kThreads, 1)
FLASHC_KERNEL_NAME(const __grid_constant__ flashc::TmaDescriptor tma_q, const __grid_constant__ flashc::TmaDescriptor tma_k,
                   const __grid_constant__ flashc::TmaDescriptor tma_v, flashc::TensorArg q, flashc::TensorArg k,
                   flashc::TensorArg o, flashc::TensorArg lse) {
  flashc::device::attention_fwd_ws<fwd_config::Config>(tma_q, tma_k, tma_v, q, k, o, lse);
}

// Packed variable-length sequences (varlen.cuh), the same Config (kPersistent 0): the plan (offsets checked, the tile
// map written), one block of up to 1024 threads, then the forward on grid (packed_tile_bound(Tq, B, kBlockM),
// kHeadsQ, 1). tma_q / tma_k / tma_v: 3-D maps (D, H, T) of the packed q [Tq, Hq, D], k and v [Tk, Hkv, D], box
// (64, 1, kBlockM or kBlockN), 128B swizzle; o [Tq, Hq, D], lse [Hq, Tq] f32, cu_q / cu_k [B + 1] int32, tile_map
// int2 [packed_tile_bound(Tq, B, kBlockM)], status int32 [4] (zeroed).
extern "C" __global__ void flashc_attention_varlen_plan(flashc::TensorArg cu_q, flashc::TensorArg cu_k,
                                                        flashc::TensorArg q, flashc::TensorArg k,
                                                        flashc::TensorArg tile_map, flashc::TensorArg status) {
  flashc::device::attention_varlen_plan(cu_q, cu_k, static_cast<int>(q.shape[0]), static_cast<int>(k.shape[0]),
                                        fwd_config::kBlockM, tile_map, static_cast<int*>(status.data));
}

extern "C" __global__ void __launch_bounds__(fwd_config::kThreads, 1)
flashc_attention_fwd_varlen(const __grid_constant__ flashc::TmaDescriptor tma_q,
                            const __grid_constant__ flashc::TmaDescriptor tma_k,
                            const __grid_constant__ flashc::TmaDescriptor tma_v, flashc::TensorArg q,
                            flashc::TensorArg k, flashc::TensorArg o, flashc::TensorArg lse, flashc::TensorArg cu_q,
                            flashc::TensorArg cu_k, flashc::TensorArg tile_map, flashc::TensorArg status) {
  if constexpr (!fwd_config::kPersistent)
    flashc::device::attention_fwd_ws_varlen<fwd_config::Config>(tma_q, tma_k, tma_v, q, k, o, lse, cu_q, cu_k,
                                                                tile_map, static_cast<const int*>(status.data));
}
