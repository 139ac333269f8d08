// Decode attention over a KV cache: a few new query tokens per sequence against the cached keys and
// values, split over the keys (split-KV) so that a small batch still fills the GPU.
//
//   attention_decode_split<Config>    one block per (key split, kv head x row group, sequence): a producer
//                                     warp streams 64-key tiles of K and V by TMA into a ring of stages,
//                                     four consumer warps take 16 keys of each tile with their own online
//                                     softmax; the warps' partial results meet in shared memory at the end.
//   attention_decode_combine<Config>  the splits' partial outputs weighted by their log-sum-exps (one
//                                     block a query row); nothing to do when there is one split (the split
//                                     kernel then wrote the output itself).
//
// Rows: the query heads of one kv head share its keys (GQA packing): row r of kv head hk is query head
// hk * kGroup + r / kQueries, token r % kQueries, so K and V are read once for all of them. Up to 16 rows
// a block (one mma row slab); more rows take more row groups (blockIdx.y).
//
// Cache layouts (Config::kPageSize):
//   0      contiguous: k_cache [B, Hkv, capacity, D] (any strides with a unit inner stride: bhsd or bshd);
//          the tensor map has box [1, 1, 64, 64].
//   P > 0  paged: k_cache [pages, P, Hkv, D], block_table [B, pages per sequence] (int32 page ids); key j
//          of sequence b is row j % P of page block_table[b][j / P]; box [1, min(P, 64), 1, 64].
// cache_seqlens [B] (int32): the keys of sequence b are cache rows 0 .. seqlen - 1, the new tokens' included;
// query token t sits at position seqlen - kQueries + t (under kCausal it sees keys up to there).
//
// Tables are checked by `attention_decode_check` before either kernel runs: both read its verdict
// (`status`); after a bad entry the split writes nothing and the combine sets out and lse to NaN (a rejected call's
// outputs are never mistaken for results, even when its error is read later).
#pragma once
#include "flashc/device/grid_dependency.cuh"
#include "flashc/device/mbarrier.cuh"
#include "flashc/device/mma.cuh"
#include "flashc/device/panel.cuh"
#include "flashc/device/table_status.h"
#include "flashc/device/tensor.cuh"
#include "flashc/device/tma.cuh"
#include "flashc/device/types.cuh"

