// Golden attention backward, in the style the CUDA emitter prints (see attention_fwd.cu).
// Spec (recompute, never store the Sq x Sk matrix):
//   D   = rowsum(dO * O)                                   [preprocess; also zeroes dQ_accum]
//   P   = exp(scale * Q K^T + mask - lse)                  [main, per key block, recomputed]
//   dV  = P^T dO ;  dP = dO V^T ;  dS = P * (dP - D)
//   dK  = scale * dS^T Q ;  dQ_accum += dS K (f32 atomics)
//   dQ  = scale * dQ_accum                                  [postprocess]
// With softcap the scores are cap * tanh(scale * s / cap) and dS also carries 1 - tanh^2.
#include "flashc/device/all.cuh"
#include "golden_support.cuh"

#ifndef FLASHC_KERNEL_PREFIX
#define FLASHC_KERNEL_PREFIX flashc_attention
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
#ifndef FLASHC_WINDOW_RIGHT  // causal forces 0
#define FLASHC_WINDOW_RIGHT (-1)
#endif
#ifndef FLASHC_SOFTCAP
#define FLASHC_SOFTCAP 0.0f
#endif
#ifndef FLASHC_BWD_DETERMINISTIC  // 1: dQ added in key-block order (bitwise reproducible)
#define FLASHC_BWD_DETERMINISTIC 0
#endif
#if FLASHC_BWD_DETERMINISTIC
#define FLASHC_BWD_SEMAPHORE_PARAM , flashc::TensorArg dq_semaphore  // int32 [B, Hq, ceil(Sq / 64)]
#else
#define FLASHC_BWD_SEMAPHORE_PARAM
#endif
#define FLASHC_PASTE2(a, b) a##b
#define FLASHC_PASTE(a, b) FLASHC_PASTE2(a, b)

namespace bwd_config {
using namespace flashc::device;
// ---- spec parameters ----
constexpr int kHeadDim = FLASHC_HEAD_DIM;
#ifndef FLASHC_BWD_ALLOW_WIDE  // the ws form (attention_bwd_ws.cu) holds one accumulator a warpgroup
static_assert(kHeadDim <= 128, "backward: dK and dV accumulators of 16 x D per warp exceed registers past D = 128");
#endif
constexpr int kHeadsQ = FLASHC_HEADS_Q;
constexpr int kGroup = FLASHC_GQA_GROUP;
constexpr int kHeadsKV = kHeadsQ / kGroup;
#if FLASHC_F16
using Elem = f16;
#else
using Elem = bf16;
#endif
constexpr float kScale = float(1.0 / constexpr_sqrt(kHeadDim));
constexpr float kSoftcap = FLASHC_SOFTCAP;
using Mask = Window<FLASHC_WINDOW_LEFT, FLASHC_CAUSAL ? 0 : FLASHC_WINDOW_RIGHT>;
constexpr float kSoftmaxScale = kSoftcap > 0.f ? 1.f : kScale;
constexpr float kScaleLog2 = kSoftmaxScale * kLog2e;  // folded exponent scale
// ---- memory plan ----
#ifndef FLASHC_BWD_BLOCK_N  // 128 keys / 8 warps measured faster than 64 / 4 (NOTES.md)
#define FLASHC_BWD_BLOCK_N 128
#endif
constexpr int kBlockM = 64;                  // query rows per inner iteration
constexpr int kBlockN = FLASHC_BWD_BLOCK_N;  // keys per thread block
constexpr int kWarps = kBlockN / 16;         // one 16-key band per warp
constexpr int kThreads = kWarps * 32;
constexpr int kMinBlocksPerSM = kWarps <= 4 ? 2 : 1;
#ifndef FLASHC_BWD_WIDE_ATOMIC
#define FLASHC_BWD_WIDE_ATOMIC 0
#endif
constexpr bool kWideAtomic = FLASHC_BWD_WIDE_ATOMIC != 0;  // 16-byte dQ reductions (lab variant)
#ifndef FLASHC_BWD_DQ_BULK
#define FLASHC_BWD_DQ_BULK 0
#endif
constexpr bool kDqBulk = FLASHC_BWD_DQ_BULK != 0;  // dQ via shared f32 tile + TMA bulk reduce-add  // 2 x 4 warps or 1 x 8 warps, <= 255 registers
// dQ [kBlockM][D] uses a 2-D warp layout: kDqBands row bands x kDqGroups column groups, each
// group computing its columns in slices of kDqCols (register budget).
constexpr int kDqBands = kBlockM / 16;
constexpr int kDqGroups = kWarps / kDqBands;
constexpr int kDqGroupCols = kHeadDim / kDqGroups;
constexpr int kDqCols = kDqGroupCols <= 64 ? kDqGroupCols : (kDqGroupCols % 64 == 0 ? 64 : 32);
constexpr int kRowsPerAuxBlock = 64;  // pre/postprocess rows per block
using QTile = SmemTile<Elem, kBlockM, kHeadDim>;
using KTile = SmemTile<Elem, kBlockN, kHeadDim>;
using DSTile = SmemTile<Elem, kBlockN, kBlockM>;  // dS^T [key][query]
constexpr int kSmemK = 0;
constexpr int kSmemV = kSmemK + KTile::kBytes;
constexpr int kSmemQ0 = kSmemV + KTile::kBytes;          // Q stage 0, 1
constexpr int kSmemDO0 = kSmemQ0 + 2 * QTile::kBytes;    // dO stage 0, 1
constexpr int kSmemDS = kSmemDO0 + 2 * QTile::kBytes;
constexpr int kSmemLse0 = kSmemDS + DSTile::kBytes;      // float[kBlockM] stage 0, 1
constexpr int kSmemDelta0 = kSmemLse0 + 2 * kBlockM * 4;  // float[kBlockM] stage 0, 1
using DQTile = SmemTileF32<kBlockM, kHeadDim>;
constexpr int kSmemDQ = kSmemDelta0 + 2 * kBlockM * 4;  // only with kDqBulk
constexpr int kSmemBytes = kSmemDQ + (kDqBulk ? DQTile::kBytes : 0);
}  // namespace bwd_config

