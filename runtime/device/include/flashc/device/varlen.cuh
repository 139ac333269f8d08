// Packed variable-length batches (flash-attn's varlen contract): the tokens of B sequences one after another,
// q [Tq, Hq, D], k [Tk, Hkv, D], v [Tk, Hkv, Dv], o [Tq, Hq, Dv], lse [Hq, Tq]; sequence b's queries are rows
// cu_q[b] .. cu_q[b + 1] - 1 and its keys rows cu_k[b] .. cu_k[b + 1] - 1 (int32 offsets [B + 1]). Masks align each
// sequence's bottom-right corner (causal: query i sees keys j <= i + Lk - Lq).
//   * attention_varlen_plan: one block reads both offset lists before anything else runs (the first offset not
//     negative, none below the one before it, none past the packed tensor's rows; a bad entry goes to the int32
//     status [code, index, tensor (0: cu_q, 1: cu_k), value] and the kernels after it write nothing) and writes
//     the tile map: entry t of the grid's x names the sequence of query tile t and that sequence's first tile
//     (int2), -1 past the last tile. No work on padding: the grid walks the tiles of all sequences back to back,
//     packed_tile_bound(Tq, B, M) of them at most; a block's lookup is one load, whatever B.
//   * PackedQueryTiles: a block's tile from the map (the last tile of its sequence first under a causal mask:
//     it sees the most keys). Blocks past the last tile leave at once.
//   * TMA: q, k, v are 3-D maps (D, H, T) of the packed tensors, box (64, 1, rows): a tile's rows start at
//     the sequence's first row; rows past the sequence belong to the next one (masked: keys by the
//     sequence's length, queries never stored; V's cleared, attention_fwd_ws.cuh), rows past T are zero-filled.
#pragma once
#include "flashc/device/panel.cuh"
#include "flashc/device/table_status.h"
#include "flashc/device/tensor.cuh"
#include "flashc/device/tile_schedule.cuh"
#include "flashc/device/tma.cuh"
#include "flashc/device/types.cuh"