namespace flashc {
namespace device {

// The check's verdict: status[4] = (code, sequence, index, value), the codes of table_status.h.

template <class Config>
struct AttentionDecodePlan {
  using T = typename Config::Elem;
  static constexpr int kHeadDim = Config::kHeadDim;
  static constexpr int kValueDim = Config::kValueDim;
  static constexpr int kQueries = Config::kQueries;  // new tokens per sequence
  static constexpr int kGroup = Config::kGroup;      // query heads per kv head
  static constexpr int kRows = kQueries * kGroup;
  static constexpr int kRowGroups = (kRows + 15) / 16;
  static constexpr int kPageSize = Config::kPageSize;
  static constexpr bool kPaged = kPageSize > 0;
  static constexpr bool kCausal = Config::kCausal;
  static constexpr int kStages = Config::kStages;
  static constexpr int kBlockN = 64;
  static constexpr int kConsumers = 4;  // warps; warp w takes keys 16w .. 16w + 15 of every tile
  static constexpr int kThreads = 32 * (kConsumers + 1);
  static constexpr int kBoxRows = kPaged && kPageSize < kBlockN ? kPageSize : kBlockN;
  static constexpr int kBoxesPerTile = kBlockN / kBoxRows;
  static_assert(kHeadDim % 64 == 0 && kValueDim % 64 == 0 && kHeadDim <= 256 && kValueDim <= 256,
                "decode: head dims are multiples of 64 up to 256");
  static_assert(!kPaged || (kPageSize >= 16 && kPageSize <= 256 && (kPageSize & (kPageSize - 1)) == 0),
                "decode: page sizes are powers of two from 16 to 256");
  static_assert(kQueries >= 1 && kQueries <= 16 && kGroup >= 1, "decode: 1 to 16 query tokens");
  using KTile = SmemPanelTile<T, kBlockN, kHeadDim>;
  using VTile = SmemPanelTile<T, kBlockN, kValueDim>;
  static constexpr int kStageBytes = KTile::kBytes + VTile::kBytes;
  static constexpr int kRingBytes = kStages * kStageBytes;
  // After the loop the ring holds the warps' scaled partial outputs [warp][16][Dv] (f32) for the block's sum.
  static constexpr int kMergeBytes = kConsumers * 16 * kValueDim * 4;
  static_assert(kMergeBytes <= kRingBytes, "decode: the ring must hold the warps' partial outputs");
  static constexpr int kBarrierOffset = kRingBytes;  // full[kStages], empty[kStages] (8 bytes each)
  static constexpr int kRowStatsOffset = kBarrierOffset + 16 * kStages;  // m, l: [2][kConsumers][16] f32
  static constexpr int kSharedBytes = kRowStatsOffset + 2 * kConsumers * 16 * 4;
  static constexpr int kTileBytes = kStageBytes;  // transaction bytes of a whole tile (partial tiles: fewer boxes)
  static constexpr int kBoxBytes = kBoxRows * 128;
};

// Keys [begin, end) of split `split` out of `splits` for a sequence of `seqlen` keys: equal runs of whole
// 64-key tiles of the sequence's own length (a short sequence in a long cache still spreads over the splits).
__device__ __forceinline__ void decode_split_range(int split, int splits, int seqlen, int& begin, int& end) {
  const int tiles = (seqlen + 63) / 64;
  const int per_split = (tiles + splits - 1) / splits;
  begin = min(split * per_split * 64, seqlen);
  end = min((split + 1) * per_split * 64, seqlen);
}

// One block a sequence: cache_seqlens and the pages its keys use, checked; status[0..3] = the first bad
// entry found (code, sequence, index, value), or left 0. status starts zeroed (a runtime-zeroed scratch).
// min_len: the new tokens an append writes (kv_append.cuh), each length must hold them; 0 for decode.
template <int kPageSize>
__device__ __forceinline__ void attention_decode_check(const TensorArg& seqlens, const TensorArg& block_table,
                                                       int capacity, int pages, int* status, int min_len = 0) {
  launch_dependents();  // the split (or an append's copy) may start its prologue now and wait for this verdict
  const int b = blockIdx.x;
  const int seqlen = static_cast<const int*>(seqlens.data)[b * seqlens.stride[0]];
  auto report = [&](int code, int index, int value) {
    if (atomicCAS(status, 0, code) == 0) {
      status[1] = b;
      status[2] = index;
      status[3] = value;
    }
  };
  if (seqlen < 0) {
    if (threadIdx.x == 0) report(kSeqlenNegative, 0, seqlen);
    return;
  }
  if (seqlen > capacity) {
    if (threadIdx.x == 0) report(kSeqlenOverCapacity, capacity, seqlen);
    return;
  }
  if (seqlen < min_len) {
    if (threadIdx.x == 0) report(kSeqlenBelowNew, min_len, seqlen);
    return;
  }
  if constexpr (kPageSize > 0) {
    const int* table = static_cast<const int*>(block_table.data) + b * block_table.stride[0];
    const int used = (seqlen + kPageSize - 1) / kPageSize;
    for (int i = threadIdx.x; i < used; i += blockDim.x) {
      const int page = table[i * block_table.stride[1]];
      if (page < 0 || page >= pages) report(kPageOutOfRange, i, page);
    }
  }
}

// The check as a generated kernel calls it: the capacity and page count from the cache and table shapes
// (k_cache [B, Hkv, S, D] contiguous, [pages, P, Hkv, D] paged).
template <class Config>
__device__ __forceinline__ void attention_decode_check(const TensorArg& k_cache, const TensorArg& seqlens,
                                                       const TensorArg& block_table, int* status) {
  constexpr int P = Config::kPageSize;
  const int capacity = P > 0 ? static_cast<int>(block_table.shape[1]) * P : static_cast<int>(k_cache.shape[2]);
  attention_decode_check<P>(seqlens, block_table, capacity, P > 0 ? static_cast<int>(k_cache.shape[0]) : 0, status);
}

template <class Config>
__device__ __forceinline__ void attention_decode_split(const TmaDescriptor& k_map, const TmaDescriptor& v_map,
                                                       const TensorArg& q, const TensorArg& seqlens,
                                                       const TensorArg& block_table, const TensorArg& out,
                                                       const TensorArg& lse, const TensorArg& o_part,
                                                       const TensorArg& lse_part, const int* status) {
  using Plan = AttentionDecodePlan<Config>;
  using T = typename Plan::T;
  using KTile = typename Plan::KTile;
  using VTile = typename Plan::VTile;
  constexpr int D = Plan::kHeadDim, Dv = Plan::kValueDim;
  extern __shared__ __align__(1024) unsigned char smem[];

  const int split = blockIdx.x, splits = gridDim.x;
  const int hk = blockIdx.y / Plan::kRowGroups, row_group = blockIdx.y % Plan::kRowGroups;
  const int b = blockIdx.z;
  const int seqlen = static_cast<const int*>(seqlens.data)[b * seqlens.stride[0]];
  int key_begin, key_end;
  decode_split_range(split, splits, seqlen, key_begin, key_end);
  const int tiles = key_end > key_begin ? (key_end - key_begin + 63) / 64 : 0;

  const unsigned ring = smem_u32(smem);
  const unsigned full0 = ring + Plan::kBarrierOffset, empty0 = full0 + 8 * Plan::kStages;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < Plan::kStages; ++s) {
      mbarrier_init(full0 + 8 * s, 1);
      mbarrier_init(empty0 + 8 * s, Plan::kConsumers);
    }
    mbarrier_init_fence();
  }
  __syncthreads();
  // Launched programmatically: everything above overlapped the check (or an append before this op); from here on
  // its verdict and the caches it may have written are visible.
  grid_dependency_wait();
  if (*reinterpret_cast<const volatile int*>(status) != kTableOk) return;  // a bad table: nothing read or written

