// tile op `matmul` (f32 accumulate): C[M][N] += opA(A)[M][K] * opB(B)[K][N], C a register tile.
//
//   function          tile.matmul flags         A                          B (shared)
//   matmul            -                         register RegTile16 [M][K]  stored [K][N] (ldmatrix.trans)
//                                               or shared [M][K]
//   matmul_tb         transpose_b               register or shared [M][K]  stored [N][K] (ldmatrix)
//   matmul_ta         transpose_a               shared, stored [K][M]      stored [K][N]
//   matmul_ta_tb      transpose_a transpose_b   shared, stored [K][M]      stored [N][K]
//
// Attention uses: S = Q K^T -> matmul_tb; O += P V -> matmul (P in registers);
// dV += P^T dO / dK += dS^T Q with P, dS in shared -> matmul_ta; dQ += dS K -> matmul.
// Every warp reads all of B's K rows for its columns and only its own band of A rows, so the
// shared-memory traffic per FLOP falls with the rows per warp (16 * kMT).
// `b_col0` (a multiple of 16) selects a column slice of B: C covers B's columns
// [b_col0, b_col0 + N). Used to split a wide output over warps or over time (register budget).
#pragma once
#include "flashc/device/regtile.cuh"

namespace flashc {
namespace device {
namespace detail {

// ---- A fragment sources: fragment of row slab mt (rows row0 + 16 mt ..), k-step kk ----
template <class T, int M, int K, int W>
struct ARegisters {
  const RegTile16<T, M, K, W>& t;
  __device__ __forceinline__ void load(unsigned (&a)[4], int mt, int kk, int /*row0*/) const {
    a[0] = t.v[mt][2 * kk][0];
    a[1] = t.v[mt][2 * kk][1];
    a[2] = t.v[mt][2 * kk + 1][0];
    a[3] = t.v[mt][2 * kk + 1][1];
  }
};
template <class T, int M, int K>
struct AShared {  // stored [M][K]
  SmemTile<T, M, K> t;
  __device__ __forceinline__ void load(unsigned (&a)[4], int mt, int kk, int row0) const {
    const int lane = lane_id();
    ldmatrix_x4(a, t.addr(row0 + 16 * mt + (lane & 15), 2 * kk + (lane >> 4)));
  }
};
// ASharedT / BSharedKN read any shared tile with addr(row, 16-byte chunk): SmemTile, and the wgmma
// panels (SmemPanelTile) when mma.sync reads what wgmma also reads.
template <class Tile>
struct ASharedT {  // stored [K][M]; x4 matrix q covers k rows 8*(q/2).., m chunk q%2
  Tile t;
  __device__ __forceinline__ void load(unsigned (&a)[4], int mt, int kk, int row0) const {
    const int lane = lane_id();
    ldmatrix_x4_trans(a, t.addr(kk * 16 + ((lane >> 4) << 3) + (lane & 7), ((row0 + 16 * mt) >> 3) + ((lane >> 3) & 1)));
  }
};
// ---- B fragment sources: slabs nt, nt+1 at k-step kk -> {b0(nt), b1(nt), b0(nt+1), b1(nt+1)} ----
template <class T, int N, int K>
struct BSharedNK {  // stored [N][K]
  SmemTile<T, N, K> t;
  __device__ __forceinline__ void load(unsigned (&b)[4], int nt, int kk, int col0) const {
    const int lane = lane_id();
    ldmatrix_x4(b, t.addr(col0 + nt * 8 + ((lane >> 4) << 3) + (lane & 7), 2 * kk + ((lane >> 3) & 1)));
  }
};
template <class Tile>
struct BSharedKN {  // stored [K][N]
  Tile t;
  __device__ __forceinline__ void load(unsigned (&b)[4], int nt, int kk, int col0) const {
    const int lane = lane_id();
    ldmatrix_x4_trans(b, t.addr(kk * 16 + (((lane >> 3) & 1) << 3) + (lane & 7), (col0 >> 3) + nt + (lane >> 4)));
  }
};

template <class T, int K, class ASrc, class BSrc, int M, int N, int W>
__device__ __forceinline__ void gemm(RegTileF32<M, N, W>& C, const ASrc& A, const BSrc& B, int b_col0) {
  static_assert(K % 16 == 0 && N % 16 == 0, "matmul needs K and N multiples of 16");
  const int row0 = C.band_row0();
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    unsigned a[TileShape<M, N, W>::kMT][4];
#pragma unroll
    for (int mt = 0; mt < C.kMT; ++mt) A.load(a[mt], mt, kk, row0);
#pragma unroll
    for (int nt = 0; nt < C.kNT; nt += 2) {
      unsigned b[4];
      B.load(b, nt, kk, b_col0);
#pragma unroll
      for (int mt = 0; mt < C.kMT; ++mt) {
        mma_16816<T>(C.v[mt][nt], a[mt], b[0], b[1]);
        mma_16816<T>(C.v[mt][nt + 1], a[mt], b[2], b[3]);
      }
    }
  }
}

}  // namespace detail

// C += A B, A in registers, B stored [K][NB].
template <class T, int M, int N, int K, int NB, int W>
__device__ __forceinline__ void matmul(RegTileF32<M, N, W>& C, const RegTile16<T, M, K, W>& A, SmemTile<T, K, NB> B,
                                       int b_col0 = 0) {
  detail::gemm<T, K>(C, detail::ARegisters<T, M, K, W>{A}, detail::BSharedKN<SmemTile<T, K, NB>>{B}, b_col0);
}
// C += A B, A in shared [M][K], B stored [K][NB].
template <class T, int M, int N, int K, int NB, int W>
__device__ __forceinline__ void matmul(RegTileF32<M, N, W>& C, SmemTile<T, M, K> A, SmemTile<T, K, NB> B,
                                       int b_col0 = 0) {
  detail::gemm<T, K>(C, detail::AShared<T, M, K>{A}, detail::BSharedKN<SmemTile<T, K, NB>>{B}, b_col0);
}
// C += A B^T, A in registers, B stored [NB][K].
template <class T, int M, int N, int K, int NB, int W>
__device__ __forceinline__ void matmul_tb(RegTileF32<M, N, W>& C, const RegTile16<T, M, K, W>& A,
                                          SmemTile<T, NB, K> B, int b_col0 = 0) {
  detail::gemm<T, K>(C, detail::ARegisters<T, M, K, W>{A}, detail::BSharedNK<T, NB, K>{B}, b_col0);
}
// C += A B^T, A in shared [M][K], B stored [NB][K].
template <class T, int M, int N, int K, int NB, int W>
__device__ __forceinline__ void matmul_tb(RegTileF32<M, N, W>& C, SmemTile<T, M, K> A, SmemTile<T, NB, K> B,
                                          int b_col0 = 0) {
  detail::gemm<T, K>(C, detail::AShared<T, M, K>{A}, detail::BSharedNK<T, NB, K>{B}, b_col0);
}
// C += A^T B, A stored [K][M] in shared, B stored [K][NB].
template <class T, int M, int N, int K, int NB, int W>
__device__ __forceinline__ void matmul_ta(RegTileF32<M, N, W>& C, SmemTile<T, K, M> At, SmemTile<T, K, NB> B,
                                          int b_col0 = 0) {
  detail::gemm<T, K>(C, detail::ASharedT<SmemTile<T, K, M>>{At}, detail::BSharedKN<SmemTile<T, K, NB>>{B}, b_col0);
}
// C += A^T B^T, A stored [K][M], B stored [NB][K].
template <class T, int M, int N, int K, int NB, int W>
__device__ __forceinline__ void matmul_ta_tb(RegTileF32<M, N, W>& C, SmemTile<T, K, M> At, SmemTile<T, NB, K> B,
                                             int b_col0 = 0) {
  detail::gemm<T, K>(C, detail::ASharedT<SmemTile<T, K, M>>{At}, detail::BSharedNK<T, NB, K>{B}, b_col0);
}

}  // namespace device
}  // namespace flashc