namespace flashc {
namespace device {

// The verdict of attention_varlen_plan (int32 status[4]): code, index, tensor (0: cu_q, 1: cu_k), value; the codes
// of table_status.h.

// A grid upper bound on the query tiles of every sequence: sum_b ceil(L_b / M) <= (T + B (M - 1)) / M.
__host__ __device__ constexpr long long packed_tile_bound(long long rows, long long sequences, int block_m) {
  return (rows + sequences * (block_m - 1)) / block_m;
}

// One block (blockDim.x a multiple of 32, up to 1024): checks cu_q [B + 1] against rows_q and cu_k against rows_k,
// then (offsets good) writes tile_map [packed_tile_bound(rows, B, block_m)] for tiles of block_m query rows, or
// (key_tiles: the backward, a block a key tile) of block_m key rows.
__device__ __forceinline__ void attention_varlen_plan(const TensorArg& cu_q, const TensorArg& cu_k, int rows_q,
                                                      int rows_k, int block_m, const TensorArg& tile_map,
                                                      int* status, bool key_tiles = false) {
  __shared__ int warp_sums[32];
  __shared__ int bad;
  if (threadIdx.x == 0) bad = 0;
  __syncthreads();
  auto check = [&](const TensorArg& cu, int rows, int tensor) {
    const int* offsets = static_cast<const int*>(cu.data);
    const int n = static_cast<int>(cu.shape[0]);
    auto report = [&](int code, int index, int value) {
      bad = 1;
      if (atomicCAS(status, 0, code) == 0) {
        status[1] = index;
        status[2] = tensor;
        status[3] = value;
      }
    };
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const int value = offsets[i * cu.stride[0]];
      if (i == 0 && value < 0) report(kFirstOffsetNegative, 0, value);
      else if (i > 0 && value < offsets[(i - 1) * cu.stride[0]]) report(kOffsetsDecrease, i, value);
      else if (value > rows) report(kOffsetPastRows, i, value);
    }
  };
  check(cu_q, rows_q, 0);
  check(cu_k, rows_k, 1);
  __syncthreads();
  if (bad) return;
  // Tiles of each sequence, a block-wide prefix sum a pass of blockDim.x sequences, each thread writing its
  // sequence's entries.
  const TensorArg& cu = key_tiles ? cu_k : cu_q;
  const int* cq = static_cast<const int*>(cu.data);
  const long long sq = cu.stride[0];
  int2* map = static_cast<int2*>(tile_map.data);
  const int sequences = static_cast<int>(cu_q.shape[0]) - 1, entries = static_cast<int>(tile_map.shape[0]);
  const int lane = lane_id(), warp = warp_id(), warps = static_cast<int>(blockDim.x) / 32;
  int before = 0;
  for (int b0 = 0; b0 < sequences; b0 += blockDim.x) {
    const int b = b0 + static_cast<int>(threadIdx.x);
    const int tiles = b < sequences ? (cq[(b + 1) * sq] - cq[b * sq] + block_m - 1) / block_m : 0;
    int upto = tiles;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const int x = __shfl_up_sync(0xffffffffu, upto, d);
      if (lane >= d) upto += x;
    }
    if (lane == 31) warp_sums[warp] = upto;
    __syncthreads();
    int warp_base = 0, pass = 0;
    for (int w = 0; w < warps; ++w) {
      if (w < warp) warp_base += warp_sums[w];
      pass += warp_sums[w];
    }
    const int first = before + warp_base + upto - tiles;
    for (int i = 0; i < tiles && first + i < entries; ++i) map[first + i] = make_int2(b, first);
    before += pass;
    __syncthreads();  // warp_sums is rewritten by the next pass
  }
  for (int t = before + static_cast<int>(threadIdx.x); t < entries; t += blockDim.x) map[t] = make_int2(-1, 0);
}

// After a failed offsets check, the kernel's outputs are set to NaN (a rejected call's outputs are never mistaken for
// results, even when its error is read later): rows x * rows_per_block.. of head blockIdx.y of a packed [T, H, C]
// tensor (every gridDim.x-th such chunk after), and of `stats` ([H, T] f32, or null) the same rows.
template <class Elem>
__device__ __forceinline__ void varlen_poison_rows(const TensorArg& t, const TensorArg* stats, int rows_per_block) {
  const int head = blockIdx.y, rows = static_cast<int>(t.shape[0]), width = static_cast<int>(t.shape[2]);
  const float nan = __int_as_float(0x7fffffff);
  for (int r0 = blockIdx.x * rows_per_block; r0 < rows; r0 += gridDim.x * rows_per_block)
    for (int i = threadIdx.x; i < rows_per_block * width; i += blockDim.x) {
      const int r = r0 + i / width, c = i % width;
      if (r >= rows) break;
      static_cast<Elem*>(t.data)[r * t.stride[0] + head * t.stride[1] + c] = from_float<Elem>(nan);
      if (stats != nullptr && c == 0) static_cast<float*>(stats->data)[head * stats->stride[0] + r * stats->stride[1]] = nan;
    }
}

__device__ __forceinline__ bool varlen_rejected(const int* status) {
  return *reinterpret_cast<const volatile int*>(status) != kTableOk;
}