  if (warp == Plan::kConsumers) {  // ---- producer: TMA loads of K and V tiles into the ring ----
    if (lane == 0) {
      tma_prefetch_descriptor(&k_map);
      tma_prefetch_descriptor(&v_map);
    }
    const int* table = Plan::kPaged ? static_cast<const int*>(block_table.data) + b * block_table.stride[0] : nullptr;
    RingPosition<Plan::kStages> pos;
    int cached_first = -1, cached_page = 0;  // 32 consecutive page ids, one a lane
    for (int t = 0; t < tiles; ++t) {
      const int key0 = key_begin + 64 * t;
      const int boxes = Plan::kPaged ? min(Plan::kBoxesPerTile, (key_end - key0 + Plan::kBoxRows - 1) / Plan::kBoxRows)
                                     : 1;
      int page_of_box[Plan::kBoxesPerTile];
      if constexpr (Plan::kPaged) {
#pragma unroll
        for (int j = 0; j < Plan::kBoxesPerTile; ++j) {
          const int index = (key0 + j * Plan::kBoxRows) / Plan::kPageSize;
          if (cached_first < 0 || index >= cached_first + 32) {  // warp-uniform
            cached_first = index;
            const int mine = index + lane;
            cached_page = mine * Plan::kPageSize < key_end ? table[mine * block_table.stride[1]] : 0;
          }
          page_of_box[j] = __shfl_sync(0xffffffffu, cached_page, index - cached_first);
        }
      }
      if (lane == 0) {
        const unsigned full = full0 + 8 * pos.stage, empty = empty0 + 8 * pos.stage;
        mbarrier_wait(empty, pos.phase ^ 1u);
        const unsigned k_dst = ring + pos.stage * Plan::kStageBytes, v_dst = k_dst + KTile::kBytes;
        if constexpr (Plan::kPaged) {
          mbarrier_arrive_expect_tx(full, boxes * Plan::kBoxBytes * (D / 64 + Dv / 64));
          for (int j = 0; j < boxes; ++j) {
            const int row = (key0 + j * Plan::kBoxRows) % Plan::kPageSize;
#pragma unroll
            for (int p = 0; p < D / 64; ++p)
              tma_load_4d(k_dst + p * KTile::kPanelBytes + j * Plan::kBoxBytes, &k_map, full, 64 * p, hk, row,
                          page_of_box[j]);
#pragma unroll
            for (int p = 0; p < Dv / 64; ++p)
              tma_load_4d(v_dst + p * VTile::kPanelBytes + j * Plan::kBoxBytes, &v_map, full, 64 * p, hk, row,
                          page_of_box[j]);
          }
        } else {
          mbarrier_arrive_expect_tx(full, Plan::kTileBytes);
#pragma unroll
          for (int p = 0; p < D / 64; ++p)
            tma_load_4d(k_dst + p * KTile::kPanelBytes, &k_map, full, 64 * p, key0, hk, b);
#pragma unroll
          for (int p = 0; p < Dv / 64; ++p)
            tma_load_4d(v_dst + p * VTile::kPanelBytes, &v_map, full, 64 * p, key0, hk, b);
        }
      }
      __syncwarp();
      pos.advance();
    }
    return;
  }

