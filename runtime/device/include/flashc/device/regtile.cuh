// Register tiles: block-level values distributed over the block's warps by rows.
//
// A tile [Rows][Cols] held by kWarps warps: warp w owns rows [w * Rows/kWarps, (w+1) * Rows/kWarps),
// as kMT = Rows/kWarps/16 row slabs of 16 rows and kNT = Cols/8 column slabs of 8, each slab in
// the mma.sync m16n8 C-fragment layout (lane l holds rows g, g+8 and cols 2t, 2t+1 of the slab,
// g = l/4, t = l%4). Row reductions are therefore shuffles among the 4 lanes of a quad.
//   RegTileF32 : f32 accumulators, 4 floats per slab.
//   RegTile16  : bf16/f16 values, 2 packed words per slab; slabs 2k, 2k+1 form the A fragment of
//                k-step k, so a RegTile16 is directly the A operand of a matmul.
//   RegRowVec  : one float per owned row (m, l, lse, correction factors): v[mt][h] is row
//                16*mt + g + 8*h of the warp's band (all 4 lanes of a quad hold the same value).
// kWarps is the number of row bands. It is normally the block's warp count; a block with more
// warps (a multiple) may hold a tile of fewer bands: warp w then owns band w % kWarps, and the
// caller gives warps w / kWarps = 0, 1, ... different column slices (a 2-D warp layout, e.g. the
// dQ tile of the backward).
#pragma once
#include "flashc/device/mma.cuh"
#include "flashc/device/smem.cuh"
#include "flashc/device/tensor.cuh"

