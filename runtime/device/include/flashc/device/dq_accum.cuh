// The attention backward's f32 dQ accumulator (dq_accum [B, H, S, D], the warp-specialised main kernel's TMA
// reductions add into it) without the preprocess's zero fill: the flags of its 64 x 64 tiles and what reads and
// writes them (attention_bwd_ws.cuh's Config::kDqFill and kDqConvert; docs/design/backward-ends.md):
//   DqFirstWriters    the flags, [batch][head][64-row tile][64-column part] i32, cleared by the preprocess
//                     (attention_bwd_ends.cuh); 0 unclaimed, 1 claimed, >= 2 stored or zeroed (with kDqConvert,
//                     2 + the reductions a part still expects), -1 converted by the main kernel;
//   zero_dq_tiles     kZeroAhead: one warp claims, zeroes and releases the tiles under a block's rows;
//   DqConvertQueue,   kDqConvert: the last reduction into a part queues it (shared memory), and one warp converts
//   count_dq_reduction,  it into the element type's dQ.
//   convert_dq_part
#pragma once
#include "flashc/device/tensor.cuh"
#include "flashc/device/tma.cuh"
#include "flashc/device/types.cuh"
#include "flashc/device/smem.cuh"

namespace flashc {
namespace device {
namespace detail {

// kDqFill other than kPreprocess: the flags of dq_accum's 64 x 64 tiles, [batch][head][row tile][column part]
// (dq_flags; zeroed by the preprocess). 0: no block has reached the tile; 1: claimed, its store or zeros in flight;
// 2: stored or zeroed.
struct DqFirstWriters {
  int* flags;
  int heads, row_tiles, parts;
  __device__ __forceinline__ int* at(int batch, int head, int row0, int col0) const {
    return flags + ((static_cast<long long>(batch) * heads + head) * row_tiles + row0 / 64) * parts + col0 / 64;
  }
};

__device__ __forceinline__ int load_acquire_cta_shared(const int* p) {
  int value;
  asm volatile("ld.acquire.cta.shared.b32 %0, [%1];\n" : "=r"(value) : "r"(smem_u32(p)) : "memory");
  return value;
}
__device__ __forceinline__ void store_release_cta_shared(int* p, int value) {
  asm volatile("st.release.cta.shared.b32 [%0], %1;\n" ::"r"(smem_u32(p)), "r"(value) : "memory");
}
// The rows [row0, row0 + rows) of dq_accum [B, H, S, kHeadCols] f32 of (batch, head): their 64-row tiles claimed,
// zeroed where won, and confirmed stored (flag >= 2) either way, by one warp (kZeroAhead: part 0's flag is the tile's
// claim; every part is released, the postprocess's "written"). The value released is released(t) (warp-collective):
// 2, or with kDqConvert 2 + the reductions the tile's parts expect; part 0 goes last, so that a block that sees it
// finds every part counted. dq_accum is the program's own contiguous workspace, so a tile is 64 * kHeadCols
// consecutive floats: the warp's few registers (the producer warpgroup's) hold a pointer and an index, not the
// tensor's 64-bit strides.
template <int kHeadCols, class Released>
__device__ __forceinline__ void zero_dq_tiles(const TensorArg& dq_accum, const DqFirstWriters& writers, int batch,
                                              int head, int row0, int rows, Released&& released) {
  constexpr int kQuads = kHeadCols / 4;  // float4 a row
  const int lane = lane_id();
  const int sq = static_cast<int>(dq_accum.shape[2]);
  const int last_tile = min((row0 + rows - 1) / 64, writers.row_tiles - 1);
  for (int t = row0 / 64; t <= last_tile; ++t) {
    int* flag = writers.at(batch, head, t * 64, 0);
    int won = 0;
    if (lane == 0) won = load_acquire_gpu(flag) == 0 && atomicCAS(flag, 0, 1) == 0;
    won = __shfl_sync(0xffffffffu, won, 0);
    if (won) {
      float4* tile = reinterpret_cast<float4*>(static_cast<float*>(dq_accum.data)) +
                     ((static_cast<long long>(batch) * writers.heads + head) * sq + t * 64) * kQuads;
      const int quads = min(64, sq - t * 64) * kQuads;
      for (int i = lane; i < quads; i += 32) tile[i] = make_float4(0.f, 0.f, 0.f, 0.f);
      const int value = released(t);
      __threadfence();  // each lane's zeros before the release (the warp's barrier passes them to lane 0)
      __syncwarp();
      if (lane > 0 && lane < writers.parts) store_release_gpu(flag + lane, value);
      __syncwarp();
      if (lane == 0) store_release_gpu(flag, value);
    } else if (lane == 0) {
      while (load_acquire_gpu(flag) == 1) __nanosleep(64);  // (unmasked: every key block's warp polls tile 0 at once)
    }
    __syncwarp();
  }
}

// kDqConvert: the parts of dq_accum whose last reduction has completed, from the consumers' issuing threads to the
// producer warpgroup's second warp, which converts them (shared memory: [0] tail, [1] head, [2] consumer warpgroups
// done, [4, 20) a ring of flag indices + 1).
struct DqConvertQueue {
  static constexpr int kRing = 16;
  int* words;
  // One thread: waits while the ring is full (the converting warp never waits on the consumers).
  __device__ __forceinline__ void push(int index) const {
    const int slot = atomicAdd(words, 1);
    while (slot - load_acquire_cta_shared(words + 1) >= kRing) __nanosleep(32);
    store_release_cta_shared(words + 4 + slot % kRing, index + 1);
  }
  // One thread a consumer warpgroup, after its last push.
  __device__ __forceinline__ void consumer_done() const {
    __threadfence_block();
    atomicAdd(words + 2, 1);
  }
};

// kDqConvert: a consumer's reduction into the part at `flag` has completed (its issuing thread waited for the bulk group
// to be written and fenced the async proxy): counted; the last one queues the part for conversion.
__device__ __forceinline__ void count_dq_reduction(int* flag, const DqFirstWriters& writers,
                                                   const DqConvertQueue& queue) {
  if (flag == nullptr) return;
  if (fetch_add_acq_rel_gpu(flag, -1) == 3) queue.push(static_cast<int>(flag - writers.flags));
}

// kDqConvert: the part `index` of dq_accum (flags' index: batch, head, 64-row tile, 64-column part) as dQ in the
// element type, by one warp; 8 floats a lane at a time, read past L1 (the reductions wrote L2).
template <class Elem, int kHeadCols>
__device__ __forceinline__ void convert_dq_part(const TensorArg& dq_accum, const TensorArg& dq,
                                                const DqFirstWriters& writers, int index) {
  const int part = index % writers.parts, rest = index / writers.parts;
  const int tile = rest % writers.row_tiles, bh = rest / writers.row_tiles;
  const int head = bh % writers.heads, batch = bh / writers.heads;
  const int sq = static_cast<int>(dq_accum.shape[2]);
  const int rows = min(64, sq - tile * 64), chunks = min(64, kHeadCols - part * 64) / 8;  // 8 columns a chunk
  const float* src = static_cast<const float*>(dq_accum.data) +
                     ((static_cast<long long>(batch) * writers.heads + head) * sq + tile * 64) * kHeadCols + part * 64;
  Elem* dst = static_cast<Elem*>(dq.data) + batch * dq.stride[0] + head * dq.stride[1] + (tile * 64) * dq.stride[2] +
              part * 64;
  for (int i = lane_id(); i < rows * chunks; i += 32) {
    const int r = i / chunks, c = (i % chunks) * 8;
    const float4 lo = __ldcg(reinterpret_cast<const float4*>(src + r * kHeadCols + c));
    const float4 hi = __ldcg(reinterpret_cast<const float4*>(src + r * kHeadCols + c + 4));
    uint4 out;
    Elem* e = reinterpret_cast<Elem*>(&out);
    e[0] = from_float<Elem>(lo.x), e[1] = from_float<Elem>(lo.y), e[2] = from_float<Elem>(lo.z),
    e[3] = from_float<Elem>(lo.w), e[4] = from_float<Elem>(hi.x), e[5] = from_float<Elem>(hi.y),
    e[6] = from_float<Elem>(hi.z), e[7] = from_float<Elem>(hi.w);
    *reinterpret_cast<uint4*>(dst + r * dq.stride[2] + c) = out;
  }
}

}  // namespace detail
}  // namespace device
}  // namespace flashc