  // ---- consumers: warp `warp` takes keys 16 warp .. 16 warp + 15 of each tile ----
  const int r0 = lane / 4, c2 = 2 * (lane % 4);  // fragment rows r0, r0 + 8; columns c2, c2 + 1
  const int slab_row0 = row_group * 16;
  // Q's A fragments straight from global memory (rows past kRows are zeros).
  unsigned qf[D / 16][4];
  {
    auto load_pair = [&](int row, int col) -> unsigned {
      const int r = slab_row0 + row;
      if (r >= Plan::kRows) return 0u;
      const int h = hk * Plan::kGroup + r / Plan::kQueries, tok = r % Plan::kQueries;
      const T* p = static_cast<const T*>(q.data) + b * q.stride[0] + h * q.stride[1] + tok * q.stride[2] + col;
      return *reinterpret_cast<const unsigned*>(p);
    };
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      qf[kk][0] = load_pair(r0, 16 * kk + c2);
      qf[kk][1] = load_pair(r0 + 8, 16 * kk + c2);
      qf[kk][2] = load_pair(r0, 16 * kk + 8 + c2);
      qf[kk][3] = load_pair(r0 + 8, 16 * kk + 8 + c2);
    }
  }
  // The last key each fragment row may see (causal: the row's own position).
  int row_last[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int r = slab_row0 + r0 + 8 * i;
    row_last[i] = key_end - 1;
    if constexpr (Plan::kCausal) row_last[i] = min(row_last[i], seqlen - Plan::kQueries + r % Plan::kQueries);
  }
  const float scale_log2 = Config::kScale * kLog2e;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  float acc[Dv / 8][4];
