// Documents as segments: a mask modifier `ids[q] == ids[k]` over non-decreasing ids (each document's tokens one run,
// FlexAttention's document mask over packed documents) is packed sequences inside each batch's dense rows. Over such
// ids the ws forward and backward can take tiles aligned to each document's start (varlen's tiles, dense addressing):
// a tile's keys are its document's, no block is classified, and no tile straddles two documents. A document's tile
// masks only where its window's part asks (the diagonal under a causal mask, the document's last key block), at the
// sequence's positions (queries and keys shifted by the document's start alike), so the modifier, where the mask
// evaluates it (no causal window: the last key block), sees its own positions.
//   * attention_segment_plan: one block reads the ids (8 consecutive positions a thread, two 16-byte loads where
//     contiguous) and writes the plan, an int4 per row of [rows, 4] int32:
//       row 0: {form, tiles at 64 rows, at 128, at 192} (form 1: the segment form; 0: the ids are not sorted,
//              Sq != Sk, or there are more documents than the plan holds: the kernels walk the mask table);
//       rows 1 ..: the tile maps at 64, 128 and 192 rows (segment_tile_bound(S, M) rows each: the backward's key
//              tiles, the forward's query tiles): a tile's {first row of its document, the document's length, the
//              tile's index in it, 1}, {0, 0, 0, 0} past the last tile. A tile count of -1: that map did not fit.
//     The plan's size and the forward's grid depend only on Sq (segment_tile_bound), never on the ids: one bundle,
//     one CUDA graph for any documents; new ids need no recompile.
//   * SegmentTile::find: a block's tile (the forward's query tile, the backward's key tile) from its map entry (one
//     16-byte load), or, in the fallback form, the grid's dense tile (blocks past the dense grid's leave).
// The plan is computed whatever the tuning says only where the forward takes it (#tile.attention segments).
#pragma once
#include "flashc/device/optional_member.cuh"
#include "flashc/device/segment_layout.h"
#include "flashc/device/tensor.cuh"
#include "flashc/device/tile_schedule.cuh"
#include "flashc/device/types.cuh"
#include "flashc/device/varlen.cuh"

