// Strategy wgmma_sm90: the tile ops whose code differs from mma.sync, in the call forms the CUDA
// emitter prints. Register tiles keep their layout (warpgroup g = warps 4g..4g+3 owns rows
// 64g..64g+63, each warp 16 rows: exactly a RegTileF32<128, N, 8>), so every softmax, mask and
// store call is shared with mma.sync; only the matmuls and the shared layouts of their operands
// (SmemPanelTile, 1024-byte aligned) change. Recipe and measurements: docs/device-library.md.
#pragma once
#include "flashc/device/emitter_api.cuh"
#include "flashc/device/matmul.cuh"
#include "flashc/device/panel.cuh"
#include "flashc/device/wgmma.cuh"

namespace flashc {
namespace device {

// tile.load %t[.., row0, col0] limit [rl, cl] -> panel tile (issue only).
template <int kThreads, bool kExact = false, class T, int R, int C>
__device__ __forceinline__ void load_tile_async(SmemPanelTile<T, R, C> dst, const GlobalMatrix<T>& m, int row0,
                                                int col0, int rl, int cl) {
  load_tile_async<kThreads, kExact>(dst, tile_window(m, col0, rl, cl), row0);
}

// Dynamic shared memory rounded up to the 1024-byte alignment the 128-byte swizzle needs (the
// manifest asks for 1024 bytes more than the plan).
__device__ __forceinline__ unsigned char* align_smem_1024(unsigned char* raw) {
  return raw + ((1024 - (smem_u32(raw) & 1023)) & 1023);
}

// The matmuls issue their wgmma group; with kWait = false they return at once and the caller waits
// (wgmma_wait<0>) before it touches c or a register A, so independent work overlaps the product.

namespace detail {
// Descriptor of k16 step kk of a K-major panel tile [R][K] (rows are M or N), from row `row0`: the
// step is +32 B inside a 64-column panel, the next panel +kPanelBytes; 8-row groups 1024 B apart.
template <class T, int R, int K>
__device__ __forceinline__ unsigned long long kmajor_desc(SmemPanelTile<T, R, K> t, int kk, int row0 = 0) {
  return wgmma_desc_advance(wgmma_desc(t.base() + row0 * 128, 16, 1024),
                            (kk / 4) * SmemPanelTile<T, R, K>::kPanelBytes + (kk % 4) * 32);
}
// Descriptor of k16 step kk of an MN-major panel tile [K][C] from 64-column panel `panel0`: 16 K rows of
// 128 B a step; the next 64 columns one panel further (LBO), 8-row groups 1024 B apart (SBO).
template <class T, int K, int C>
__device__ __forceinline__ unsigned long long mnmajor_desc(SmemPanelTile<T, K, C> t, int kk, int panel0 = 0) {
  return wgmma_desc_advance(wgmma_desc(t.base() + panel0 * SmemPanelTile<T, K, C>::kPanelBytes,
                                       SmemPanelTile<T, K, C>::kPanelBytes, 1024),
                            kk * 16 * 128);
}
}  // namespace detail

// An empty asm that reads and writes every register of `c`: no definition of them moves across it. A
// product loop that keeps a wgmma group in flight across iterations (the emitter's product loops of 4 stages or more)
// fences its accumulators after their initialization; without it ptxas serializes the products.
template <int M, int N, int W>
__device__ __forceinline__ void wgmma_fence_operand(RegTileF32<M, N, W>& c) {
#pragma unroll
  for (int mt = 0; mt < RegTileF32<M, N, W>::kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < RegTileF32<M, N, W>::kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) asm volatile("" : "+f"(c.v[mt][nt][i])::"memory");
}

// Every product below takes kOverwrite: C = A B instead of C += A B, by the first k16 step's scale-d = 0, so that
// C's old values are never read and need no zero fill (a fill is a register move per accumulator a product: 96 a
// thread and step in the key-split backward at D = 128, where the fences that keep ptxas from serializing the
// products also keep it from folding the fills; without such fences ptxas folds a fill itself, as in the forward).

// tile.matmul %a, %b, %c transpose_b with a, b shared: C += A Bᵀ (K-major panels; SS form). With b_row0: B's
// rows b_row0.. (a multiple of 8, b_row0 + N <= NB) of a tile of NB rows are the N rows of this product.
template <bool kWait = true, bool kOverwrite = false, class T, int M, int N, int K, int W, int NB>
__device__ __forceinline__ void wgmma_matmul_tb(RegTileF32<M, N, W>& c, SmemPanelTile<T, M, K> a,
                                                SmemPanelTile<T, NB, K> b, int b_row0) {
  static_assert(M % 64 == 0 && M <= 256 && W == M / 16,
                "wgmma tiles: warpgroups of 64 rows each (4 warps of 16), or one warpgroup's own 64-row tile");
  static_assert(N <= NB, "wgmma_matmul_tb: N rows of B's tile");
  const int row0 = M > 64 ? (warp_id() / 4) * 64 : 0;
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk)
    wgmma_ss<T, N>(&c.v[0][0][0], detail::kmajor_desc(a, kk, row0), detail::kmajor_desc(b, kk, b_row0),
                   !kOverwrite || kk > 0);
  wgmma_commit();
  if (kWait)
    wgmma_wait<0>();
}
// ... and B exactly the product's N rows.
template <bool kWait = true, bool kOverwrite = false, class T, int M, int N, int K, int W>
__device__ __forceinline__ void wgmma_matmul_tb(RegTileF32<M, N, W>& c, SmemPanelTile<T, M, K> a,
                                                SmemPanelTile<T, N, K> b) {
  wgmma_matmul_tb<kWait, kOverwrite>(c, a, b, 0);
}

// tile.matmul %a, %b, %c with a a 16-bit register tile, b shared [K][N]: C += A B (RS form; B is
// MN-major, read with the transpose bit). With b_k0: B's rows b_k0.. (a multiple of 16, b_k0 + K <= KB) of a
// tile of KB rows are the K rows of this product.
template <bool kWait = true, bool kOverwrite = false, class T, int M, int N, int K, int W, int KB>
__device__ __forceinline__ void wgmma_matmul(RegTileF32<M, N, W>& c, const RegTile16<T, M, K, W>& a,
                                             SmemPanelTile<T, KB, N> b, int b_k0) {
  static_assert(M % 64 == 0 && M <= 256 && W == M / 16,
                "wgmma tiles: warpgroups of 64 rows each (4 warps of 16), or one warpgroup's own 64-row tile");
  static_assert(K <= KB, "wgmma_matmul: K rows of B's tile");
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    const unsigned frag[4] = {a.v[0][2 * kk][0], a.v[0][2 * kk][1], a.v[0][2 * kk + 1][0], a.v[0][2 * kk + 1][1]};
    wgmma_rs_tb<T, N>(&c.v[0][0][0], frag, detail::mnmajor_desc(b, kk + b_k0 / 16), !kOverwrite || kk > 0);
  }
  wgmma_commit();
  if (kWait)
    wgmma_wait<0>();
}
// ... and B exactly the product's K rows.
template <bool kWait = true, bool kOverwrite = false, class T, int M, int N, int K, int W>
__device__ __forceinline__ void wgmma_matmul(RegTileF32<M, N, W>& c, const RegTile16<T, M, K, W>& a,
                                             SmemPanelTile<T, K, N> b) {
  wgmma_matmul<kWait, kOverwrite>(c, a, b, 0);
}

