// Golden attention forward, written the way the CUDA emitter prints a tile.kernel:
// constexpr config first (what flash-plan-memory decided), then one kernel, top to bottom,
// one device-library call per tile op. Spec: O = softmax(scale * Q K^T + mask) V, lse saved.
//
// Config comes from -D macros here so one file covers every variant in tests; a generated
// kernel has literal constants instead.
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
#ifndef FLASHC_WINDOW_RIGHT  // causal forces 0
#define FLASHC_WINDOW_RIGHT (-1)
#endif
#ifndef FLASHC_MIN_BLOCKS
#define FLASHC_MIN_BLOCKS 1
#endif
#ifndef FLASHC_SOFTCAP
#define FLASHC_SOFTCAP 0.0f
#endif

namespace fwd_config {
using namespace flashc::device;
// ---- spec parameters ----
constexpr int kHeadDim = FLASHC_HEAD_DIM;
constexpr int kHeadsQ = FLASHC_HEADS_Q;
constexpr int kGroup = FLASHC_GQA_GROUP;  // query heads per KV head
constexpr int kHeadsKV = kHeadsQ / kGroup;
#if FLASHC_F16
using Elem = f16;
#else
using Elem = bf16;
#endif
constexpr float kScale = float(1.0 / constexpr_sqrt(kHeadDim));
constexpr float kSoftcap = FLASHC_SOFTCAP;  // 0: off
using Mask = Window<FLASHC_WINDOW_LEFT, FLASHC_CAUSAL ? 0 : FLASHC_WINDOW_RIGHT>;
// Softmax scale of the exp2/correction/lse ops: softcap already applied the scale.
constexpr float kSoftmaxScale = kSoftcap > 0.f ? 1.f : kScale;
constexpr float kScaleLog2 = kSoftmaxScale * kLog2e;  // folded exponent scale
// Causal: later query blocks see more key blocks; schedule them first (fewer stragglers).
constexpr bool kLongestFirst = Mask::R >= 0 && Mask::L < 0;
// ---- memory plan ----
#ifdef FLASHC_FWD_BLOCK_M  // lab overrides for tuning
constexpr int kBlockM = FLASHC_FWD_BLOCK_M, kBlockN = FLASHC_FWD_BLOCK_N, kWarps = FLASHC_FWD_WARPS;
constexpr bool kQInRegisters = FLASHC_FWD_Q_IN_REGS;
#else  // measured on the H200 (bench/kernel_lab/NOTES.md): 4 warps x 32 query rows
constexpr int kBlockM = kHeadDim <= 128 ? 128 : 64;
constexpr int kBlockN = kHeadDim <= 128 ? 64 : 32;
constexpr int kWarps = 4;
constexpr bool kQInRegisters = kHeadDim <= 64;  // D = 128: registers go to the O accumulator
#endif
constexpr int kThreads = kWarps * 32;
constexpr int kMinBlocksPerSM = FLASHC_MIN_BLOCKS;
using QTile = SmemTile<Elem, kBlockM, kHeadDim>;
using KVTile = SmemTile<Elem, kBlockN, kHeadDim>;
constexpr int kSmemQ = 0;                                  // Q, later reused for O
constexpr int kSmemK0 = kSmemQ + QTile::kBytes;            // K stage 0, 1
constexpr int kSmemV0 = kSmemK0 + 2 * KVTile::kBytes;      // V stage 0, 1
constexpr int kSmemBytes = kSmemV0 + 2 * KVTile::kBytes;
}  // namespace fwd_config

