// Packed variable-length batches (flash-attn's varlen contract): the tokens of B sequences one after another,
// q [Tq, Hq, D], k [Tk, Hkv, D], v [Tk, Hkv, Dv], o [Tq, Hq, Dv], lse [Hq, Tq]; sequence b's queries are rows
// cu_q[b] .. cu_q[b + 1] - 1 and its keys rows cu_k[b] .. cu_k[b + 1] - 1 (int32 offsets [B + 1]). Masks align each
// sequence's bottom-right corner (causal: query i sees keys j <= i + Lk - Lq).
//   * attention_varlen_check: one block reads both offset lists before anything else runs: the first offset
//     not negative, none below the one before it, none past the packed tensor's rows. A bad entry goes to the
//     int32 status [code, index, tensor (0: cu_q, 1: cu_k), value]; the kernels after it read the code and write
//     nothing.
//   * PackedQueryTiles: no work on padding. The grid's x walks the query tiles of all sequences back to back
//     (an upper bound: (Tq + B (M - 1)) / M of them); a block finds its sequence by a warp's prefix sum over
//     the sequences' tile counts (one pass of 32 sequences a step), then its tile within the sequence (the
//     last one first under a causal mask: it sees the most keys). Blocks past the last tile leave at once.
//   * TMA: q, k, v are 3-D maps (D, H, T) of the packed tensors, box (64, 1, rows): a tile's rows start at
//     the sequence's first row; rows past the sequence belong to the next one (masked: keys by the
//     sequence's length, queries never stored), rows past T are zero-filled.
#pragma once
#include "flashc/device/tensor.cuh"
#include "flashc/device/tile_schedule.cuh"
#include "flashc/device/tma.cuh"
#include "flashc/device/types.cuh"

namespace flashc {
namespace device {

// The verdict of attention_varlen_check (int32 status[4]): code, index, tensor (0: cu_q, 1: cu_k), value.
// (Decode's table check uses codes 1-3: one runtime reads both.)
enum VarlenStatus : int {
  kVarlenOk = 0,
  kVarlenOffsetsDecrease = 4,  // cu[index] < cu[index - 1]: sequence index - 1 would have a negative length
  kVarlenOffsetPastRows = 5,   // cu[index] > the packed tensor's rows
  kVarlenFirstNegative = 6,    // cu[0] < 0
};

// One block (any width) checks cu_q [B + 1] against rows_q and cu_k against rows_k.
__device__ __forceinline__ void attention_varlen_check(const TensorArg& cu_q, const TensorArg& cu_k, int rows_q,
                                                       int rows_k, int* status) {
  auto check = [&](const TensorArg& cu, int rows, int tensor) {
    const int* offsets = static_cast<const int*>(cu.data);
    const int n = static_cast<int>(cu.shape[0]);
    auto report = [&](int code, int index, int value) {
      if (atomicCAS(status, 0, code) == 0) {
        status[1] = index;
        status[2] = tensor;
        status[3] = value;
      }
    };
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const int value = offsets[i * cu.stride[0]];
      if (i == 0 && value < 0) report(kVarlenFirstNegative, 0, value);
      else if (i > 0 && value < offsets[(i - 1) * cu.stride[0]]) report(kVarlenOffsetsDecrease, i, value);
      else if (value > rows) report(kVarlenOffsetPastRows, i, value);
    }
  };
  check(cu_q, rows_q, 0);
  check(cu_k, rows_k, 1);
}

// A grid upper bound on the query tiles of every sequence: sum_b ceil(L_b / M) <= (T + B (M - 1)) / M.
__host__ __device__ constexpr long long packed_tile_bound(long long rows, long long sequences, int block_m) {
  return (rows + sequences * (block_m - 1)) / block_m;
}

// One sequence's rows as a kernel sees them: its first query and key rows in the packed tensors and its lengths.
struct SequenceSpan {
  int q_start, q_len, k_start, k_len;
};

// The query tile of this block over packed sequences: every thread of the block calls it (each warp scans on its
// own, so nothing is shared); valid() is false for a block past the last tile or after a failed check.
struct PackedQueryTiles {
  QueryTile tile;
  SequenceSpan span;
  __device__ __forceinline__ bool valid() const { return tile.batch >= 0; }

  template <bool kLongestFirst>
  __device__ __forceinline__ static PackedQueryTiles find(const TensorArg& cu_q, const TensorArg& cu_k, int block_m,
                                                          const int* status) {
    PackedQueryTiles r;
    r.tile = QueryTile{0, static_cast<int>(blockIdx.y), -1};
    r.span = SequenceSpan{0, 0, 0, 0};
    if (status != nullptr && *status != kVarlenOk) return r;
    const int* cq = static_cast<const int*>(cu_q.data);
    const long long sq = cu_q.stride[0];
    const int sequences = static_cast<int>(cu_q.shape[0]) - 1;
    const int t = static_cast<int>(blockIdx.x), lane = lane_id();
    int before = 0;  // tiles of the sequences before this pass
    for (int b0 = 0; b0 < sequences; b0 += 32) {
      const int b = b0 + lane;
      const int len = b < sequences ? cq[(b + 1) * sq] - cq[b * sq] : 0;
      const int tiles = len > 0 ? (len + block_m - 1) / block_m : 0;
      int upto = tiles;  // inclusive prefix sum over the lanes
#pragma unroll
      for (int d = 1; d < 32; d *= 2) {
        const int x = __shfl_up_sync(0xffffffffu, upto, d);
        if (lane >= d) upto += x;
      }
      const int pass = __shfl_sync(0xffffffffu, upto, 31);
      if (t < before + pass) {
        const unsigned ahead = __ballot_sync(0xffffffffu, before + upto > t);
        const int owner = __ffs(ahead) - 1;
        const int first = before + __shfl_sync(0xffffffffu, upto - tiles, owner);
        const int count = __shfl_sync(0xffffffffu, tiles, owner);
        const int seq = b0 + owner, i = t - first;
        const int* ck = static_cast<const int*>(cu_k.data);
        const long long sk = cu_k.stride[0];
        r.tile = QueryTile{kLongestFirst ? count - 1 - i : i, static_cast<int>(blockIdx.y), seq};
        r.span = SequenceSpan{cq[seq * sq], cq[(seq + 1) * sq] - cq[seq * sq], ck[seq * sk],
                              ck[(seq + 1) * sk] - ck[seq * sk]};
        return r;
      }
      before += pass;
    }
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

// Views of one sequence's rows of one head: o [T, H, Dv] and lse [H, T].
template <class T>
__device__ __forceinline__ GlobalMatrix<T> packed_rows(const TensorArg& t, const SequenceSpan& s, int head) {
  return GlobalMatrix<T>{static_cast<T*>(t.data) + s.q_start * t.stride[0] + head * t.stride[1], t.stride[0], s.q_len,
                         static_cast<int>(t.shape[2])};
}
__device__ __forceinline__ GlobalVector<float> packed_row_stats(const TensorArg& t, const SequenceSpan& s, int head) {
  return GlobalVector<float>{static_cast<float*>(t.data) + head * t.stride[0] + s.q_start * t.stride[1], t.stride[1],
                             s.q_len};
}

}  // namespace device
}  // namespace flashc
