// Golden attention forward, strategy wgmma_sm90 (Hopper warpgroup MMA), in emitter style.
// Same spec, arguments, grid and numerics as attention_fwd.cu; what changes is the matmul
// strategy: two warpgroups each own 64 query rows; S = Q K^T and O += P V are wgmma with Q, K, V
// in 128B-swizzled panel tiles (SmemPanelTile) read through descriptors and P taken from
// registers (the wgmma accumulator layout equals the mma.sync C layout, so every softmax/mask
// library call is reused unchanged). Loads stay cp.async double buffered.
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
#ifndef FLASHC_WG_BLOCK_N
#define FLASHC_WG_BLOCK_N 128
#endif
#ifndef FLASHC_WG_V_SWAP  // lab hedge: swap LBO/SBO of the MN-major V descriptor
#define FLASHC_WG_V_SWAP 0
#endif

namespace fwd_config {
using namespace flashc::device;
// ---- spec parameters ----
constexpr int kHeadDim = FLASHC_HEAD_DIM;
static_assert(kHeadDim == 64 || kHeadDim == 128, "wgmma forward: head dim 64 or 128");
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
constexpr bool kLongestFirst = Mask::R >= 0 && Mask::L < 0;
// ---- memory plan ----
constexpr int kBlockM = 128;  // 2 warpgroups x 64 rows
constexpr int kBlockN = FLASHC_WG_BLOCK_N;
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
using QTile = SmemPanelTile<Elem, kBlockM, kHeadDim>;
using KVTile = SmemPanelTile<Elem, kBlockN, kHeadDim>;
using OTile = SmemTile<Elem, kBlockM, kHeadDim>;  // epilogue staging, over Q
constexpr int kSmemQ = 0;
constexpr int kSmemK0 = kSmemQ + QTile::kBytes;
constexpr int kSmemV0 = kSmemK0 + 2 * KVTile::kBytes;
constexpr int kSmemBytes = kSmemV0 + 2 * KVTile::kBytes + 1024;  // + slack to align the base to 1024 B
// Descriptor byte offsets (see panel.cuh).
constexpr unsigned kSbo = 1024;
constexpr unsigned kVLbo = FLASHC_WG_V_SWAP ? 1024 : KVTile::kPanelBytes;
constexpr unsigned kVSbo = FLASHC_WG_V_SWAP ? KVTile::kPanelBytes : 1024;
}  // namespace fwd_config

