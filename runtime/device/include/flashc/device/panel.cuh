// Shared tiles in the wgmma canonical 128-byte-swizzle layout ("panels").
//
// SmemPanelTile<T, R, C>: C/64 column panels of [R][64] 16-bit elements; a panel row is 128 B and
// 16-byte chunk c of row r is stored at chunk c ^ (r % 8), which is the hardware's 128B swizzle
// (address bits 4-6 XOR bits 7-9) when every panel starts 1024-byte aligned. Descriptors:
//   K-major operand (row = M or N index, columns = K): SBO = 1024 (next 8 rows), k-step of 16
//     elements = +32 B inside a panel, next panel = +kPanelBytes.
//   MN-major operand (row = K index, columns = N): SBO = 1024 (next 8 K rows), LBO = kPanelBytes
//     (next 64 N columns), k-step of 16 = +2048 B.
#pragma once
#include "flashc/device/smem.cuh"
#include "flashc/device/copy.cuh"

namespace flashc {
namespace device {

template <class T, int Rows, int Cols>
struct SmemPanelTile {
  static_assert(sizeof(T) == 2 && Cols % 64 == 0 && Rows % 8 == 0, "panels of 64 16-bit columns, 8-row atoms");
  using Elem = T;
  static constexpr int kPanels = Cols / 64;
  static constexpr int kPanelBytes = Rows * 128;
  static constexpr int kBytes = kPanels * kPanelBytes;
  T* data;
  static __device__ __forceinline__ int chunk_offset(int row, int chunk) {  // chunk: 16 B unit of the row
    return (chunk >> 3) * kPanelBytes + row * 128 + (((chunk & 7) ^ (row & 7)) << 4);
  }
  static __device__ __forceinline__ int elem_offset(int row, int col) {
    return chunk_offset(row, col >> 3) + (col & 7) * static_cast<int>(sizeof(T));
  }
  // Shared address of a 16-byte chunk (ldmatrix rows), as SmemTile::addr.
  __device__ __forceinline__ unsigned addr(int row, int chunk) const { return smem_u32(data) + chunk_offset(row, chunk); }
  __device__ __forceinline__ unsigned base() const { return smem_u32(data); }
};

// Zeroes rows row0 .. Rows - 1 of a panel tile (whole 128-byte rows: the swizzle stays inside a row), kThreads
// threads from `thread` 0.. sharing the work; the caller orders the writes (fence, barrier).
template <int kThreads, class T, int Rows, int Cols>
__device__ __forceinline__ void zero_rows_from(SmemPanelTile<T, Rows, Cols> t, int row0, int thread) {
  using Tile = SmemPanelTile<T, Rows, Cols>;
  constexpr int kChunksPerRow = Cols / 8;
  unsigned char* bytes = reinterpret_cast<unsigned char*>(t.data);
  for (int i = thread; i < (Rows - row0) * kChunksPerRow; i += kThreads)
    *reinterpret_cast<uint4*>(bytes + Tile::chunk_offset(row0 + i / kChunksPerRow, i % kChunksPerRow)) =
        make_uint4(0u, 0u, 0u, 0u);
}

// tile op `load` (global -> shared) into a panel tile; semantics as load_tile_async.
template <int kThreads, bool kExact = false, class T, int Rows, int Cols>
__device__ __forceinline__ void load_tile_async(SmemPanelTile<T, Rows, Cols> dst, const GlobalMatrix<T>& src, int row0) {
  constexpr int kCPR = Cols / 8;
  static_assert(kThreads % kCPR == 0, "panel loads cover whole rows per pass");
  constexpr int kRowsPerStep = kThreads / kCPR;
  constexpr int kSteps = (Rows + kRowsPerStep - 1) / kRowsPerStep;
  const int row = static_cast<int>(threadIdx.x) / kCPR, chunk = static_cast<int>(threadIdx.x) % kCPR;
  const bool col_ok = chunk * 8 < src.cols;
  const T* g = src.base + (row0 + row) * src.row_stride + chunk * 8;
  const long long step = kRowsPerStep * src.row_stride;
  const unsigned s0 = dst.base() + SmemPanelTile<T, Rows, Cols>::chunk_offset(row, chunk);
#pragma unroll
  for (int it = 0; it < kSteps; ++it) {
    const int r = row + it * kRowsPerStep;
    if (Rows % kRowsPerStep == 0 || r < Rows) {
      const bool valid = col_ok && row0 + r < src.rows;
      // Passes of 8k rows keep the swizzle phase (row & 7); fewer rows a pass (one warpgroup over 256
      // columns: 4) place each pass's chunks anew.
      const unsigned s = kRowsPerStep % 8 == 0 ? s0 + it * kRowsPerStep * 128
                                               : dst.base() + SmemPanelTile<T, Rows, Cols>::chunk_offset(r, chunk);
      if constexpr (kExact)
        cp_async_16_bytes(s, valid ? g : src.base, valid ? chunk_bytes<T>(src.cols, chunk) : 0);
      else
        cp_async_16(s, valid ? g : src.base, valid);
    }
    g += step;
  }
}

}  // namespace device
}  // namespace flashc
