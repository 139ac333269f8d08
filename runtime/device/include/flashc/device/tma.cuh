// Tensor Memory Accelerator loads (sm_90 cp.async.bulk.tensor), tiled mode.
//
// A tensor map (CUtensorMap, 128 bytes, built on the host by cuTensorMapEncodeTiled) describes a
// global tensor (up to 5 dims, innermost contiguous, other strides multiples of 16 bytes), the box
// one copy moves and the shared-memory swizzle. With CU_TENSOR_MAP_SWIZZLE_128B and a box of 64
// 16-bit columns, one copy of R rows writes exactly an [R][64] SmemPanelTile panel (chunk c of row r
// at chunk c ^ (r % 8), destination 1024-byte aligned): the layout the wgmma descriptors read.
// Box elements outside the tensor are zero-filled and still counted in the transaction bytes, so a
// ragged tail costs nothing extra, but masks must still exclude those rows (they are zeros, not -inf).
// The map is a kernel parameter `const __grid_constant__ TmaDescriptor` (its address is a param-space
// generic address the TMA unit reads); TmaDescriptor mirrors CUtensorMap's layout so that device code
// needs no <cuda.h> (NVRTC).
#pragma once
#include "flashc/device/mbarrier.cuh"

namespace flashc {

struct alignas(128) TmaDescriptor {  // CUDA 13 aligns CUtensorMap to 128 B (TMA needs 64)
  unsigned long long opaque[16];
};
static_assert(sizeof(TmaDescriptor) == 128, "TmaDescriptor mirrors CUtensorMap (128 bytes)");

namespace device {

// Pull the descriptor into the TMA unit's cache ahead of the first copy (optional, one thread).
__device__ __forceinline__ void tma_prefetch_descriptor(const TmaDescriptor* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// Box at coordinates (c0 innermost, ...) -> shared `dst`; completes `bytes` of transaction on the
// mbarrier `bar` (the caller announced them with mbarrier_arrive_expect_tx). One thread issues.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const TmaDescriptor* map, unsigned bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}
__device__ __forceinline__ void tma_load_3d(unsigned dst, const TmaDescriptor* map, unsigned bar, int c0, int c1,
                                            int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
// Attention tensors [B, H, S, D] as a 4-D map (D, S, H, B): c0 = column, c1 = row, c2 = head, c3 = batch;
// any bhsd / bshd strides work (the map carries them).
__device__ __forceinline__ void tma_load_4d(unsigned dst, const TmaDescriptor* map, unsigned bar, int c0, int c1,
                                            int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

// Shared box -> added into the box at (c0, c1, c2, c3) of a 4-D map (cp.reduce.async.bulk.tensor ... add: f32
// reductions done by the TMA engine; elements outside the tensor are dropped), in this thread's bulk group.
__device__ __forceinline__ void tma_reduce_add_4d(const TmaDescriptor* map, unsigned src, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
          reinterpret_cast<unsigned long long>(map)),
      "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
// The same into the box at (c0, c1, c2) of a 3-D map (a packed [T, H, D] tensor: column, head, row).
__device__ __forceinline__ void tma_reduce_add_3d(const TmaDescriptor* map, unsigned src, int c0, int c1, int c2) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
          reinterpret_cast<unsigned long long>(map)),
      "r"(src), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
// Shared box -> the box at (c0, c1) of a 2-D map (cp.async.bulk.tensor store; elements outside the tensor are not
// written), in this thread's bulk group. The writers of the box fence_async_shared() and meet the issuing thread
// at a barrier first; the box may be overwritten once tma_wait_group<N> (read) says the store has read it.
__device__ __forceinline__ void tma_store_2d(const TmaDescriptor* map, unsigned src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(src), "r"(c0), "r"(c1)
               : "memory");
}
// The same into the box at (c0, c1, c2) of a 3-D map (batched [B, M, N] tensors).
__device__ __forceinline__ void tma_store_3d(const TmaDescriptor* map, unsigned src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(src), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
__device__ __forceinline__ void tma_commit_group() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Until at most N of this thread's bulk groups still read shared memory (kRead) or are still running.
template <int N, bool kRead = true>
__device__ __forceinline__ void tma_wait_group() {
  if (kRead)
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
  else
    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

// All panels of a [R][C] panel tile (C/64 boxes of [R][64]) from rows c1.. of a 4-D map.
template <class Tile>
__device__ __forceinline__ void tma_load_panels(Tile dst, const TmaDescriptor* map, unsigned bar, int row, int head,
                                                int batch) {
#pragma unroll
  for (int p = 0; p < Tile::kPanels; ++p) tma_load_4d(dst.base() + p * Tile::kPanelBytes, map, bar, 64 * p, row, head, batch);
}

}  // namespace device
}  // namespace flashc