namespace flashc {
namespace device {

// A Config's kSegments (the ws forward's segment form), false when it has none.
FLASHC_OPTIONAL_MEMBER(SegmentsOf, kSegments, bool, false)

namespace detail {
// Exclusive prefix sum over a block of kThreads threads of v; total = the sum. Every thread calls it. Each warp
// scans the warp sums itself with shuffles (a loop over the warp sums was ~100 dependent instructions a scan: the
// plan kernel, one block, is bound by its warps' instruction chains).
template <int kThreads>
__device__ __forceinline__ int block_exclusive_sum(int v, int& total, int* warp_sums) {
  constexpr int kWarps = kThreads / 32;
  const int lane = lane_id(), warp = warp_id();
  int upto = v;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int x = __shfl_up_sync(0xffffffffu, upto, d);
    if (lane >= d) upto += x;
  }
  if (lane == 31) warp_sums[warp] = upto;
  __syncthreads();
  int sums = lane < kWarps ? warp_sums[lane] : 0;  // inclusive scan of the warp sums, lane w: warps 0 .. w
#pragma unroll
  for (int d = 1; d < kWarps; d *= 2) {
    const int x = __shfl_up_sync(0xffffffffu, sums, d);
    if (lane >= d) sums += x;
  }
  total = __shfl_sync(0xffffffffu, sums, kWarps - 1);
  const int before = warp > 0 ? __shfl_sync(0xffffffffu, sums, warp - 1) : 0;  // (warp: the same in every lane)
  __syncthreads();  // warp_sums may be rewritten by the next call
  return before + upto - v;
}
}  // namespace detail

// One block of kSegmentPlanThreads threads. ids: the modifier's int32 tensor [n] (a position past it reads 0, as
// the modifier's tensor.extract); plan [segment_plan_rows(sq), 4] int32.
// (A template: its shared arrays exist only in the kernel that instantiates it.)
template <int kThreads = kSegmentPlanThreads>
__device__ __forceinline__ void attention_segment_plan(const TensorArg& ids, int sq, int sk, const TensorArg& plan) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "segment plan: whole warps, at most 32 (warp_sums)");
  // A pass: kPass positions, 8 consecutive ones a thread, read by two 16-byte loads where the ids are contiguous
  // and aligned (all of a pass's loads in flight at once; session 43's thread walking its own run of positions paid
  // a memory latency a position: 19 us at 16k tokens; session 44's strided reads, 8 a thread with a 64-bit address
  // each, 9 us).
  constexpr int kPerThread = 8, kPass = kThreads * kPerThread;
  // (plan: a contiguous [rows, 4] i32 workspace, 16-byte aligned like every workspace: rows read as int4)
  __shared__ int warp_sums[32];
  __shared__ int starts[kSegmentPlanMaxDocuments + 1];
  __shared__ int first_tile[kSegmentPlanMaxDocuments];  // a map's first tile of each document
  int4* rows = static_cast<int4*>(plan.data);
  const int n = static_cast<int>(ids.shape[0]);
  const int* id = static_cast<const int*>(ids.data);
  const long long stride = ids.stride[0];
  auto id_at = [&](int i) { return i < n ? id[i * stride] : 0; };
  auto fall_back = [&] {
    if (threadIdx.x == 0) rows[0] = make_int4(kSegmentFallback, -1, -1, -1);
  };
  if (sq != sk || sq <= 0) return fall_back();
  const bool vectors = stride == 1 && (reinterpret_cast<unsigned long long>(id) & 15u) == 0;
  const int lane = lane_id(), t = static_cast<int>(threadIdx.x);
  // Position p starts a document where p == 0 or ids[p] != ids[p - 1]; any ids[p] < ids[p - 1] (ids not sorted)
  // falls back. A thread counts the starts among its positions, a block scan places them: starts in order.
  int documents = 0;
  for (int base = 0; base < sq; base += kPass) {
    const int p0 = base + kPerThread * t;
    int v[kPerThread];
    if (vectors && p0 + kPerThread <= n) {
      const int4 a = reinterpret_cast<const int4*>(id + p0)[0], b = reinterpret_cast<const int4*>(id + p0)[1];
      v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    } else {
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) v[j] = p0 + j < sq ? id_at(p0 + j) : 0;
    }
    const int edge = lane == 0 && p0 > 0 && p0 <= sq ? id_at(p0 - 1) : 0;  // the position before the warp's first
    const int left = __shfl_up_sync(0xffffffffu, v[kPerThread - 1], 1);
    int before = lane == 0 ? edge : left;
    unsigned mine = 0u;  // bit j: position p0 + j starts a document
    int falls = 0;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int i = p0 + j;
      if (i < sq) {
        falls |= i > 0 && v[j] < before;
        if (i == 0 || v[j] != before) mine |= 1u << j;
      }
      before = v[j];
    }
    if (__syncthreads_or(falls)) return fall_back();
    int found = 0;
    int at = documents + detail::block_exclusive_sum<kThreads>(__popc(mine), found, warp_sums);
    if (documents + found > kSegmentPlanMaxDocuments) return fall_back();  // (found: the same in every thread)
    for (; mine != 0u; mine &= mine - 1u) starts[at++] = p0 + __ffs(mine) - 1;
    documents += found;
  }
  __syncthreads();  // the starts written
  if (documents > static_cast<int>(segment_tile_bound(sq, 64))) return fall_back();
  if (threadIdx.x == 0) starts[documents] = sq;
  __syncthreads();
  // Then each block size's map: the documents' first tiles by a prefix sum (kThreads documents at a time), then
  // every thread its map rows, each finding its document by bisection (a thread writing its document's tiles in a
  // loop was the kernel's longest chain where a document spans many tiles). A map that does not fit is zeros.
  int tiles_of[kSegmentMaps];
