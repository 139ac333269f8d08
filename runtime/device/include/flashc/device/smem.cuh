// Shared-memory tiles with an XOR-swizzled layout.
//
// A tile [Rows][Cols] of a 16-bit type is stored row-major in 16-byte chunks (8 elements).
// The chunk index is XOR-ed with a function of the row so that the 8 row addresses an ldmatrix
// phase reads (8 rows, same logical chunk), and the 8 rows a C-fragment store writes, fall into
// 8 distinct 16-byte bank groups: bank-conflict free for cp.async writes, ldmatrix(.trans) reads
// and fragment stores alike. The tile base must be 128-byte aligned.
#pragma once
#include "flashc/device/types.cuh"

namespace flashc {
namespace device {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Orders this thread's generic-proxy shared-memory writes (st.shared, cp.async) before later reads
// by the async proxy (wgmma operands, bulk copies). Call after the writes/cp.async wait, before the
// barrier that publishes them.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Element types: 16-bit (bf16/f16: matmul operands, ldmatrix) or f32 (float: staging only, e.g.
// the backward's dQ accumulator read back by the postprocess; no matmul on f32 tiles).
template <class T, int Rows, int Cols>
struct SmemTile {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "shared tiles hold 16-bit or f32 elements");
  using Elem = T;
  static constexpr int kRows = Rows;
  static constexpr int kCols = Cols;
  static constexpr int kElemsPerChunk = 16 / static_cast<int>(sizeof(T));
  static constexpr int kChunksPerRow = Cols * static_cast<int>(sizeof(T)) / 16;
  static constexpr int kBytes = Rows * Cols * static_cast<int>(sizeof(T));
  static_assert(Cols * sizeof(T) % 64 == 0, "rows must be a multiple of 64 bytes (16-bit head dims 32, 64, 96, ...)");
  static_assert(Rows % 8 == 0, "swizzle period is 8 rows");

  T* data;

  // Physical chunk of logical (row, chunk).
  //  - rows of a multiple of 128 B: XOR the low 3 chunk bits with row % 8;
  //  - rows of 64 B or 192 B (4 or 12 chunks): two rows share a 128-byte bank line, so XOR
  //    the low 2 chunk bits with (row / 2) % 4; row parity already separates the halves.
  static __device__ __forceinline__ int swizzle(int row, int chunk) {
    if constexpr (kChunksPerRow % 8 == 0) {
      return chunk ^ (row & 7);
    } else {
      static_assert(kChunksPerRow % 4 == 0, "unsupported row width");
      return chunk ^ ((row >> 1) & 3);
    }
  }
  // Byte offset of logical chunk `chunk` (16 B) of row `row`.
  static __device__ __forceinline__ int chunk_offset(int row, int chunk) {
    return (row * kChunksPerRow + swizzle(row, chunk)) * 16;
  }
  // Byte offset of element (row, col).
  static __device__ __forceinline__ int elem_offset(int row, int col) {
    return chunk_offset(row, col / kElemsPerChunk) + (col % kElemsPerChunk) * static_cast<int>(sizeof(T));
  }
  __device__ __forceinline__ unsigned addr(int row, int chunk) const {
    return smem_u32(data) + chunk_offset(row, chunk);
  }
  __device__ __forceinline__ char* ptr(int row, int chunk) const {
    return reinterpret_cast<char*>(data) + chunk_offset(row, chunk);
  }
};

// A tile placed at a fixed byte offset of the kernel's dynamic shared memory
// (the offsets come from the memory plan; the generated kernel names them as constants).
template <class Tile>
__device__ __forceinline__ Tile smem_tile_at(unsigned char* smem_base, int byte_offset) {
  return Tile{reinterpret_cast<typename Tile::Elem*>(smem_base + byte_offset)};
}

}  // namespace device
}  // namespace flashc