// Preprocess. Grid: (ceil(Sq / 64), Hq, B), 128 threads. D = rowsum(dO * O); dQ_accum = 0.
extern "C" __global__ void __launch_bounds__(128)
FLASHC_PASTE(FLASHC_KERNEL_PREFIX, _bwd_preprocess)(flashc::TensorArg o, flashc::TensorArg dout,
                                                    flashc::TensorArg delta,
                                                    flashc::TensorArg dq_accum FLASHC_BWD_SEMAPHORE_PARAM) {
  using namespace flashc::device;
  using namespace bwd_config;
  const int q0 = blockIdx.x * kRowsPerAuxBlock, head = blockIdx.y, batch = blockIdx.z;
  row_dot_global<128, kHeadDim>(vector_at<float>(delta, batch, head), matrix_at<Elem>(dout, batch, head),
                         matrix_at<Elem>(o, batch, head), q0, kRowsPerAuxBlock);
  fill_rows<128, kHeadDim>(matrix_at<float>(dq_accum, batch, head), q0, kRowsPerAuxBlock, 0.f);
#if FLASHC_BWD_DETERMINISTIC
  if (threadIdx.x == 0) vector_at<int>(dq_semaphore, batch, head).base[blockIdx.x * dq_semaphore.stride[2]] = 0;
#endif
}