#pragma unroll
  for (int s = 0; s < kSegmentMaps; ++s) {
    const int block_m = segment_map_block_rows(s);
    const int bound = static_cast<int>(segment_tile_bound(sq, block_m));
    int4* map = rows + segment_map_row(sq, block_m);
    int tiles = 0;
    for (int d0 = 0; d0 < documents; d0 += kThreads) {
      const int d = d0 + t;
      const int count = d < documents ? (starts[d + 1] - starts[d] + block_m - 1) / block_m : 0;
      int pass = 0;
      const int at = tiles + detail::block_exclusive_sum<kThreads>(count, pass, warp_sums);
      if (d < documents) first_tile[d] = at;
      tiles += pass;
    }
    __syncthreads();  // first_tile written
    const int filled = tiles <= bound ? tiles : 0;
    for (int x = t; x < bound; x += kThreads) {
      int4 entry = make_int4(0, 0, 0, 0);
      if (x < filled) {
        int lo = 0, hi = documents - 1;  // the last document whose first tile is at or before x (counts are >= 1)
        while (lo < hi) {
          const int mid = (lo + hi + 1) / 2;
          if (first_tile[mid] <= x) lo = mid;
          else hi = mid - 1;
        }
        entry = make_int4(starts[lo], starts[lo + 1] - starts[lo], x - first_tile[lo], 1);
      }
      map[x] = entry;
    }
    tiles_of[s] = tiles <= bound ? tiles : -1;
    __syncthreads();  // first_tile read before the next map rewrites it
  }
  if (threadIdx.x == 0) rows[0] = make_int4(kSegmentForm, tiles_of[0], tiles_of[1], tiles_of[2]);
}

// A segment-form block's tile: `x` the block's tile index (the forward: blockIdx.x, rows of kBlockRows queries; the
// backward: its head-grouped grid tile's, key tiles of kBlockRows keys: kKeyTiles), `head` and `batch` its own.
// `segment` true with the document's span (queries and keys from its first row: its own causal corner); false in the
// fallback form, the dense grid's tile x (span [0, Sq) x [0, Sk)). batch -1: a block with no tile.
// kLongestFirst: a document's last tile first (the forward under a causal mask; the backward's first key tile
// already sees the most queries).
struct SegmentTile {
  QueryTile tile;
  SequenceSpan span;
  bool segment;
  __device__ __forceinline__ bool valid() const { return tile.batch >= 0; }

  template <int kBlockRows, bool kLongestFirst, bool kKeyTiles = false>
  __device__ __forceinline__ static SegmentTile find(const TensorArg& plan, int sq, int sk, int x, int head,
                                                     int batch) {
    static_assert(kBlockRows == 64 || kBlockRows == 128 || kBlockRows == 192,
                  "segment plan: maps at 64, 128 and 192 rows");
    const int* header = static_cast<const int*>(plan.data);
    const int4* rows = static_cast<const int4*>(plan.data);
    SegmentTile r;
    r.tile = QueryTile{0, head, batch};
    const int tiles = header[segment_tiles_column(kBlockRows)];
    if (header[0] == kSegmentForm && tiles >= 0) {
      const int4 entry = x < tiles ? rows[segment_map_row(sq, kBlockRows) + x] : make_int4(0, 0, 0, 0);
      const int count = (entry.y + kBlockRows - 1) / kBlockRows;
      r.tile.m_block = kLongestFirst ? count - 1 - entry.z : entry.z;
      r.span = SequenceSpan{entry.x, entry.y, entry.x, entry.y};
      r.segment = true;
      if (entry.w == 0) r.tile.batch = -1;
    } else {
      const int blocks = ((kKeyTiles ? sk : sq) + kBlockRows - 1) / kBlockRows;
      r.tile.m_block = kLongestFirst ? blocks - 1 - x : x;
      r.span = SequenceSpan{0, sq, 0, sk};
      r.segment = false;
      if (x >= blocks) r.tile.batch = -1;
    }
    return r;
  }
};

}  // namespace device
}  // namespace flashc