namespace flashc {
namespace device {

template <int Rows, int Cols, int kWarps>
struct TileShape {
  static_assert(Rows % (16 * kWarps) == 0, "each warp must own a multiple of 16 rows");
  static_assert(Cols % 16 == 0, "columns must be a multiple of 16");
  static constexpr int kRows = Rows;
  static constexpr int kCols = Cols;
  static constexpr int kWarpRows = Rows / kWarps;
  static constexpr int kMT = kWarpRows / 16;
  static constexpr int kNT = Cols / 8;
  // Row band of the calling warp and its first tile row.
  static __device__ __forceinline__ int band() { return warp_id() % kWarps; }
  static __device__ __forceinline__ int band_row0() { return band() * kWarpRows; }
  // Tile row of slab mt, half h (0: g, 1: g + 8) for the calling thread.
  static __device__ __forceinline__ int row(int mt, int h) {
    return band() * kWarpRows + mt * 16 + (lane_id() >> 2) + 8 * h;
  }
  // Tile column of slab nt, element e (0, 1) for the calling thread.
  static __device__ __forceinline__ int col(int nt, int e) {
    return nt * 8 + 2 * (lane_id() & 3) + e;
  }
};

template <int Rows, int Cols, int kWarps>
struct RegTileF32 : TileShape<Rows, Cols, kWarps> {
  using Shape = TileShape<Rows, Cols, kWarps>;
  float v[Shape::kMT][Shape::kNT][4];
};

template <class T, int Rows, int Cols, int kWarps>
struct RegTile16 : TileShape<Rows, Cols, kWarps> {
  using Shape = TileShape<Rows, Cols, kWarps>;
  using Elem = T;
  unsigned v[Shape::kMT][Shape::kNT][2];
};

template <int Rows, int kWarps>
struct RegRowVec {
  static_assert(Rows % (16 * kWarps) == 0, "each warp must own a multiple of 16 rows");
  static constexpr int kMT = Rows / kWarps / 16;
  static constexpr int kWarpRows = Rows / kWarps;
  // Tile row of entry (mt, h) for the calling thread.
  static __device__ __forceinline__ int row(int mt, int h) {
    return (warp_id() % kWarps) * kWarpRows + mt * 16 + (lane_id() >> 2) + 8 * h;
  }
  float v[kMT][2];
};

// tile op `fill` (register tile).
template <int R, int C, int W>
__device__ __forceinline__ void fill(RegTileF32<R, C, W>& t, float value) {
#pragma unroll
  for (int mt = 0; mt < t.kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < t.kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) t.v[mt][nt][i] = value;
}
template <int R, int W>
__device__ __forceinline__ void fill(RegRowVec<R, W>& r, float value) {
#pragma unroll
  for (int mt = 0; mt < r.kMT; ++mt) r.v[mt][0] = r.v[mt][1] = value;
}

// tile op `convert` f32 -> bf16/f16 (round to nearest even).
template <class T, int R, int C, int W>
__device__ __forceinline__ void convert(RegTile16<T, R, C, W>& dst, const RegTileF32<R, C, W>& src) {
#pragma unroll
  for (int mt = 0; mt < src.kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < src.kNT; ++nt) {
      dst.v[mt][nt][0] = ElemTraits<T>::pack(src.v[mt][nt][0], src.v[mt][nt][1]);
      dst.v[mt][nt][1] = ElemTraits<T>::pack(src.v[mt][nt][2], src.v[mt][nt][3]);
    }
}

// tile op `scale` (elementwise multiply by a constant).
template <int R, int C, int W>
__device__ __forceinline__ void scale(RegTileF32<R, C, W>& t, float factor) {
#pragma unroll
  for (int mt = 0; mt < t.kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < t.kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) t.v[mt][nt][i] *= factor;
}

namespace detail {
// Any shared tile with addr(row, chunk) (SmemTile, SmemPanelTile) -> register A-operand fragments.
template <class Tile, class T, int R, int C, int W>
__device__ __forceinline__ void load_fragments_from(RegTile16<T, R, C, W>& dst, Tile src) {
  const int lane = lane_id();
#pragma unroll
  for (int mt = 0; mt < dst.kMT; ++mt)
#pragma unroll
    for (int kk = 0; kk < C / 16; ++kk) {
      unsigned a[4];
      const int row = dst.band_row0() + mt * 16 + (lane & 15);
      ldmatrix_x4(a, src.addr(row, 2 * kk + (lane >> 4)));
      dst.v[mt][2 * kk][0] = a[0];
      dst.v[mt][2 * kk][1] = a[1];
      dst.v[mt][2 * kk + 1][0] = a[2];
      dst.v[mt][2 * kk + 1][1] = a[3];
    }
}
}  // namespace detail

// tile op `load` shared -> register (A-operand fragments via ldmatrix), e.g. Q kept in registers
// across the KV loop. The register tile's rows are the shared tile's rows.
template <class T, int R, int C, int W>
__device__ __forceinline__ void load_fragments(RegTile16<T, R, C, W>& dst, SmemTile<T, R, C> src) {
  detail::load_fragments_from(dst, src);
}

namespace detail {
// Register fragments -> any shared tile with elem_offset(row, col) (SmemTile, SmemPanelTile), at its
// columns col0.. (a multiple of 8).
template <class Tile, class T, int R, int C, int W>
__device__ __forceinline__ void store_fragments_to(Tile dst, const RegTile16<T, R, C, W>& src, int col0 = 0) {
  char* base = reinterpret_cast<char*>(dst.data);
#pragma unroll
  for (int mt = 0; mt < src.kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < src.kNT; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<unsigned*>(base + Tile::elem_offset(src.row(mt, h), col0 + src.col(nt, 0))) =
            src.v[mt][nt][h];
}
}  // namespace detail
// tile op `copy` register -> shared (16-bit tile; 4-byte stores, conflict-free by the swizzle).
// Caller syncs before others read dst.
template <class T, int R, int C, int W>
__device__ __forceinline__ void store_fragments(SmemTile<T, R, C> dst, const RegTile16<T, R, C, W>& src) {
  detail::store_fragments_to(dst, src);
}

// tile op `store` register -> global (16-bit tile, 4-byte stores), rows/cols past dst's limits skipped
// (kExact: element by element, 2-byte stores, for a width that may be odd; else cols is even).
// Prefer copy-to-shared + store_tile (16-byte stores) where shared memory is free.
template <bool kExact = false, class T, int R, int C, int W>
__device__ __forceinline__ void store_fragments(const GlobalMatrix<T>& dst, int row0,
                                                const RegTile16<T, R, C, W>& src) {
#pragma unroll
  for (int mt = 0; mt < src.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + src.row(mt, h);
      if (row < dst.rows) {
#pragma unroll
        for (int nt = 0; nt < src.kNT; ++nt) {
          if constexpr (!kExact) {
            if (src.col(nt, 0) < dst.cols)
              *reinterpret_cast<unsigned*>(dst.base + row * dst.row_stride + src.col(nt, 0)) = src.v[mt][nt][h];
          } else {
            // Each element on its own predicate (the pair's low half is column c, ElemTraits::pack):
            // 2-byte stores, which measured fewer spills in ptxas than a 4-byte store with a 2-byte
            // fallback (the gated FFN backward's hidden kernel at h = 1001: 796 vs 1320 bytes).
            const int c = src.col(nt, 0);
            T* g = dst.base + row * dst.row_stride + c;
            const unsigned v = src.v[mt][nt][h];
            if (c < dst.cols) *reinterpret_cast<unsigned short*>(g) = static_cast<unsigned short>(v & 0xffffu);
            if (c + 1 < dst.cols) *reinterpret_cast<unsigned short*>(g + 1) = static_cast<unsigned short>(v >> 16);
          }
        }
      }
    }
}

// An f32 register tile stored as T, each pair converted as it is stored (no 16-bit copy of the tile
// lives in registers): rows >= dst.rows and pairs at or past dst.cols are skipped (dst.cols even).
template <class T, int R, int C, int W>
__device__ __forceinline__ void store_fragments_converted(const GlobalMatrix<T>& dst, int row0,
                                                          const RegTileF32<R, C, W>& src) {
#pragma unroll
  for (int mt = 0; mt < src.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + src.row(mt, h);
      if (row < dst.rows) {
#pragma unroll
        for (int nt = 0; nt < src.kNT; ++nt)
          if (src.col(nt, 0) < dst.cols)
            *reinterpret_cast<unsigned*>(dst.base + row * dst.row_stride + src.col(nt, 0)) =
                ElemTraits<T>::pack(src.v[mt][nt][2 * h], src.v[mt][nt][2 * h + 1]);
      }
    }
}

}  // namespace device
}  // namespace flashc