// The packed backward's elementwise ends, one block (128 threads) per 64 rows of one head (grid (ceil(T / 64), H)):
// before it, delta[h][t] = sum_c dO[t][h][c] O[t][h][c] in f32 and dq_accum[t][h][:] = 0; after it, dq = dq_accum
// rounded to the element type (the main kernel scales dQ), or NaN when the offsets failed their check (as the main
// kernel sets dk and dv).
template <class Elem>
__device__ __forceinline__ void attention_varlen_bwd_prepare(const TensorArg& o, const TensorArg& dout,
                                                             const TensorArg& delta, const TensorArg& dq_accum) {
  const int head = blockIdx.y, rows = static_cast<int>(o.shape[0]), width = static_cast<int>(o.shape[2]);
  const int dq_width = static_cast<int>(dq_accum.shape[2]);
  const int warp = warp_id(), lane = lane_id();
  for (int r = blockIdx.x * 64 + warp; r < min(rows, static_cast<int>(blockIdx.x) * 64 + 64); r += 4) {
    const Elem* orow = static_cast<const Elem*>(o.data) + r * o.stride[0] + head * o.stride[1];
    const Elem* drow = static_cast<const Elem*>(dout.data) + r * dout.stride[0] + head * dout.stride[1];
    float sum = 0.f;
    for (int c = lane; c < width; c += 32) sum += to_float(orow[c]) * to_float(drow[c]);
#pragma unroll
    for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (lane == 0) static_cast<float*>(delta.data)[head * delta.stride[0] + r * delta.stride[1]] = sum;
    float* acc = static_cast<float*>(dq_accum.data) + r * dq_accum.stride[0] + head * dq_accum.stride[1];
    for (int c = lane; c < dq_width; c += 32) acc[c] = 0.f;
  }
}

template <class Elem>
__device__ __forceinline__ void attention_varlen_bwd_finish(const TensorArg& dq_accum, const TensorArg& dq,
                                                            const int* status) {
  if (varlen_rejected(status)) return varlen_poison_rows<Elem>(dq, nullptr, 64);
  const int head = blockIdx.y, rows = static_cast<int>(dq.shape[0]), width = static_cast<int>(dq.shape[2]);
  for (int i = threadIdx.x; i < 64 * width; i += blockDim.x) {
    const int r = blockIdx.x * 64 + i / width, c = i % width;
    if (r >= rows) break;
    static_cast<Elem*>(dq.data)[r * dq.stride[0] + head * dq.stride[1] + c] =
        from_float<Elem>(static_cast<const float*>(dq_accum.data)[r * dq_accum.stride[0] + head * dq_accum.stride[1] + c]);
  }
}

// One sequence's rows as a kernel sees them: its first query and key rows in the packed tensors and its lengths.
struct SequenceSpan {
  int q_start, q_len, k_start, k_len;
};

// The query tile of this block over packed sequences, from the plan's tile map; valid() is false for a block past
// the last tile or after a failed check.
struct PackedQueryTiles {
  QueryTile tile;
  SequenceSpan span;
  bool segment = false;  // a document's tile in dense rows (segments.cuh): span and corner its own
  __device__ __forceinline__ bool valid() const { return tile.batch >= 0; }

  // kKeyTiles: the map counts key tiles (the backward's blocks), m_block is the key tile.
  template <bool kLongestFirst, bool kKeyTiles = false>
  __device__ __forceinline__ static PackedQueryTiles find(const TensorArg& cu_q, const TensorArg& cu_k,
                                                          const TensorArg& tile_map, int block_m, const int* status) {
    PackedQueryTiles r;
    r.span = SequenceSpan{0, 0, 0, 0};
    const int t = static_cast<int>(blockIdx.x);
    const int2 entry = t < tile_map.shape[0] ? static_cast<const int2*>(tile_map.data)[t] : make_int2(-1, 0);
    r.tile = QueryTile{0, static_cast<int>(blockIdx.y), -1};
    if (entry.x < 0 || (status != nullptr && *status != kTableOk)) return r;
    const int seq = entry.x;
    const int* cq = static_cast<const int*>(cu_q.data);
    const int* ck = static_cast<const int*>(cu_k.data);
    const int q0 = cq[seq * cu_q.stride[0]], q1 = cq[(seq + 1) * cu_q.stride[0]];
    const int k0 = ck[seq * cu_k.stride[0]], k1 = ck[(seq + 1) * cu_k.stride[0]];
    const int i = t - entry.y, count = ((kKeyTiles ? k1 - k0 : q1 - q0) + block_m - 1) / block_m;
    r.tile = QueryTile{kLongestFirst ? count - 1 - i : i, static_cast<int>(blockIdx.y), seq};
    r.span = SequenceSpan{q0, q1 - q0, k0, k1 - k0};
    return r;
  }
};

