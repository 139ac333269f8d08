// Global <-> shared tile copies: 16-byte vectors, cp.async (L2-only .cg) with zero-fill of rows
// past the valid bound, commit/wait groups for multi-stage buffering.
// Column limits act on whole 16-byte chunks (a limit that is a multiple of 8 16-bit elements), or,
// with kExact = true, element by element: a row whose width ends inside a chunk (an FFN width that
// is not a multiple of 8) reads only the chunk's bytes inside the width (cp.async's src-size; the
// rest is zero-filled) and stores only those elements, so a tensor may be a narrow view of a wider
// buffer (rows padded to 16 bytes) whose padding columns are never read nor written. The emitter
// asks for kExact only where a limit is not known to be whole chunks: it costs registers (the
// gated FFN backward's hidden kernel spilled twice as much with it everywhere).
#pragma once
#include "flashc/device/smem.cuh"
#include "flashc/device/tensor.cuh"

namespace flashc {
namespace device {

// 16-byte async copy; when `valid` is false nothing is read and the 16 bytes are zero-filled
// (src-size 0), so ragged tails are zeros, never garbage (0 * garbage could be NaN).
__device__ __forceinline__ void cp_async_16(unsigned dst, const void* src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}
// 16-byte async copy of which only the first `src_bytes` (0..16) are read; the rest of the 16
// bytes are zero-filled (0: nothing is read, `src` must still be a valid address).
__device__ __forceinline__ void cp_async_16_bytes(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
// Bytes of 16-byte chunk `chunk` of a row of T that lie inside its first `cols` elements: 16 for a
// whole chunk, 0 past the width, the few bytes of a width that ends inside the chunk.
template <class T>
__device__ __forceinline__ int chunk_bytes(int cols, int chunk) {
  constexpr int kEPC = 16 / static_cast<int>(sizeof(T));
  const int n = cols - chunk * kEPC;
  return n >= kEPC ? 16 : n > 0 ? n * static_cast<int>(sizeof(T)) : 0;
}
// 4-byte async copy (row vectors such as lse); .ca is the only cache mode for 4 bytes.
__device__ __forceinline__ void cp_async_4(unsigned dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Wait until at most `Pending` committed groups are still in flight (this thread's copies);
// a __syncthreads() after it makes every thread's copies visible to the block.
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
}

// tile op `load` (global -> shared): rows [row0, row0 + Rows) of `src` into `dst`; rows at or
// past src.rows and columns at or past src.cols zero-filled (whole chunks, or element-exact with
// kExact; column slices: columns_from).
// Asynchronous: commit, wait and __syncthreads before reading dst.
// Every thread of the block (kThreads) must call it.
// Each thread keeps one (row, chunk) position, one global pointer and one shared address and
// advances them by kThreads / kChunksPerRow rows per step: few live registers in the KV loop.
template <int kThreads, bool kExact = false, class T, int Rows, int Cols>
__device__ __forceinline__ void load_tile_async(SmemTile<T, Rows, Cols> dst,
                                                const GlobalMatrix<T>& src, int row0) {
  using Tile = SmemTile<T, Rows, Cols>;
  constexpr int kCPR = Tile::kChunksPerRow;
  if constexpr (kThreads % kCPR == 0) {
    constexpr int kRowsPerStep = kThreads / kCPR;
    constexpr int kSteps = (Rows + kRowsPerStep - 1) / kRowsPerStep;
    // The swizzle depends on row % 8 only, so with a step of 8k rows the shared address moves
    // by a constant.
    constexpr bool kAffine = kRowsPerStep % 8 == 0;
    const int row = static_cast<int>(threadIdx.x) / kCPR, chunk = static_cast<int>(threadIdx.x) % kCPR;
    constexpr int kEPC = Tile::kElemsPerChunk;
    const bool col_ok = chunk * kEPC < src.cols;
    const T* g = src.base + (row0 + row) * src.row_stride + chunk * kEPC;
    const long long step = kRowsPerStep * src.row_stride;
    const unsigned s0 = dst.addr(row, chunk);
#pragma unroll
    for (int it = 0; it < kSteps; ++it) {
      const int r = row + it * kRowsPerStep;
      if (Rows % kRowsPerStep == 0 || r < Rows) {
        const bool valid = col_ok && row0 + r < src.rows;
        const unsigned s = kAffine ? s0 + it * kRowsPerStep * kCPR * 16 : dst.addr(r, chunk);
        if constexpr (kExact)
          cp_async_16_bytes(s, valid ? g : src.base, valid ? chunk_bytes<T>(src.cols, chunk) : 0);
        else
          cp_async_16(s, valid ? g : src.base, valid);
      }
      g += step;
    }
  } else {
    constexpr int kChunks = Rows * kCPR;
    constexpr int kIters = (kChunks + kThreads - 1) / kThreads;
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int idx = it * kThreads + static_cast<int>(threadIdx.x);
      if (kChunks % kThreads == 0 || idx < kChunks) {
        const int row = idx / kCPR;
        const int chunk = idx % kCPR;
        constexpr int kEPC = Tile::kElemsPerChunk;
        const bool valid = row0 + row < src.rows && chunk * kEPC < src.cols;
        const T* g = valid ? src.base + (row0 + row) * src.row_stride + chunk * kEPC : src.base;
        if constexpr (kExact)
          cp_async_16_bytes(dst.addr(row, chunk), g, valid ? chunk_bytes<T>(src.cols, chunk) : 0);
        else
          cp_async_16(dst.addr(row, chunk), g, valid);
      }
    }
  }
}

// tile op `store` (shared -> global): rows [row0, row0 + Rows) of `dst` from `src`; rows at or
// past dst.rows and columns at or past dst.cols skipped (kExact: a chunk the width ends inside is
// stored element by element). 16-byte vectors. Caller puts a __syncthreads() between the writes
// into src and this call.
template <int kThreads, bool kExact = false, class T, int Rows, int Cols>
__device__ __forceinline__ void store_tile(const GlobalMatrix<T>& dst, int row0,
                                           SmemTile<T, Rows, Cols> src) {
  using Tile = SmemTile<T, Rows, Cols>;
  constexpr int kChunks = Rows * Tile::kChunksPerRow;
  constexpr int kIters = (kChunks + kThreads - 1) / kThreads;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int idx = it * kThreads + static_cast<int>(threadIdx.x);
    if (kChunks % kThreads == 0 || idx < kChunks) {
      const int row = idx / Tile::kChunksPerRow;
      const int chunk = idx % Tile::kChunksPerRow;
      if constexpr (!kExact) {
        if (row0 + row < dst.rows && chunk * Tile::kElemsPerChunk < dst.cols) {
          const uint4 v = *reinterpret_cast<const uint4*>(src.ptr(row, chunk));
          *reinterpret_cast<uint4*>(dst.base + (row0 + row) * dst.row_stride + chunk * Tile::kElemsPerChunk) = v;
        }
      } else {
        const int n = dst.cols - chunk * Tile::kElemsPerChunk;  // elements of this chunk inside the width
        if (row0 + row < dst.rows && n > 0) {
          T* g = dst.base + (row0 + row) * dst.row_stride + chunk * Tile::kElemsPerChunk;
          if (n >= Tile::kElemsPerChunk) {
            *reinterpret_cast<uint4*>(g) = *reinterpret_cast<const uint4*>(src.ptr(row, chunk));
          } else {
            const T* s = reinterpret_cast<const T*>(src.ptr(row, chunk));
            for (int e = 0; e < n; ++e) g[e] = s[e];
          }
        }
      }
    }
  }
}

}  // namespace device
}  // namespace flashc