// Grid: (ceil(Sq / kBlockM), kHeadsQ, B); kThreads threads; kSmemBytes dynamic shared memory.
extern "C" __global__ void __launch_bounds__(fwd_config::kThreads, 1)
FLASHC_KERNEL_NAME(flashc::TensorArg q, flashc::TensorArg k, flashc::TensorArg v, flashc::TensorArg o,
                   flashc::TensorArg lse) {
  using namespace flashc::device;
  using namespace fwd_config;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // swizzled panels need 1024-byte aligned bases
  unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);

  const int Sq = static_cast<int>(q.shape[2]), Sk = static_cast<int>(k.shape[2]);
  const int offset = Sk - Sq;
  const int m_block = kLongestFirst ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int head = blockIdx.y, batch = blockIdx.z, kv_head = head / kGroup;
  const int q0 = m_block * kBlockM;
  const int warpgroup = warp_id() / 4;

  const GlobalMatrix<Elem> Kg = matrix_at<Elem>(k, batch, kv_head);
  const GlobalMatrix<Elem> Vg = matrix_at<Elem>(v, batch, kv_head);
  const QTile Qs{reinterpret_cast<Elem*>(smem + kSmemQ)};

  const int n_begin = Mask::key_block_begin(q0, kBlockM, kBlockN, Sk, offset);
  const int n_end = Mask::key_block_end(q0, kBlockM, kBlockN, Sk, offset);

  RegTileF32<kBlockM, kHeadDim, kWarps> acc_o;  // = the two warpgroups' wgmma accumulators
  RegRowVec<kBlockM, kWarps> row_m, row_l;
  fill(acc_o, 0.f);
  fill(row_m, -INFINITY);
  fill(row_l, 0.f);

  load_tile_async<kThreads>(Qs, matrix_at<Elem>(q, batch, head), q0);
  if (n_begin < n_end) {
    load_tile_async<kThreads>(KVTile{reinterpret_cast<Elem*>(smem + kSmemK0)}, Kg, n_begin * kBlockN);
    load_tile_async<kThreads>(KVTile{reinterpret_cast<Elem*>(smem + kSmemV0)}, Vg, n_begin * kBlockN);
  }
  cp_async_commit();

  for (int n = n_begin; n < n_end; ++n) {
    const int stage = (n - n_begin) & 1;
    const int k0 = n * kBlockN;
    const KVTile Ks{reinterpret_cast<Elem*>(smem + kSmemK0 + stage * KVTile::kBytes)};
    const KVTile Vs{reinterpret_cast<Elem*>(smem + kSmemV0 + stage * KVTile::kBytes)};
    if (n + 1 < n_end) {
      load_tile_async<kThreads>(KVTile{reinterpret_cast<Elem*>(smem + kSmemK0 + (stage ^ 1) * KVTile::kBytes)}, Kg,
                                k0 + kBlockN);
      load_tile_async<kThreads>(KVTile{reinterpret_cast<Elem*>(smem + kSmemV0 + (stage ^ 1) * KVTile::kBytes)}, Vg,
                                k0 + kBlockN);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    fence_async_shared();  // cp.async data is read by wgmma (async proxy)
    __syncthreads();

    // S = Q K^T : per warpgroup m64 n(kBlockN) k16 steps, Q and K K-major panels
    RegTileF32<kBlockM, kBlockN, kWarps> s;
    fill(s, 0.f);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      const unsigned q_addr = Qs.base() + (kk / 4) * QTile::kPanelBytes + warpgroup * 64 * 128 + (kk % 4) * 32;
      const unsigned k_addr = Ks.base() + (kk / 4) * KVTile::kPanelBytes + (kk % 4) * 32;
      wgmma_ss<Elem, kBlockN>(&s.v[0][0][0], wgmma_desc(q_addr, 16, kSbo), wgmma_desc(k_addr, 16, kSbo));
    }
    wgmma_commit();
    wgmma_wait<0>();

    if constexpr (kSoftcap > 0.f) softcap(s, kScale, kSoftcap);
    if (Mask::needs_mask(q0, kBlockM, k0, kBlockN, Sk, offset)) mask<Mask>(s, q0, k0, Sk, offset);

    const RegRowVec<kBlockM, kWarps> m_new = row_max(s, row_m);
    const RegRowVec<kBlockM, kWarps> corr = softmax_correction(row_m, m_new, kScaleLog2);
    exp2(s, m_new, kScaleLog2);
    row_l = online_sum(row_l, corr, s);
    rescale(acc_o, corr);
    row_m = m_new;

    // O += P V : P from registers (A), V MN-major panels (transpose bit)
    RegTile16<Elem, kBlockM, kBlockN, kWarps> p;
    convert(p, s);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      const unsigned a[4] = {p.v[0][2 * kk][0], p.v[0][2 * kk][1], p.v[0][2 * kk + 1][0], p.v[0][2 * kk + 1][1]};
      wgmma_rs_tb<Elem, kHeadDim>(&acc_o.v[0][0][0], a, wgmma_desc(Vs.base() + kk * 16 * 128, kVLbo, kVSbo));
    }
    wgmma_commit();
    wgmma_wait<0>();
    __syncthreads();  // this stage is overwritten by the next prefetch
  }
  cp_async_wait<0>();

  normalize(acc_o, row_l);
  store_rows(vector_at<float>(lse, batch, head), q0, Sq, logsumexp(row_m, row_l, kSoftmaxScale));
  RegTile16<Elem, kBlockM, kHeadDim, kWarps> o_out;
  convert(o_out, acc_o);
  __syncthreads();
  const OTile Os{reinterpret_cast<Elem*>(smem + kSmemQ)};
  store_fragments(Os, o_out);
  __syncthreads();
  store_tile<kThreads>(matrix_at<Elem>(o, batch, head), q0, Os);
}
