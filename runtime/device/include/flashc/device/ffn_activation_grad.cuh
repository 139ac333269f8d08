// The FFN backward's activation, elementwise over [(B,) M, H] after the GEMM dh = dy·W2ᵀ:
//   plain: dpre = dh ∘ act'(pre)
//   gated: dg = (dh ∘ u) ∘ act'(g), du = dh ∘ act(g)
// A block takes kBlockM rows x kBlockN columns (its place in the grid remapped so that consecutive
// blocks take consecutive column blocks); each thread 16-byte chunks (8 elements) of every
// tensor, all of its loads issued before the first result (memory bound: the tile-op form, smem
// staging and 4-byte fragment stores, ran at half of eager PyTorch's bandwidth). A chunk that
// ends past H (H not a multiple of 8) goes element by element; nothing past H is read or written.
//
// Config (static members): using Elem = bf16 | f16; kAct = Act::...; kGated; kBatched (the tensors
// are [B, M, H], grid z = batch); kBlockM, kBlockN, kThreads.
// Launch: grid (ceil(M / kBlockM), ceil(H / kBlockN), batch), kThreads threads, no shared memory.
#pragma once
#include "flashc/device/activation.cuh"
#include "flashc/device/tensor.cuh"
#include "flashc/device/types.cuh"

namespace flashc {
namespace device {

template <class Config>
__device__ __forceinline__ void ffn_activation_grad(const TensorArg& dh, const TensorArg& pre, const TensorArg& up,
                                                    const TensorArg& dpre, const TensorArg& du) {
  using Elem = typename Config::Elem;
  using Traits = ElemTraits<Elem>;
  constexpr int kChunk = 8, kChunksPerRow = Config::kBlockN / kChunk;
  constexpr int kPerThread = Config::kBlockM * kChunksPerRow / Config::kThreads;
  static_assert(Config::kBlockN % kChunk == 0 && Config::kBlockM * kChunksPerRow % Config::kThreads == 0,
                "ffn_activation_grad: whole chunks a thread");
  constexpr Act K = Config::kAct;
  constexpr bool kGated = Config::kGated;
  auto view = [](const TensorArg& t) {
    return Config::kBatched ? matrix_at<Elem>(t, blockIdx.z) : matrix_at<Elem>(t);
  };
  const GlobalMatrix<Elem> g_dh = view(dh), g_pre = view(pre), g_dpre = view(dpre);
  const GlobalMatrix<Elem> g_up = kGated ? view(up) : g_pre, g_du = kGated ? view(du) : g_dpre;
  // Blocks in launch order walk along the rows (column blocks first): the blocks in flight cover a few
  // row blocks whole, one contiguous span of each tensor. (The grid's x = row blocks taken first scattered
  // them over every row, 256 bytes a row: 1.9 TB/s on the H200, against eager's 3.4.)
  const unsigned linear = blockIdx.x + blockIdx.y * gridDim.x;
  const int row0 = static_cast<int>(linear / gridDim.y) * Config::kBlockM;
  const int col0 = static_cast<int>(linear % gridDim.y) * Config::kBlockN;
  // One element: the results in f32 (gated: dg and du), from dh, pre (g) and u.
  auto compute = [](float d, float p, float u, float& out0, float& out1) {
    if constexpr (kGated) {
      out0 = d * u * act_grad<K, true>(p);
      out1 = d * act<K, true>(p);
    } else {
      out0 = d * act_grad<K, true>(p);
      out1 = 0.f;
    }
  };
  // Chunk i of this thread: row row0 + r, column col0 + c (recomputed, not held: registers bound the
  // resident blocks).
  auto place = [&](int i, int& r, int& c) {
    const int chunk = threadIdx.x + i * Config::kThreads;
    r = row0 + chunk / kChunksPerRow;
    c = col0 + chunk % kChunksPerRow * kChunk;
  };
  auto at = [](const GlobalMatrix<Elem>& m, int r, int c) { return m.base + r * m.row_stride + c; };
  uint4 a[kPerThread], b[kPerThread], c[kGated ? kPerThread : 1];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    int r, col;
    place(i, r, col);
    if (r < g_dh.rows && col + kChunk <= g_dh.cols) {
      a[i] = __ldg(reinterpret_cast<const uint4*>(at(g_dh, r, col)));
      b[i] = __ldg(reinterpret_cast<const uint4*>(at(g_pre, r, col)));
      if constexpr (kGated) c[i] = __ldg(reinterpret_cast<const uint4*>(at(g_up, r, col)));
    }
  }
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    int r, col;
    place(i, r, col);
    if (r >= g_dh.rows || col >= g_dh.cols) continue;
    if (col + kChunk <= g_dh.cols) {
      const unsigned* wa = reinterpret_cast<const unsigned*>(&a[i]);
      const unsigned* wb = reinterpret_cast<const unsigned*>(&b[i]);
      uint4 r0, r1;
      unsigned* w0 = reinterpret_cast<unsigned*>(&r0);
      unsigned* w1 = reinterpret_cast<unsigned*>(&r1);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float2 d = Traits::unpack(wa[k]), p = Traits::unpack(wb[k]);
        float2 u = make_float2(0.f, 0.f);
        if constexpr (kGated) u = Traits::unpack(reinterpret_cast<const unsigned*>(&c[i])[k]);
        float x0, y0, x1, y1;
        compute(d.x, p.x, u.x, x0, y0);
        compute(d.y, p.y, u.y, x1, y1);
        w0[k] = Traits::pack(x0, x1);
        w1[k] = Traits::pack(y0, y1);
      }
      *reinterpret_cast<uint4*>(at(g_dpre, r, col)) = r0;
      if constexpr (kGated) *reinterpret_cast<uint4*>(at(g_du, r, col)) = r1;
    } else {  // the row's last, partial chunk
      for (int e = 0; e < g_dh.cols - col; ++e) {
        float x, y;
        compute(to_float(at(g_dh, r, col)[e]), to_float(at(g_pre, r, col)[e]),
                kGated ? to_float(at(g_up, r, col)[e]) : 0.f, x, y);
        at(g_dpre, r, col)[e] = from_float<Elem>(x);
        if constexpr (kGated) at(g_du, r, col)[e] = from_float<Elem>(y);
      }
    }
  }
}

}  // namespace device
}  // namespace flashc