// All panels of a [R][C] panel tile from rows `row`.. of head `head` of a packed [T, H, C] tensor's 3-D map.
template <class Tile>
__device__ __forceinline__ void tma_load_packed_panels(Tile dst, const TmaDescriptor* map, unsigned bar, int row,
                                                       int head) {
#pragma unroll
  for (int p = 0; p < Tile::kPanels; ++p) tma_load_3d(dst.base() + p * Tile::kPanelBytes, map, bar, 64 * p, head, row);
}

// Rows row.. of one head of a tile's batch: a dense [B, H, S, C] tensor's 4-D map, or (kPacked) rows of the packed
// tensor's 3-D map.
template <bool kPacked, class Tile>
__device__ __forceinline__ void tma_load_rows(Tile dst, const TmaDescriptor* map, unsigned bar, int row, int head,
                                              int batch) {
  if constexpr (kPacked) tma_load_packed_panels(dst, map, bar, row, head);
  else tma_load_panels(dst, map, bar, row, head, batch);
}

// f(j, tile) for the tiles of this block: for_each_query_tile's, or (kPacked) the one tile the plan's map gave it.
template <bool kPacked, bool kPersistent, bool kLongestFirst, class F>
__device__ __forceinline__ void for_each_tile(const PackedQueryTiles& packed, int row_blocks, int heads, int batch,
                                              F&& f) {
  if constexpr (kPacked) f(0, packed.tile);
  else for_each_query_tile<kPersistent, kLongestFirst>(row_blocks, heads, batch, f);
}

// Tensor rows start.. (len of them) of one head: a packed [T, H, C] tensor's (kPacked), else the [B, H, S, C]
// tensor's batch (rows start.. of it: a document's, segments.cuh; the dense span's start is 0, its len S);
// per-row statistics of a packed [H, T] or a dense [B, H, S] tensor alike.
template <bool kPacked, class T>
__device__ __forceinline__ GlobalMatrix<T> sequence_rows(const TensorArg& t, int start, int len, int batch, int head) {
  if constexpr (kPacked) {
    return GlobalMatrix<T>{static_cast<T*>(t.data) + start * t.stride[0] + head * t.stride[1], t.stride[0], len,
                           static_cast<int>(t.shape[2])};
  } else {
    const GlobalMatrix<T> all = matrix_at<T>(t, batch, head);
    return GlobalMatrix<T>{all.base + start * all.row_stride, all.row_stride, len, all.cols};
  }
}
template <bool kPacked>
__device__ __forceinline__ GlobalVector<float> sequence_stats(const TensorArg& t, int start, int len, int batch,
                                                              int head) {
  if constexpr (kPacked) {
    return GlobalVector<float>{static_cast<float*>(t.data) + head * t.stride[0] + start * t.stride[1], t.stride[1], len};
  } else {
    const GlobalVector<float> all = vector_at<float>(t, batch, head);
    return GlobalVector<float>{all.base + start * all.stride, all.stride, len};
  }
}

// A box added into rows row.. of one head: a dense tensor's 4-D map (column, row, head, batch) or a packed one's 3-D
// map (column, head, row).
template <bool kPacked>
__device__ __forceinline__ void tma_reduce_rows(const TmaDescriptor* map, unsigned src, int col, int row, int head,
                                                int batch) {
  if constexpr (kPacked) tma_reduce_add_3d(map, src, col, head, row);
  else tma_reduce_add_4d(map, src, col, row, head, batch);
}

}  // namespace device
}  // namespace flashc
