// Block classes of a mask modifier that reads tensors (tile.classify_blocks, role
// attention_mask_blocks[_transposed]): a small kernel classifies every 64 x 64 block of the
// (query, key) plane from the tensors' values before the attention kernels run, so that they skip
// the blocks it hides at either end of a block row and mask only those it hides in part. Nothing is built on the host and
// nothing is recompiled when the values change (a document mask's ids, say).
//
// The table: i32 [Bt, Ht, rows, 2 + 2 * columns] (Bt = B or 1, Ht = Hq or 1: one slice per batch / head
// where the modifier reads b / h). Row r covers plane rows [64r, 64r + 64): query rows, or key rows
// when transposed (the backward's kernels walk query blocks per key block).
//   [0], [1]              the first column block the modifier does not hide whole, one past the last (0, 0: none)
//   [2 + c]               column block c: 0 hidden whole, 2 shown whole, 1 otherwise (masked elementwise)
//   [2 + columns + c]     the first column block >= c not hidden whole (columns: none), so that the kernels
//                         step over hidden blocks anywhere in a row (a block-sparse layout) with one load a row
// The classes come from interval arithmetic over the block (mask_mod.cuh's IndexRange, the tensor
// reads scanning the block's positions), which is sound: 0 and 2 are only said when proven.
#pragma once
#include "flashc/device/mask.cuh"
#include "flashc/device/segment_layout.h"
#include "flashc/device/tensor.cuh"

namespace flashc {
namespace device {

constexpr int kMaskBlock = 64;  // the table's block: the gcd of every kernel's block sizes

enum : int { kBlockHidden = 0, kBlockPartial = 1, kBlockShown = 2 };

// The parts of a block's mask (mask_mod.cuh's kMaskWindow | kMaskModifier) from its window's needs_mask and its
// class in the table.
__device__ __forceinline__ int table_mask_parts(bool window_masks, int cls) {
  return (window_masks ? kMaskWindow : 0) | (cls != kBlockShown ? kMaskModifier : 0);
}

// The table slice of batch b, head h.
__device__ __forceinline__ const int* mask_block_slice(const TensorArg& table, int b, int h) {
  const int bt = table.shape[0] > 1 ? b : 0, ht = table.shape[1] > 1 ? h : 0;
  return static_cast<const int*>(table.data) + bt * table.stride[0] + ht * table.stride[1];
}

// The kernel of role attention_mask_blocks(_transposed): grid (ceil(rows / 64), Ht, Bt), kThreads
// threads; one block classifies one row. q and k give Sq and Sk; segment_plan (a document modifier's, or null): skip
// the work where its segment form serves.
//   Config: using MaskMod; kTransposed (rows are keys); kThreads.
template <class Config>
__device__ __forceinline__ void classify_mask_blocks(const TensorArg& q, const TensorArg& k, const MaskEnv& env_in,
                                                     const TensorArg& table,
                                                     const TensorArg* segment_plan = nullptr) {
  // A document modifier's segment plan (segments.cuh, written before): where its segment form serves every block
  // size, no kernel after reads the table.
  if (segment_plan != nullptr) {
    const int* header = static_cast<const int*>(segment_plan->data);
    if (header[0] == kSegmentForm && header[1] >= 0 && header[2] >= 0 && header[3] >= 0) return;
  }
  using Mod = typename Config::MaskMod;
  constexpr bool kTransposed = Config::kTransposed;
  const long long Sq = q.shape[2], Sk = k.shape[2];
  const long long rows = kTransposed ? Sk : Sq, cols = kTransposed ? Sq : Sk;
  const int r = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  if (r >= table.shape[2]) return;  // (a grid past the table's rows writes nothing)
  const int columns = (static_cast<int>(table.shape[3]) - 2) / 2;
  int* row = static_cast<int*>(table.data) + b * table.stride[0] + h * table.stride[1] + r * table.stride[2];
  const MaskEnv env = with_batch_head(env_in, b, h);
  // Each thread classifies a contiguous run of columns, so that it can then fill the run's "next shown"
  // entries from the right on its own, given the first one of the runs after it.
  constexpr int kThreads = Config::kThreads;
  const int run = (columns + kThreads - 1) / kThreads;
  const int c_begin = threadIdx.x * run, c_end = c_begin + run < columns ? c_begin + run : columns;
  __shared__ int first, end;
  __shared__ int run_first[kThreads];  // the first column of each run not hidden whole (columns: none)
  if (threadIdx.x == 0) first = columns, end = 0;
  __syncthreads();
  const long long r0 = static_cast<long long>(r) * kMaskBlock;
  const long long r1 = (r0 + kMaskBlock < rows ? r0 + kMaskBlock : rows) - 1;  // inclusive
  int mine = columns;
  for (int c = c_begin; c < c_end; ++c) {
    const long long c0 = static_cast<long long>(c) * kMaskBlock;
    const long long c1 = (c0 + kMaskBlock < cols ? c0 + kMaskBlock : cols) - 1;
    int cls = kBlockHidden;
    if (r0 <= r1 && c0 <= c1) {  // only pairs with a query < Sq and a key < Sk count
      const Range rr = IndexRange::make(r0, r1), cr = IndexRange::make(c0, c1);
      const Tri t = Mod::template visible<IndexRange>(env, IndexRange::constant(b), IndexRange::constant(h),
                                                      kTransposed ? cr : rr, kTransposed ? rr : cr);
      cls = !t.can_true ? kBlockHidden : (!t.can_false ? kBlockShown : kBlockPartial);
    }
    row[2 + c] = cls;
    if (cls != kBlockHidden) {
      mine = c < mine ? c : mine;
      atomicMax(&end, c + 1);
    }
  }
  run_first[threadIdx.x] = mine;
  if (mine < columns) atomicMin(&first, mine);
  __syncthreads();
  int after = columns;  // the first column not hidden whole past this run
  for (int t = threadIdx.x + 1; t < kThreads && after == columns; ++t) after = run_first[t];
  for (int c = c_end - 1; c >= c_begin; --c) {
    if (row[2 + c] != kBlockHidden) after = c;
    row[2 + columns + c] = after;
  }
  if (threadIdx.x == 0) {
    row[0] = first < end ? first : 0;
    row[1] = first < end ? end : 0;
  }
}

// The blocks one kernel block walks: its rows [row0, row0 + kRows * 64) of a table slice, the
// columns in blocks of kCols * 64, within [lo, hi) (the window's bounds, in those blocks). A column
// block is hidden when every table block it covers is (the walk steps over it), needs its element
// mask when any is not shown. Walk: for (n = next(begin); n < end; n = next(n + 1)).
// (Held as one pointer and a stride: the consumers run near their register budget.)
template <int kRows, int kCols>
struct MaskBlockWalk {
  const int* first_row;  // the table row of plane rows [row0, row0 + 64)
  int row_stride;        // elements between table rows
  int valid_rows;        // rows of the kernel block inside the table (past it: past the last query / key)
  int columns;           // the table's column blocks
  int begin, end;        // column blocks [begin, end): the window's, narrowed by the rows' bounds