// tile.matmul %a, %b, %c with a, b shared: C += A B (SS form; A K-major panels as in wgmma_matmul_tb,
// B stored [K][N] MN-major as in the RS form). The GEMM kernels' main loop.
template <bool kWait = true, bool kOverwrite = false, class T, int M, int N, int K, int W>
__device__ __forceinline__ void wgmma_matmul(RegTileF32<M, N, W>& c, SmemPanelTile<T, M, K> a,
                                             SmemPanelTile<T, K, N> b) {
  static_assert(M % 64 == 0 && M <= 256 && W == M / 16,
                "wgmma tiles: warpgroups of 64 rows each (4 warps of 16), or one warpgroup's own 64-row tile");
  const int row0 = M > 64 ? (warp_id() / 4) * 64 : 0;
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk)
    wgmma_ss_tb<T, N>(&c.v[0][0][0], detail::kmajor_desc(a, kk, row0), detail::mnmajor_desc(b, kk),
                      !kOverwrite || kk > 0);
  wgmma_commit();
  if (kWait)
    wgmma_wait<0>();
}

// tile.convert shared -> f32 registers of a panel tile: an accumulating GEMM's initial C (dx += ...).
template <class T, int R, int C, int W>
__device__ __forceinline__ void convert(RegTileF32<R, C, W>& dst, SmemPanelTile<T, R, C> src) {
  RegTile16<T, R, C, W> frag;
  detail::load_fragments_from(frag, src);
  convert(dst, frag);
}

// tile.convert shared -> 16-bit registers of a panel tile (the FFN backward's pre-activation).
template <class T, int R, int C, int W>
__device__ __forceinline__ void convert(RegTile16<T, R, C, W>& dst, SmemPanelTile<T, R, C> src) {
  detail::load_fragments_from(dst, src);
}

