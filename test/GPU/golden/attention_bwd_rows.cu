// Golden attention backward main kernel in the *row form* of the tile dialect
// (docs/tile-dialect.md): score tiles S[q][k] distributed over warps by query rows, lse and D
// as register row vectors (tile.load_rows), tile.recompute_probs / tile.softmax_grad, P and dS
// copied to shared memory (tile.copy) to feed dV += P^T dO and dK += dS^T Q as transpose_a
// matmuls, dQ += dS K straight from registers. Exactly one library call per tile op.
// Same preprocess / postprocess kernels and argument list as attention_bwd.cu; this is the
// shape the emitter produces from today's dialect. attention_bwd.cu (S^T form: P^T, dS^T in
// registers, one shared round trip instead of two) is the faster alternative.
#include "attention_bwd.cu"

namespace bwd_rows_config {
using namespace flashc::device;
using bwd_config::Elem;
using bwd_config::Mask;
constexpr int kHeadDim = bwd_config::kHeadDim;
constexpr int kGroup = bwd_config::kGroup;
constexpr float kScale = bwd_config::kScale;
constexpr float kSoftcap = bwd_config::kSoftcap;
constexpr float kSoftmaxScale = bwd_config::kSoftmaxScale;
constexpr float kScaleLog2 = bwd_config::kScaleLog2;
// ---- memory plan ----
constexpr int kBlockM = 64;  // query rows per iteration (S, dP, dQ rows: 16 per warp)
constexpr int kBlockN = 64;  // keys per block (dK, dV rows: 16 per warp)
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kDqCols = kHeadDim <= 64 ? kHeadDim : (kHeadDim % 64 == 0 ? 64 : 32);
using QTile = SmemTile<Elem, kBlockM, kHeadDim>;
using KTile = SmemTile<Elem, kBlockN, kHeadDim>;
using PTile = SmemTile<Elem, kBlockM, kBlockN>;  // P and dS [query][key]
constexpr int kSmemK = 0;
constexpr int kSmemV = kSmemK + KTile::kBytes;
constexpr int kSmemQ0 = kSmemV + KTile::kBytes;        // Q stage 0, 1
constexpr int kSmemDO0 = kSmemQ0 + 2 * QTile::kBytes;  // dO stage 0, 1
constexpr int kSmemP = kSmemDO0 + 2 * QTile::kBytes;
constexpr int kSmemDS = kSmemP + PTile::kBytes;
constexpr int kSmemBytes = kSmemDS + PTile::kBytes;
}  // namespace bwd_rows_config