#pragma unroll
  for (int n = 0; n < Dv / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;

  RingPosition<Plan::kStages> pos;
  for (int t = 0; t < tiles; ++t) {
    const int key0 = key_begin + 64 * t;
    const unsigned full = full0 + 8 * pos.stage, empty = empty0 + 8 * pos.stage;
    KTile k_tile{reinterpret_cast<T*>(smem + pos.stage * Plan::kStageBytes)};
    VTile v_tile{reinterpret_cast<T*>(smem + pos.stage * Plan::kStageBytes + KTile::kBytes)};
    mbarrier_wait(full, pos.phase);
    const int my_key0 = key0 + 16 * warp;
    // S = Q Kᵀ over this warp's 16 keys (two n8 slabs).
    float s[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      unsigned kb[4];
      ldmatrix_x4(kb, k_tile.addr(16 * warp + ((lane >> 4) << 3) + (lane & 7), 2 * kk + ((lane >> 3) & 1)));
      mma_16816<T>(s[0], qf[kk], kb[0], kb[1]);
      mma_16816<T>(s[1], qf[kk], kb[2], kb[3]);
    }
    const bool partial = key0 + 64 > key_end || (Plan::kCausal && key0 + 64 > seqlen - Plan::kQueries + 1);
    if (partial) {  // hidden keys -> -inf (a select: garbage past seqlen never leaks in)
#pragma unroll
      for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (my_key0 + 8 * n + c2 + (e & 1) > row_last[e >> 1]) s[n][e] = -INFINITY;
    }
    // Online softmax (base 2) of the two fragment rows.
    float p[2][4];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float tile_max = fmaxf(fmaxf(s[0][2 * i], s[0][2 * i + 1]), fmaxf(s[1][2 * i], s[1][2 * i + 1])) * scale_log2;
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
      const float m_new = fmaxf(m[i], tile_max);
      const float base = m_new == -INFINITY ? 0.f : m_new;
      const float correction = exp2f(m[i] - base);
      m[i] = m_new;
      float sum = 0.f;
#pragma unroll
      for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          p[n][2 * i + e] = exp2f(s[n][2 * i + e] * scale_log2 - base);
          sum += p[n][2 * i + e];
        }
      l[i] = l[i] * correction + sum;
#pragma unroll
      for (int n = 0; n < Dv / 8; ++n) {
        acc[n][2 * i] *= correction;
        acc[n][2 * i + 1] *= correction;
      }
    }
    if (partial && my_key0 + 16 > key_end) {
      // V rows past the sequence may hold anything (NaN): zero this warp's, P is 0 there.
      for (int i = lane; i < 16 * (Dv / 8); i += 32) {
        const int row = 16 * warp + i / (Dv / 8), chunk = i % (Dv / 8);
        if (key0 + row >= key_end)
          *reinterpret_cast<uint4*>(reinterpret_cast<char*>(v_tile.data) + VTile::chunk_offset(row, chunk)) =
              make_uint4(0u, 0u, 0u, 0u);
      }
      __syncwarp();
    }
    // O += P V: P (16 x 16 keys) as one A fragment, V's 16 rows of this warp through ldmatrix.trans.
    unsigned pf[4] = {ElemTraits<T>::pack(p[0][0], p[0][1]), ElemTraits<T>::pack(p[0][2], p[0][3]),
                      ElemTraits<T>::pack(p[1][0], p[1][1]), ElemTraits<T>::pack(p[1][2], p[1][3])};
#pragma unroll
    for (int n = 0; n < Dv / 8; n += 2) {
      unsigned vb[4];
      ldmatrix_x4_trans(vb, v_tile.addr(16 * warp + (((lane >> 3) & 1) << 3) + (lane & 7), n + (lane >> 4)));
      mma_16816<T>(acc[n], pf, vb[0], vb[1]);
      mma_16816<T>(acc[n + 1], pf, vb[2], vb[3]);
    }
    fence_async_shared();  // (the zeroing stores) before TMA refills the stage
    __syncwarp();
    if (lane == 0) mbarrier_arrive(empty);
    pos.advance();
  }

  // ---- the four warps' partial results -> one (m, l, O) per row ----
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
  }
  float* stats = reinterpret_cast<float*>(smem + Plan::kRowStatsOffset);  // m [4][16], l [4][16]
  if (lane % 4 == 0) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      stats[warp * 16 + r0 + 8 * i] = m[i];
      stats[64 + warp * 16 + r0 + 8 * i] = l[i];
    }
  }
  named_barrier_sync(1, 32 * Plan::kConsumers);  // every warp is done with the ring and wrote its stats
  float* merge = reinterpret_cast<float*>(smem);  // [warp][16][Dv]
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int row = r0 + 8 * i;
    float m_all = -INFINITY;
#pragma unroll
    for (int w = 0; w < Plan::kConsumers; ++w) m_all = fmaxf(m_all, stats[w * 16 + row]);
    const float factor = m[i] == -INFINITY ? 0.f : exp2f(m[i] - m_all);