// On sm_90 by stmatrix: one x4 store writes a warp's 16 rows x 16 columns (slabs nt, nt + 1), a quarter of the
// instructions of 4-byte stores (the key-split backward's dSᵀ: 4 a thread and step instead of 16); each of its
// 8 x 8 matrices' rows is one 16-byte chunk, which the swizzle keeps whole.
namespace detail {
template <class T, int R, int C, int CD, int W>
__device__ __forceinline__ void store_fragments_stmatrix(SmemPanelTile<T, R, CD> dst, const RegTile16<T, R, C, W>& src,
                                                         int col0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using Src = RegTile16<T, R, C, W>;
  const int lane = lane_id(), matrix = lane >> 3;
  // Matrix j of an x4: rows 8 (j % 2).. of the slab pair's 16, slab nt + j / 2 (registers v[nt][0], v[nt][1],
  // v[nt + 1][0], v[nt + 1][1]).
  const int row_in_slab = ((matrix & 1) << 3) + (lane & 7), slab = matrix >> 1;
  static_assert(Src::kNT % 2 == 0, "store_fragments: column slabs in pairs");
#pragma unroll
  for (int mt = 0; mt < Src::kMT; ++mt) {
    const int row = Src::band_row0() + mt * 16 + row_in_slab;
#pragma unroll
    for (int nt = 0; nt < Src::kNT; nt += 2)
      stmatrix_x4(dst.addr(row, (col0 >> 3) + nt + slab), src.v[mt][nt][0], src.v[mt][nt][1], src.v[mt][nt + 1][0],
                  src.v[mt][nt + 1][1]);
  }
#else
  store_fragments_to(dst, src, col0);
#endif
}
}  // namespace detail
// The Sᵀ backward under wgmma: dSᵀ leaves registers into a panel tile, and dQ += dS·K reads dSᵀ and K
// transposed: with wgmma_matmul_ta, whose operands are both MN-major, where its shape is a warpgroup's 64 rows
// in 64-column parts; else with mma.sync (matmul_ta) (docs/design/wgmma-backward.md).
template <class T, int R, int C, int W>
__device__ __forceinline__ void store_fragments(SmemPanelTile<T, R, C> dst, const RegTile16<T, R, C, W>& src) {
  detail::store_fragments_stmatrix(dst, src, 0);
}
// The same into columns col0.. (a multiple of 8) of a wider panel tile (a score half of the key split at D = 192).
template <class T, int R, int C, int CD, int W>
__device__ __forceinline__ void store_fragments(SmemPanelTile<T, R, CD> dst, const RegTile16<T, R, C, W>& src,
                                                int col0) {
  static_assert(C < CD, "store_fragments: a column range of the tile");
  detail::store_fragments_stmatrix(dst, src, col0);
}
// C += Aᵀ B with mma.sync, A stored [K][M] and B stored [K][NB] in panels.
template <class T, int M, int N, int K, int NB, int W>
__device__ __forceinline__ void matmul_ta(RegTileF32<M, N, W>& C, SmemPanelTile<T, K, M> At, SmemPanelTile<T, K, NB> B,
                                          int b_col0 = 0) {
  detail::gemm<T, K>(C, detail::ASharedT<SmemPanelTile<T, K, M>>{At}, detail::BSharedKN<SmemPanelTile<T, K, NB>>{B},
                     b_col0);
}

// tile.matmul %at, %b, %c transpose_a with both shared: C += Aᵀ B, Aᵀ stored [K][M] and B [K][NB] in
// panels, both read MN-major (SS, both transpose bits). N columns of B per warpgroup, starting at
// column b_col0 (a multiple of 64). M = 128 on 8 warps: warpgroup g takes rows 64g.. (Aᵀ panel g).
// M = 64 on 4 row bands (the 8 warps as 2 column groups): both warpgroups take all 64 rows, each
// its own b_col0. The Sᵀ backward's dQ parts are N = 64 slices; the GEMM kernels' weight
// gradients take the whole tile, N = NB.
template <bool kWait = true, bool kOverwrite = false, class T, int M, int N, int K, int MA, int NB, int W>
__device__ __forceinline__ void wgmma_matmul_ta(RegTileF32<M, N, W>& c, SmemPanelTile<T, K, MA> at,
                                                SmemPanelTile<T, K, NB> b, int b_col0 = 0) {
  static_assert((M == 128 && W == 8 && MA == 128) || (M == 64 && W == 4 && MA == 64),
                "wgmma_matmul_ta: 64 rows a warpgroup");
  static_assert((N == 64 || N == 128 || N == 256) && N <= NB && K % 16 == 0,
                "wgmma_matmul_ta: 64, 128 or 256 columns of B, K a multiple of 16");
  const int a_panel = M == 128 ? warp_id() / 4 : 0;
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk)
    wgmma_ss_tatb<T, N>(&c.v[0][0][0], detail::mnmajor_desc(at, kk, a_panel), detail::mnmajor_desc(b, kk, b_col0 / 64),
                        !kOverwrite || kk > 0);
  wgmma_commit();
  if (kWait)
    wgmma_wait<0>();
}

}  // namespace device
}  // namespace flashc
