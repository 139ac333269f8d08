// Which query-row tiles a block of an attention forward takes (the kernel's grid_order, flash-order-blocks).
//   * One tile a block: grid (row blocks, heads, batch); longest first takes row block gridDim.x - 1 - x (under a
//     causal mask the last rows see the most keys, so they start in the first wave).
//   * Persistent: a grid of min(units, SMs) blocks that loop. A unit is the row blocks n-1-i and i of one (head,
//     batch): under a causal mask their key blocks add up to the same count for every i, so equal shares of units
//     are equal shares of work without a dynamic scheduler; block b takes units b, b + gridDim.x, ... Consecutive
//     units are one head's, so the blocks in flight share that head's K and V in L2. A block's next tile reuses its
//     shared memory and barriers: its loads start under the previous tile's epilogue.
#pragma once
#include "flashc/device/grid_order.h"
#include "flashc/device/optional_member.cuh"

namespace flashc {
namespace device {

struct QueryTile {
  int m_block, head, batch;
};

// A one-tile-a-block grid (blocks, heads, batches) read in groups of kHeadGroup (head, batch) pairs, the block index
// slowest inside a group (#tile.grid_order<head_groups>; grid_order.h's head_group_tile): where blocks differ in work
// (causal, prefix-LM, documents: block 0 the longest) the longest blocks of kHeadGroup heads start together instead
// of the last head's being left for the grid's tail. kHeadGroup 1: the launch order.
template <int kHeadGroup>
__device__ __forceinline__ QueryTile grid_tile_in_head_groups() {
  if constexpr (kHeadGroup == 1) {
    return QueryTile{static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z)};
  } else {
    const int blocks = static_cast<int>(gridDim.x), pairs = static_cast<int>(gridDim.y * gridDim.z);
    const int linear = static_cast<int>(blockIdx.x) + blocks * static_cast<int>(blockIdx.y + gridDim.y * blockIdx.z);
    const GridTile tile = head_group_tile<kHeadGroup>(linear, blocks, pairs);
    return QueryTile{tile.x, tile.pair % static_cast<int>(gridDim.y), tile.pair / static_cast<int>(gridDim.y)};
  }
}

// A Config's kGridHeadGroup (the backward's head groups), 1 when it has none.
FLASHC_OPTIONAL_MEMBER(GridHeadGroupOf, kGridHeadGroup, int, 1)
// A Config's kRotateWalk where it has one, else false: the attention backward's key blocks start their walks over
// the query blocks apart (attention_bwd_ws.cuh, for_each_query_step).
FLASHC_OPTIONAL_MEMBER(RotateWalkOf, kRotateWalk, bool, false)
// A Config's kPingPong where it has one, else kDefault (the attention backward's consumers take turns where the
// schedule says, else by the hand rule: AttentionBwdWsPlan::kDeferDq).
template <class Config, bool kDefault, class = void>
struct PingPongOr {
  static constexpr bool value = kDefault;
};
template <class Config, bool kDefault>
struct PingPongOr<Config, kDefault, decltype(void(Config::kPingPong))> {
  static constexpr bool value = Config::kPingPong;
};

// Units of the persistent grid over row_blocks x heads x batch tiles (the launch grid's x: min(this, SMs)).
__host__ __device__ constexpr long long persistent_units(int row_blocks, int heads, int batch) {
  return static_cast<long long>((row_blocks + 1) / 2) * heads * batch;
}

// Calls f(j, tile) for the j-th tile (j = 0, 1, ...) this block takes. Every warp of the block sees the same
// sequence, so producer and consumers agree without talking.
template <bool kPersistent, bool kLongestFirst, class F>
__device__ __forceinline__ void for_each_query_tile(int row_blocks, int heads, int batch, F&& f) {
  if constexpr (!kPersistent) {
    const int m_block = kLongestFirst ? static_cast<int>(gridDim.x - 1 - blockIdx.x) : static_cast<int>(blockIdx.x);
    f(0, QueryTile{m_block, static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z)});
  } else {
    const int pairs = (row_blocks + 1) / 2;
    const long long units = persistent_units(row_blocks, heads, batch);
    // The block's place in the whole grid (the manifest launches (n, 1, 1); any shape takes every unit once).
    const long long blocks = static_cast<long long>(gridDim.x) * gridDim.y * gridDim.z;
    const long long first = blockIdx.x + static_cast<long long>(gridDim.x) * (blockIdx.y + gridDim.y * blockIdx.z);
    int j = 0;
    // k walks this block's units twice as fast: even k the unit's later row block, odd k its earlier one (none
    // when the unit is the middle row block of an odd count).
    for (long long k = 0;; ++k) {
      const long long u = first + (k >> 1) * blocks;
      if (u >= units) break;
      const int i = static_cast<int>(u % pairs), later = row_blocks - 1 - i;
      if ((k & 1) && i == later) continue;
      const int head_batch = static_cast<int>(u / pairs);
      f(j++, QueryTile{(k & 1) ? i : later, head_batch % heads, head_batch / heads});
    }
  }
}

}  // namespace device
}  // namespace flashc
