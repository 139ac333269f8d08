// Compile-only coverage of every call form in emitter_api.cuh that the golden kernels do not use
// (f32 register store, atomic_add_tile, add_bias through a view, row_dot on shared/register
// tiles, 16-bit fill, 16 -> f32 convert, activations, mask<L, R> without a guard). Built by the
// NVRTC check; it computes nothing meaningful and is never launched.
#include "flashc/device/all.cuh"

namespace smoke_config {
constexpr int kWarps = 4;
constexpr int kThreads = 128;
}  // namespace smoke_config

extern "C" __global__ void __launch_bounds__(smoke_config::kThreads, 1)
flashc_emitter_api_smoke(flashc::TensorArg x, flashc::TensorArg bias16, flashc::TensorArg bias32,
                         flashc::TensorArg y32, flashc::TensorArg acc32) {
  using namespace flashc::device;
  using namespace smoke_config;
  extern __shared__ __align__(128) unsigned char smem[];
  const int rows = static_cast<int>(x.shape[0]);
  const int cols = static_cast<int>(x.shape[1]);
  const SmemTile<bf16, 64, 64> a = smem_tile_at<SmemTile<bf16, 64, 64>>(smem, 0);
  const SmemTile<bf16, 64, 64> b = smem_tile_at<SmemTile<bf16, 64, 64>>(smem, 8192);
  load_tile_async<kThreads>(a, matrix_view<bf16>(x), 0, 0, rows, cols);
  load_tile_async<kThreads>(b, matrix_view<bf16>(x), 64, 0, rows, cols);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  RegRowVec<64, kWarps> d_shared = row_dot(a, b);  // proxy converts to the declared row vector
  RegTileF32<64, 64, kWarps> t;
  fill(t, 0.0f);
  matmul(t, a, b);
  add_bias(t, vector_view<bf16>(bias16), 0, cols);
  add_bias(t, vector_view(bias32), 0, cols);
  activation<Act::GeluTanh>(t);
  RegTileF32<64, 64, kWarps> pre = t;
  activation_grad<Act::Silu>(t, pre);
  mask<-1, 0>(t, 0, 0, cols, 0);
  RegRowVec<64, kWarps> d_reg = row_dot(t, pre);
  RegTile16<bf16, 64, 64, kWarps> h;
  fill(h, 1.0f);
  RegRowVec<64, kWarps> d16 = row_dot(h, h);
  RegTileF32<64, 64, kWarps> back;
  convert(back, h);
  rescale(back, d_shared);
  rescale(back, d_reg);
  rescale(back, d16);
  store_tile<kThreads>(matrix_view<float>(y32), 0, 0, rows, cols, back);
  atomic_add_tile(matrix_view<float>(acc32), 0, 0, rows, cols, back);
  store_rows(vector_view(acc32, 0), 0, floor_div(rows, 2) + ceil_div(cols, 64), d_shared);
}