#pragma unroll
    for (int n = 0; n < Dv / 8; ++n) {
      float2 v = make_float2(acc[n][2 * i] * factor, acc[n][2 * i + 1] * factor);
      *reinterpret_cast<float2*>(&merge[(warp * 16 + row) * Dv + 8 * n + c2]) = v;
    }
  }
  named_barrier_sync(1, 32 * Plan::kConsumers);
  const int ctid = threadIdx.x;  // 0 .. 127
  constexpr int kChunks = 16 * Dv / 4;  // float4 units of the block's output
  const bool single = splits == 1;
  for (int u = ctid; u < kChunks; u += 32 * Plan::kConsumers) {
    const int row = u / (Dv / 4), col = 4 * (u % (Dv / 4));
    const int r = slab_row0 + row;
    if (r >= Plan::kRows) continue;
    float m_all = -INFINITY, l_all = 0.f;
#pragma unroll
    for (int w = 0; w < Plan::kConsumers; ++w) m_all = fmaxf(m_all, stats[w * 16 + row]);
#pragma unroll
    for (int w = 0; w < Plan::kConsumers; ++w) {
      const float mw = stats[w * 16 + row];
      if (mw != -INFINITY) l_all += stats[64 + w * 16 + row] * exp2f(mw - m_all);
    }
    float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < Plan::kConsumers; ++w) {
      const float4 v = *reinterpret_cast<const float4*>(&merge[(w * 16 + row) * Dv + col]);
      o.x += v.x, o.y += v.y, o.z += v.z, o.w += v.w;
    }
    const float inv = l_all > 0.f ? 1.f / l_all : 0.f;
    o.x *= inv, o.y *= inv, o.z *= inv, o.w *= inv;
    const float row_lse = l_all > 0.f ? (m_all + __log2f(l_all)) * kLn2 : -INFINITY;
    const int h = hk * Plan::kGroup + r / Plan::kQueries, tok = r % Plan::kQueries;
    if (single) {
      T* dst = static_cast<T*>(out.data) + b * out.stride[0] + h * out.stride[1] + tok * out.stride[2] + col;
      uint2 packed = make_uint2(ElemTraits<T>::pack(o.x, o.y), ElemTraits<T>::pack(o.z, o.w));
      *reinterpret_cast<uint2*>(dst) = packed;
      if (col == 0) static_cast<float*>(lse.data)[b * lse.stride[0] + h * lse.stride[1] + tok * lse.stride[2]] = row_lse;
    } else {
      const int qrow = h * Plan::kQueries + tok;  // o_part [B, splits, Hq * kQueries, Dv]
      float* dst = static_cast<float*>(o_part.data) + b * o_part.stride[0] + split * o_part.stride[1] +
                   qrow * o_part.stride[2] + col;
      *reinterpret_cast<float4*>(dst) = o;
      if (col == 0)
        static_cast<float*>(lse_part.data)[b * lse_part.stride[0] + split * lse_part.stride[1] + qrow * lse_part.stride[2]] =
            row_lse;
    }
  }
}