  MaskBlockWalk() = default;  // (unused: a segment tile's walk, attention_fwd_ws.cuh's SegmentWalk)
  __device__ __forceinline__ MaskBlockWalk(const TensorArg& table, const int* slice, int row0, int lo, int hi) {
    const int table_rows = static_cast<int>(table.shape[2]), r0 = row0 / kMaskBlock;
    first_row = slice + static_cast<long long>(r0) * table.stride[2];
    row_stride = static_cast<int>(table.stride[2]);
    valid_rows = table_rows - r0 < kRows ? table_rows - r0 : kRows;
    columns = (static_cast<int>(table.shape[3]) - 2) / 2;
    int first = 0x7fffffff, last = 0;
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      if (i >= valid_rows) break;
      const int* row = first_row + i * row_stride;
      if (row[0] < row[1]) {
        first = row[0] < first ? row[0] : first;
        last = row[1] > last ? row[1] : last;
      }
    }
    const int shown_begin = first / kCols, shown_end = (last + kCols - 1) / kCols;
    begin = lo > shown_begin ? lo : shown_begin;
    end = hi < shown_end ? hi : shown_end;
    if (first > last) begin = end = lo;  // every row hidden whole
  }
  // kBlockHidden / kBlockPartial / kBlockShown of column block n in the kernel block's row i alone (a consumer
  // warpgroup's 64 rows; shown past the table: nothing there is stored).
  __device__ __forceinline__ int row_cls(int i, int n) const {
    if (i >= valid_rows) return kBlockShown;
    const int* row = first_row + i * row_stride + 2 + n * kCols;
    bool any = false, all = true;
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      if (n * kCols + j >= columns) break;  // past the last key / query
      const int c = row[j];
      any = any || c != kBlockHidden;
      all = all && c == kBlockShown;
    }
    return !any ? kBlockHidden : (all ? kBlockShown : kBlockPartial);
  }
  // ... over all the kernel block's rows: hidden when every table block is, shown when every one is.
  __device__ __forceinline__ int cls(int n) const {
    bool any = false, all = true;
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const int c = row_cls(i, n);
      any = any || c != kBlockHidden;
      all = all && c == kBlockShown;
    }
    return !any ? kBlockHidden : (all ? kBlockShown : kBlockPartial);
  }
  // The first column block >= n not hidden whole (end or past it when none): one load per table row from the
  // rows' "next shown" entries, independent of each other (an earlier form scanned the classes block by block:
  // serial loads on the tile's critical path, 2.4x Flex's time on the 13-document forward, session 18 call 1).
  __device__ __forceinline__ int next(int n) const {
    if (n >= end) return n;
    int c = columns;
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      if (i >= valid_rows) break;
      const int shown = first_row[i * row_stride + 2 + columns + n * kCols];
      c = shown < c ? shown : c;
    }
    return c >= columns ? end : c / kCols;
  }
};

}  // namespace device
}  // namespace flashc