// Grid: (ceil(Sk / kBlockN), Hkv, B); kThreads threads; kSmemBytes dynamic shared memory.
extern "C" __global__ void __launch_bounds__(bwd_rows_config::kThreads, 2)
FLASHC_PASTE(FLASHC_KERNEL_PREFIX, _bwd_rows)(flashc::TensorArg q, flashc::TensorArg k, flashc::TensorArg v,
                                              flashc::TensorArg dout, flashc::TensorArg lse, flashc::TensorArg delta,
                                              flashc::TensorArg dq_accum, flashc::TensorArg dk, flashc::TensorArg dv) {
  using namespace flashc::device;
  using namespace bwd_rows_config;
  extern __shared__ __align__(128) unsigned char smem[];

  const int Sq = static_cast<int>(q.shape[2]), Sk = static_cast<int>(k.shape[2]);
  const int offset = Sk - Sq;
  const int k0 = blockIdx.x * kBlockN, kv_head = blockIdx.y, batch = blockIdx.z;
  const KTile Ks = smem_tile_at<KTile>(smem, kSmemK);
  const KTile Vs = smem_tile_at<KTile>(smem, kSmemV);
  const PTile Ps = smem_tile_at<PTile>(smem, kSmemP);
  const PTile dSs = smem_tile_at<PTile>(smem, kSmemDS);

  // scf.for over (group head, query block) with bounds that skip wholly masked blocks
  const int m_begin = Mask::query_block_begin(k0, kBlockN, kBlockM, Sq, offset);
  const int m_end = Mask::query_block_end(k0, kBlockN, kBlockM, Sq, offset);
  const int num_m = m_end > m_begin ? m_end - m_begin : 0;
  const int num_iters = kGroup * num_m;

  // tile.load k, v (buffers = 1); tile.load q, dout (buffers = 2)
  load_tile_async<kThreads>(Ks, matrix_at<Elem>(k, batch, kv_head), k0);
  load_tile_async<kThreads>(Vs, matrix_at<Elem>(v, batch, kv_head), k0);
  if (num_iters > 0) {
    load_tile_async<kThreads>(smem_tile_at<QTile>(smem, kSmemQ0), matrix_at<Elem>(q, batch, kv_head * kGroup), m_begin * kBlockM);
    load_tile_async<kThreads>(smem_tile_at<QTile>(smem, kSmemDO0), matrix_at<Elem>(dout, batch, kv_head * kGroup), m_begin * kBlockM);
  }
  cp_async_commit();

  // tile.fill 0.0 (dK, dV accumulators)
  RegTileF32<kBlockN, kHeadDim, kWarps> acc_dk, acc_dv;
  fill(acc_dk, 0.f);
  fill(acc_dv, 0.f);

  for (int it = 0; it < num_iters; ++it) {
    const int head = kv_head * kGroup + it / num_m, q0 = (m_begin + it % num_m) * kBlockM, st = it & 1;
    const QTile Qs = smem_tile_at<QTile>(smem, kSmemQ0 + st * QTile::kBytes);
    const QTile dOs = smem_tile_at<QTile>(smem, kSmemDO0 + st * QTile::kBytes);
    if (it + 1 < num_iters) {  // prefetch the next query block into the other buffer
      const int head_n = kv_head * kGroup + (it + 1) / num_m, q0_n = (m_begin + (it + 1) % num_m) * kBlockM;
      load_tile_async<kThreads>(smem_tile_at<QTile>(smem, kSmemQ0 + (st ^ 1) * QTile::kBytes),
                                matrix_at<Elem>(q, batch, head_n), q0_n);
      load_tile_async<kThreads>(smem_tile_at<QTile>(smem, kSmemDO0 + (st ^ 1) * QTile::kBytes),
                                matrix_at<Elem>(dout, batch, head_n), q0_n);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();

    // %s = tile.matmul %q, %k transpose_b ; tile.softcap ; tile.mask (boundary blocks)
    RegTileF32<kBlockM, kBlockN, kWarps> s;
    fill(s, 0.f);
    matmul_tb(s, Qs, Ks);
    RegTileF32<kBlockM, kBlockN, kWarps> cap_grad;
    if constexpr (kSoftcap > 0.f) softcap(s, cap_grad, kScale, kSoftcap);
    if (Mask::needs_mask(q0, kBlockM, k0, kBlockN, Sk, offset)) mask<Mask>(s, q0, k0, Sk, offset);
    // %lse = tile.load_rows ; %p = tile.recompute_probs %s, %lse scale F
    RegRowVec<kBlockM, kWarps> lse_rows, d_rows;
    load_rows(lse_rows, vector_at<float>(lse, batch, head), q0, Sq);
    load_rows(d_rows, vector_at<float>(delta, batch, head), q0, Sq);
    recompute_probs(s, lse_rows, kScaleLog2);
    // %dp = tile.matmul %dout, %v transpose_b ; %ds = tile.softmax_grad %p, %dp, %d [; tile.mul]
    RegTileF32<kBlockM, kBlockN, kWarps> dp;
    fill(dp, 0.f);
    matmul_tb(dp, dOs, Vs);
    softmax_grad(dp, s, d_rows);
    if constexpr (kSoftcap > 0.f) multiply(dp, cap_grad);
    // tile.convert ; tile.copy P, dS -> shared
    RegTile16<Elem, kBlockM, kBlockN, kWarps> p16, ds16;
    convert(p16, s);
    convert(ds16, dp);
    store_fragments(Ps, p16);
    store_fragments(dSs, ds16);
    __syncthreads();
    // dV += P^T dO ; dK += dS^T Q   (tile.matmul transpose_a)
    matmul_ta(acc_dv, Ps, dOs);
    matmul_ta(acc_dk, dSs, Qs);
    // dQ_accum += dS K (A from registers), in column slices; tile.atomic_add
    const GlobalMatrix<float> dQg = matrix_at<float>(dq_accum, batch, head);
#pragma unroll
    for (int c = 0; c < kHeadDim; c += kDqCols) {
      RegTileF32<kBlockM, kDqCols, kWarps> dq;
      fill(dq, 0.f);
      matmul(dq, ds16, Ks, c);
      atomic_add(columns_from(dQg, c), q0, dq);
    }
    __syncthreads();  // Ps, dSs and this stage are rewritten next iteration
  }
  cp_async_wait<0>();
  __syncthreads();

  // tile.scale dK by F ; tile.convert ; tile.store (through shared: K, V are no longer read)
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