// Grid: (ceil(Sq / kBlockM), kHeadsQ, B); kThreads threads; kSmemBytes dynamic shared memory.
// q [B,Hq,Sq,D], k/v [B,Hkv,Sk,D], o [B,Hq,Sq,D], lse [B,Hq,Sq] f32 (any strides, inner dim 1).
extern "C" __global__ void __launch_bounds__(fwd_config::kThreads, fwd_config::kMinBlocksPerSM)
FLASHC_KERNEL_NAME(flashc::TensorArg q, flashc::TensorArg k, flashc::TensorArg v, flashc::TensorArg o,
                   flashc::TensorArg lse) {
  using namespace flashc::device;
  using namespace fwd_config;
  extern __shared__ __align__(128) unsigned char smem[];

  // Block coordinates. Causal: the last query blocks have the most key blocks, launch them first.
  const int Sq = static_cast<int>(q.shape[2]), Sk = static_cast<int>(k.shape[2]);
  const int diag = Sk - Sq;  // bottom-right alignment of the causal mask
  const int m_block = kLongestFirst ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int head = blockIdx.y, batch = blockIdx.z, kv_head = head / kGroup;
  const int q0 = m_block * kBlockM;

  const GlobalMatrix<Elem> Qg = matrix_at<Elem>(q, batch, head);
  const GlobalMatrix<Elem> Kg = matrix_at<Elem>(k, batch, kv_head);
  const GlobalMatrix<Elem> Vg = matrix_at<Elem>(v, batch, kv_head);
  const GlobalMatrix<Elem> Og = matrix_at<Elem>(o, batch, head);
  const GlobalVector<float> Lg = vector_at<float>(lse, batch, head);

  const QTile Qs = smem_tile_at<QTile>(smem, kSmemQ);

  // Loop bounds: key blocks this query block can see (wholly masked blocks are never visited).
  const int n_begin = Mask::key_block_begin(q0, kBlockM, kBlockN, Sk, diag);
  const int n_end = Mask::key_block_end(q0, kBlockM, kBlockN, Sk, diag);

  // Online-softmax state: O accumulator, running max m, running sum l.
  RegTileF32<kBlockM, kHeadDim, kWarps> acc_o;
  RegRowVec<kBlockM, kWarps> row_m, row_l;
  fill(acc_o, 0.f);
  fill(row_m, -INFINITY);
  fill(row_l, 0.f);
  RegTile16<Elem, kBlockM, kHeadDim, kWarps> q_frag;

  // Prologue: Q and the first K/V block in flight (one cp.async group).
  load_tile_async<kThreads>(Qs, Qg, q0);
  if (n_begin < n_end) {
    load_tile_async<kThreads>(smem_tile_at<KVTile>(smem, kSmemK0), Kg, n_begin * kBlockN);
    load_tile_async<kThreads>(smem_tile_at<KVTile>(smem, kSmemV0), Vg, n_begin * kBlockN);
  }
  cp_async_commit();

  for (int n = n_begin; n < n_end; ++n) {
    const int stage = (n - n_begin) & 1;
    const int k0 = n * kBlockN;
    const KVTile Ks = smem_tile_at<KVTile>(smem, kSmemK0 + stage * KVTile::kBytes);
    const KVTile Vs = smem_tile_at<KVTile>(smem, kSmemV0 + stage * KVTile::kBytes);
    const KVTile Ks_next = smem_tile_at<KVTile>(smem, kSmemK0 + (stage ^ 1) * KVTile::kBytes);
    const KVTile Vs_next = smem_tile_at<KVTile>(smem, kSmemV0 + (stage ^ 1) * KVTile::kBytes);
    // Double buffering: prefetch block n+1 into the other stage while block n is computed.
    if (n + 1 < n_end) {
      load_tile_async<kThreads>(Ks_next, Kg, k0 + kBlockN);
      load_tile_async<kThreads>(Vs_next, Vg, k0 + kBlockN);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if (kQInRegisters && n == n_begin) load_fragments(q_frag, Qs);  // Q stays in registers

    // S = Q K^T (raw scores, f32)
    RegTileF32<kBlockM, kBlockN, kWarps> s;
    fill(s, 0.f);
    if constexpr (kQInRegisters) matmul_tb(s, q_frag, Ks);
    else matmul_tb(s, Qs, Ks);
    // softcap, then mask (boundary blocks only)
    if constexpr (kSoftcap > 0.f) softcap(s, kScale, kSoftcap);
    if (Mask::needs_mask(q0, kBlockM, k0, kBlockN, Sk, diag)) mask<Mask>(s, q0, k0, Sk, diag);

    // Online softmax: m_new = max(m, rowmax S); P = exp2((S - m_new) * scale * log2e);
    // O *= correction; l = l * correction + rowsum P.
    const RegRowVec<kBlockM, kWarps> m_new = row_max(s, row_m);
    const RegRowVec<kBlockM, kWarps> corr = softmax_correction(row_m, m_new, kScaleLog2);
    exp2(s, m_new, kScaleLog2);
    row_l = online_sum(row_l, corr, s);
    rescale(acc_o, corr);
    row_m = m_new;

    // O += P V, P straight from registers (C layout of S == A layout of P)
    RegTile16<Elem, kBlockM, kBlockN, kWarps> p;
    convert(p, s);
    matmul(acc_o, p, Vs);
    __syncthreads();  // stage is overwritten by the next iteration's prefetch
  }
  cp_async_wait<0>();  // no-KV case: Q group still pending

  // Epilogue: O /= l (0 for rows that saw no key), lse = m*scale + ln l (-inf for those rows).
  normalize(acc_o, row_l);
  store_rows(Lg, q0, Sq, logsumexp(row_m, row_l, kSoftmaxScale));
  RegTile16<Elem, kBlockM, kHeadDim, kWarps> o_out;
  convert(o_out, acc_o);
  __syncthreads();  // every warp is done reading Qs
  store_fragments(Qs, o_out);
  __syncthreads();
  store_tile<kThreads>(Og, q0, Qs);
}