// The splits' partial outputs -> out, lse. One block of 128 threads a query row (grid: Hq * kQueries, B): the
// row's split log-sum-exps reduced by the block, then warp w sums splits w, w + 4, ... (loads two splits ahead,
// independent of each other: a row of 33 splits costs a few L2 round trips, not 33), the warps' sums meet in
// shared memory.
template <class Config>
__device__ __forceinline__ void attention_decode_combine(const TensorArg& o_part, const TensorArg& lse_part,
                                                         const TensorArg& out, const TensorArg& lse,
                                                         const int* status) {
  using Plan = AttentionDecodePlan<Config>;
  using T = typename Plan::T;
  constexpr int Dv = Plan::kValueDim, kWarps = 4;
  static_assert(Dv <= 4 * 32 * 2, "combine: 4 columns a lane, up to two passes");
  __shared__ float warp_max[kWarps], warp_sum[kWarps];
  __shared__ float4 partial[kWarps][Dv / 4];
  const int splits = static_cast<int>(o_part.shape[1]);
  const int qrow = blockIdx.x, b = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  grid_dependency_wait();  // (launched programmatically after the split)
  if (*reinterpret_cast<const volatile int*>(status) != kTableOk) {  // a bad table: this row's out and lse NaN
    const int h = qrow / Plan::kQueries, tok = qrow % Plan::kQueries;
    T* dst = static_cast<T*>(out.data) + b * out.stride[0] + h * out.stride[1] + tok * out.stride[2];
    for (int c = threadIdx.x; c < Dv; c += blockDim.x) dst[c] = from_float<T>(__int_as_float(0x7fffffff));
    if (threadIdx.x == 0)
      static_cast<float*>(lse.data)[b * lse.stride[0] + h * lse.stride[1] + tok * lse.stride[2]] =
          __int_as_float(0x7fffffff);
    return;
  }
  if (splits == 1) return;  // one split wrote the output itself
  const float* lp = static_cast<const float*>(lse_part.data) + b * lse_part.stride[0] + qrow * lse_part.stride[2];
  const float* op = static_cast<const float*>(o_part.data) + b * o_part.stride[0] + qrow * o_part.stride[2];
  float m = -INFINITY;
  for (int s = threadIdx.x; s < splits; s += 32 * kWarps) m = fmaxf(m, lp[s * lse_part.stride[1]]);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) warp_max[warp] = m;
  __syncthreads();
  const float m_all = fmaxf(fmaxf(warp_max[0], warp_max[1]), fmaxf(warp_max[2], warp_max[3]));
  float sum = 0.f;
  float4 acc[2] = {make_float4(0.f, 0.f, 0.f, 0.f), make_float4(0.f, 0.f, 0.f, 0.f)};
  if (m_all != -INFINITY) {
    for (int s0 = warp; s0 < splits; s0 += 2 * kWarps) {
      const int s1 = min(s0 + kWarps, splits - 1);  // the second split of the pair (clamped; weighted 0 if past)
      const float l0 = lp[s0 * lse_part.stride[1]], l1 = lp[s1 * lse_part.stride[1]];
      float4 v0[2], v1[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int col = 4 * lane + 128 * h;
        if (col < Dv) {
          v0[h] = *reinterpret_cast<const float4*>(op + s0 * o_part.stride[1] + col);
          v1[h] = *reinterpret_cast<const float4*>(op + s1 * o_part.stride[1] + col);
        }
      }
      const float w0 = l0 == -INFINITY ? 0.f : __expf(l0 - m_all);
      const float w1 = s0 + kWarps < splits && l1 != -INFINITY ? __expf(l1 - m_all) : 0.f;
      sum += w0 + w1;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        acc[h].x += w0 * v0[h].x + w1 * v1[h].x;
        acc[h].y += w0 * v0[h].y + w1 * v1[h].y;
        acc[h].z += w0 * v0[h].z + w1 * v1[h].z;
        acc[h].w += w0 * v0[h].w + w1 * v1[h].w;
      }
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h)
    if (4 * lane + 128 * h < Dv) partial[warp][lane + 32 * h] = acc[h];
  if (lane == 0) warp_sum[warp] = sum;
  __syncthreads();
  const float total = warp_sum[0] + warp_sum[1] + warp_sum[2] + warp_sum[3];
  const float inv = total > 0.f ? 1.f / total : 0.f;
  const int h = qrow / Plan::kQueries, tok = qrow % Plan::kQueries;
  T* dst = static_cast<T*>(out.data) + b * out.stride[0] + h * out.stride[1] + tok * out.stride[2];
  for (int u = threadIdx.x; u < Dv / 4; u += 32 * kWarps) {
    float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float4 v = partial[w][u];
      o.x += v.x, o.y += v.y, o.z += v.z, o.w += v.w;
    }
    *reinterpret_cast<uint2*>(dst + 4 * u) =
        make_uint2(ElemTraits<T>::pack(o.x * inv, o.y * inv), ElemTraits<T>::pack(o.z * inv, o.w * inv));
  }
  if (threadIdx.x == 0)
    static_cast<float*>(lse.data)[b * lse.stride[0] + h * lse.stride[1] + tok * lse.stride[2]] =
        total > 0.f ? m_all + __logf(total) : -INFINITY;
}

}  // namespace device
}  // namespace flashc
