// Attention forward written with exactly the call forms compiler/lib/Codegen/CudaEmitter.cpp prints
// (matrix_view / vector_view, load_tile_async with (row0, col0, limits), mask<L, R>, lse,
// store_tile from registers, buffers = 2 pipelining as the emitter lays it out): a compile and
// numerics check of the emitter-facing API (emitter_api.cuh). Same ABI as attention_fwd.cu.
#include "flashc/device/all.cuh"

#ifndef FLASHC_KERNEL_NAME
#define FLASHC_KERNEL_NAME flashc_attention_fwd
#endif
#ifndef FLASHC_HEAD_DIM
#define FLASHC_HEAD_DIM 64
#endif
#ifndef FLASHC_HEADS_Q
#define FLASHC_HEADS_Q 4
#endif
#ifndef FLASHC_GQA_GROUP
#define FLASHC_GQA_GROUP 1
#endif
#ifndef FLASHC_CAUSAL
#define FLASHC_CAUSAL 1
#endif

namespace fwd_config {
using namespace flashc::device;
using Elem = bf16;
constexpr int kHeadDim = FLASHC_HEAD_DIM;
constexpr int kHeadsQ = FLASHC_HEADS_Q;
constexpr int kGroup = FLASHC_GQA_GROUP;
constexpr int kHeadsKV = kHeadsQ / kGroup;
constexpr int kBlockM = 64, kBlockN = 64;
constexpr int kWarps = 4;  // row bands of every register tile
constexpr int kThreads = 128;
constexpr int kSmemBytes = 64 * kHeadDim * 2 * 5;  // q + 2 x (k, v)
constexpr float kScale = float(1.0 / constexpr_sqrt(kHeadDim));  // the emitter prints the literal
}  // namespace fwd_config

extern "C" __global__ void __launch_bounds__(fwd_config::kThreads, 1)
FLASHC_KERNEL_NAME(flashc::TensorArg q, flashc::TensorArg k, flashc::TensorArg v, flashc::TensorArg out,
                   flashc::TensorArg lse) {
  using namespace flashc::device;
  using namespace fwd_config;
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int D = kHeadDim;
  constexpr int kOff = FLASHC_CAUSAL ? 0 : -1;  // window [-1, 0] causal, [-1, -1] none
  const int block_x = static_cast<int>(blockIdx.x);
  const int block_y = static_cast<int>(blockIdx.y);
  const int block_z = static_cast<int>(blockIdx.z);
  const int q_dim2 = static_cast<int>(q.shape[2]);
  const int k_dim2 = static_cast<int>(k.shape[2]);
  const int row0 = block_x * kBlockM;
  const int hk = block_y / kGroup;
  const int offset = k_dim2 - q_dim2;
  const SmemTile<Elem, 64, D> q_tile = smem_tile_at<SmemTile<Elem, 64, D>>(smem, 0);
  load_tile_async<kThreads>(q_tile, matrix_view<Elem>(q, block_z, block_y), row0, 0, q_dim2, D);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  RegTileF32<64, D, kWarps> acc;
  fill(acc, 0.0f);
  RegRowVec<64, kWarps> m;
  fill(m, -INFINITY);
  RegRowVec<64, kWarps> l;
  fill(l, 0.0f);
  const int nblocks = FLASHC_CAUSAL ? min(ceil_div(k_dim2, 64), ceil_div(row0 + 64 + offset, 64)) : ceil_div(k_dim2, 64);
  const int stage_bytes = 64 * D * 2;
  // Pipeline prologue: loads of the first 1 iteration(s)
  if (0 < nblocks) {
    load_tile_async<kThreads>(smem_tile_at<SmemTile<Elem, 64, D>>(smem, 64 * D * 2), matrix_view<Elem>(k, block_z, hk), 0, 0,
                              k_dim2, D);
    load_tile_async<kThreads>(smem_tile_at<SmemTile<Elem, 64, D>>(smem, 64 * D * 2 * 3), matrix_view<Elem>(v, block_z, hk), 0,
                              0, k_dim2, D);
  }
  cp_async_commit();
  for (int kb = 0, stage = 0; kb < nblocks; kb += 1, stage ^= 1) {
    {  // prefetch the loads of a later iteration (software pipelining)
      const int kb_next = kb + 1;
      if (kb_next < nblocks) {
        load_tile_async<kThreads>(smem_tile_at<SmemTile<Elem, 64, D>>(smem, 64 * D * 2 + (stage ^ 1) * stage_bytes),
                                  matrix_view<Elem>(k, block_z, hk), kb_next * 64, 0, k_dim2, D);
        load_tile_async<kThreads>(smem_tile_at<SmemTile<Elem, 64, D>>(smem, 64 * D * 2 * 3 + (stage ^ 1) * stage_bytes),
                                  matrix_view<Elem>(v, block_z, hk), kb_next * 64, 0, k_dim2, D);
      }
    }
    cp_async_commit();  // always one group per iteration, possibly empty
    cp_async_wait<1>();  // this iteration's buffers landed
    __syncthreads();
    const SmemTile<Elem, 64, D> k_tile = smem_tile_at<SmemTile<Elem, 64, D>>(smem, 64 * D * 2 + stage * stage_bytes);
    const SmemTile<Elem, 64, D> v_tile = smem_tile_at<SmemTile<Elem, 64, D>>(smem, 64 * D * 2 * 3 + stage * stage_bytes);
    const int col0 = kb * 64;
    RegTileF32<64, 64, kWarps> s;
    fill(s, 0.0f);
    matmul_tb(s, q_tile, k_tile);  // += A·Bᵀ
    const bool needs_mask = (col0 + 64 > k_dim2) || (FLASHC_CAUSAL && col0 + 63 > row0 + offset);
    if (needs_mask) {
      mask<-1, kOff>(s, row0, col0, k_dim2, offset);  // -inf outside the window / past the keys
    }
    RegRowVec<64, kWarps> m_new = row_max(s, m);
    exp2(s, m_new, kScale * 1.4426950408889634f);  // P = exp2((S - m)·scale·log2e)
    RegRowVec<64, kWarps> corr = softmax_correction(m, m_new, kScale * 1.4426950408889634f);
    RegRowVec<64, kWarps> l_new = online_sum(l, corr, s);
    rescale(acc, corr);
    RegTile16<Elem, 64, 64, kWarps> s_cvt;
    convert(s_cvt, s);
    matmul(acc, s_cvt, v_tile);  // += A·B
    m = m_new;
    l = l_new;
    __syncthreads();  // buffers are overwritten by the next iteration
  }
  cp_async_wait<0>();
  normalize(acc, l);  // O = acc / l
  RegTile16<Elem, 64, D, kWarps> acc_cvt;
  convert(acc_cvt, acc);
  store_tile<kThreads>(matrix_view<Elem>(out, block_z, block_y), row0, 0, q_dim2, D, acc_cvt);
  // `lse` alone would name the kernel argument: the emitter must qualify (or call logsumexp)
  RegRowVec<64, kWarps> lse_out = flashc::device::lse(m, l, kScale);
  store_rows(vector_view(lse, block_z, block_y), row0, q_dim2, lse_out);
}