// Main. Grid: (ceil(Sk / kBlockN), Hkv, B); kThreads threads; kSmemBytes dynamic shared memory.
// One block owns keys [k0, k0 + kBlockN) of one KV head and loops over every query block of
// every query head of its GQA group, so dK/dV need no atomics; dQ goes through f32 atomics.
extern "C" __global__ void __launch_bounds__(bwd_config::kThreads, bwd_config::kMinBlocksPerSM)
FLASHC_PASTE(FLASHC_KERNEL_PREFIX, _bwd)(flashc::TensorArg q, flashc::TensorArg k, flashc::TensorArg v,
                                         flashc::TensorArg dout, flashc::TensorArg lse, flashc::TensorArg delta,
                                         flashc::TensorArg dq_accum, flashc::TensorArg dk,
                                         flashc::TensorArg dv FLASHC_BWD_SEMAPHORE_PARAM) {
  using namespace flashc::device;
  using namespace bwd_config;
  extern __shared__ __align__(128) unsigned char smem[];

  const int Sq = static_cast<int>(q.shape[2]), Sk = static_cast<int>(k.shape[2]);
  const int diag = Sk - Sq;
  const int k0 = blockIdx.x * kBlockN, kv_head = blockIdx.y, batch = blockIdx.z;

  const KTile Ks = smem_tile_at<KTile>(smem, kSmemK);
  const KTile Vs = smem_tile_at<KTile>(smem, kSmemV);
  const DSTile dSs = smem_tile_at<DSTile>(smem, kSmemDS);

  // Loop bounds: query blocks that see any of these keys; iterations run over (group head, block).
  const int m_begin = Mask::query_block_begin(k0, kBlockN, kBlockM, Sq, diag);
  const int m_end = Mask::query_block_end(k0, kBlockN, kBlockM, Sq, diag);
  const int num_m = m_end > m_begin ? m_end - m_begin : 0;
  const int num_iters = kGroup * num_m;

  // Stage loads of iteration `it` (Q, dO tiles; lse, D vectors) into buffer it & 1.
  auto prefetch = [&](int it) {
    const int head = kv_head * kGroup + it / num_m, q0 = (m_begin + it % num_m) * kBlockM, st = it & 1;
    load_tile_async<kThreads>(smem_tile_at<QTile>(smem, kSmemQ0 + st * QTile::kBytes),
                              matrix_at<Elem>(q, batch, head), q0);
    load_tile_async<kThreads>(smem_tile_at<QTile>(smem, kSmemDO0 + st * QTile::kBytes),
                              matrix_at<Elem>(dout, batch, head), q0);
    load_vector_async<kThreads, kBlockM>(reinterpret_cast<float*>(smem + kSmemLse0 + st * kBlockM * 4),
                                         vector_at<float>(lse, batch, head), q0, -INFINITY);
    load_vector_async<kThreads, kBlockM>(reinterpret_cast<float*>(smem + kSmemDelta0 + st * kBlockM * 4),
                                         vector_at<float>(delta, batch, head), q0, 0.f);
  };

  // Prologue: K, V of this block plus the first query block (one group).
  load_tile_async<kThreads>(Ks, matrix_at<Elem>(k, batch, kv_head), k0);
  load_tile_async<kThreads>(Vs, matrix_at<Elem>(v, batch, kv_head), k0);
  if (num_iters > 0) prefetch(0);
  cp_async_commit();

  RegTileF32<kBlockN, kHeadDim, kWarps> acc_dk, acc_dv;
  fill(acc_dk, 0.f);
  fill(acc_dv, 0.f);

  for (int it = 0; it < num_iters; ++it) {
    const int st = it & 1;
    const int head = kv_head * kGroup + it / num_m, q0 = (m_begin + it % num_m) * kBlockM;
    const QTile Qs = smem_tile_at<QTile>(smem, kSmemQ0 + st * QTile::kBytes);
    const QTile dOs = smem_tile_at<QTile>(smem, kSmemDO0 + st * QTile::kBytes);
    const float* lse_s = reinterpret_cast<const float*>(smem + kSmemLse0 + st * kBlockM * 4);
    const float* delta_s = reinterpret_cast<const float*>(smem + kSmemDelta0 + st * kBlockM * 4);
    if (it + 1 < num_iters) {  // double buffering
      prefetch(it + 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    if constexpr (kDqBulk) bulk_wait_read<0>();  // previous dQ rows read out of shared memory
    __syncthreads();

    // S^T = K Q^T (keys x queries), softcap, mask on boundary blocks
    RegTileF32<kBlockN, kBlockM, kWarps> st_p;
    fill(st_p, 0.f);
    matmul_tb(st_p, Ks, Qs);
    RegTileF32<kBlockN, kBlockM, kWarps> cap_grad;
    if constexpr (kSoftcap > 0.f) softcap(st_p, cap_grad, kScale, kSoftcap);
    if (Mask::needs_mask(q0, kBlockM, k0, kBlockN, Sk, diag)) mask_transposed<Mask>(st_p, k0, q0, Sk, diag);
    // P^T = exp(scale * S^T - lse)  (0 where lse = -inf)
    recompute_probs_cols(st_p, lse_s, kScaleLog2);

    // dP^T = V dO^T ; dS^T = P^T * (dP^T - D) [* (1 - tanh^2)]
    RegTileF32<kBlockN, kBlockM, kWarps> ds;
    fill(ds, 0.f);
    matmul_tb(ds, Vs, dOs);
    softmax_grad_cols(ds, st_p, delta_s);
    if constexpr (kSoftcap > 0.f) multiply(ds, cap_grad);

    // dV += P^T dO ; dK += dS^T Q (scale applied once at the end)
    RegTile16<Elem, kBlockN, kBlockM, kWarps> p16, ds16;
    convert(p16, st_p);
    matmul(acc_dv, p16, dOs);
    convert(ds16, ds);
    matmul(acc_dk, ds16, Qs);

    // dQ_accum += dS K: dS^T goes through shared memory, read back transposed.
    store_fragments(dSs, ds16);
    __syncthreads();
    const GlobalMatrix<float> dQg = matrix_at<float>(dq_accum, batch, head);
    const int dq_col0 = (warp_id() / kDqBands) * kDqGroupCols;  // this warp's column group
#if FLASHC_BWD_DETERMINISTIC
    // Key blocks that see this query block add in increasing key-block order.
    static_assert(kBlockM == kRowsPerAuxBlock, "one semaphore per preprocess row block");
    int* dq_turn = vector_at<int>(dq_semaphore, batch, head).base + (q0 / kBlockM) * dq_semaphore.stride[2];
    wait_turn(dq_turn, blockIdx.x - Mask::key_block_begin(q0, kBlockM, kBlockN, Sk, diag));
#endif
#ifndef FLASHC_LAB_SKIP_DQ  // lab timing experiment only (leave the dQ stage out); never set in use
    if constexpr (kDqBulk) {
      // dQ tile -> shared f32 -> one bulk reduce-add per row (the copy engine does the atomics)
      const DQTile dQs{reinterpret_cast<float*>(smem + kSmemDQ)};
#pragma unroll
      for (int c = 0; c < kDqGroupCols; c += kDqCols) {
        RegTileF32<kBlockM, kDqCols, kDqBands> dq;
        fill(dq, 0.f);
        matmul_ta(dq, dSs, Ks, dq_col0 + c);
        store_fragments(dQs, dq, dq_col0 + c);
      }
      fence_async_shared();
      __syncthreads();
      bulk_reduce_add_rows(dQg, q0, dQs);
    } else
#pragma unroll
    for (int c = 0; c < kDqGroupCols; c += kDqCols) {
      RegTileF32<kBlockM, kDqCols, kDqBands> dq;
      fill(dq, 0.f);
      matmul_ta(dq, dSs, Ks, dq_col0 + c);
#ifdef FLASHC_LAB_SKIP_DQ_ATOMIC  // lab timing experiment: matmul kept, atomics left out
      if (dq.v[0][0][0] == 1.2345e-30f) atomic_add<kWideAtomic>(columns_from(dQg, dq_col0 + c), q0, dq);
#else
      atomic_add<kWideAtomic>(columns_from(dQg, dq_col0 + c), q0, dq);
#endif
    }
#if FLASHC_BWD_DETERMINISTIC
    pass_turn(dq_turn);
#endif
#endif
    __syncthreads();  // dSs and this stage are rewritten next iteration
  }
  cp_async_wait<0>();
  if constexpr (kDqBulk) bulk_wait_all();
  __syncthreads();

  // Epilogue: dK = scale * acc_dk, dV = acc_dv, through shared memory (K, V no longer read).
  scale(acc_dk, kScale);
  RegTile16<Elem, kBlockN, kHeadDim, kWarps> dk16, dv16;
  convert(dk16, acc_dk);
  convert(dv16, acc_dv);
  store_fragments(Ks, dk16);
  store_fragments(Vs, dv16);
  __syncthreads();
  store_tile<kThreads>(matrix_at<Elem>(dk, batch, kv_head), k0, Ks);
  store_tile<kThreads>(matrix_at<Elem>(dv, batch, kv_head), k0, Vs);
}

// Postprocess. Grid: (ceil(Sq / 64), Hq, B), 128 threads. dQ = scale * dQ_accum.
extern "C" __global__ void __launch_bounds__(128)
FLASHC_PASTE(FLASHC_KERNEL_PREFIX, _bwd_postprocess)(flashc::TensorArg dq_accum, flashc::TensorArg dq) {
  using namespace flashc::device;
  using namespace bwd_config;
  const int q0 = blockIdx.x * kRowsPerAuxBlock, head = blockIdx.y, batch = blockIdx.z;
  convert_rows<128, kHeadDim>(matrix_at<Elem>(dq, batch, head), matrix_at<float>(dq_accum, batch, head), q0,
                              kRowsPerAuxBlock, kScale);
}
