// The launch orders of one-tile-a-block grids, as index arithmetic: one definition for the kernels
// (tile_schedule.cuh reads blockIdx through it) and the runtime's unit test, which checks every order is a bijection
// of the grid. Plain C++: host code includes it too.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define FLASHC_GRID_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define FLASHC_GRID_HOST_DEVICE inline
#endif

namespace flashc {
namespace device {

// A block of a grid of `blocks` x `pairs` tiles: its block index x and its (head, batch) pair.
struct GridTile {
  int x, pair;
};

// #tile.grid_order<head_groups, group = kGroup>: the launch index `linear` (x fastest, then the pairs) read as groups of
// kGroup pairs with x slowest inside a group: linear 0.. take x = 0 of pairs 0..kGroup-1, then x = 1 of them, ...; the
// last group has the pairs left over. The hardware is observed to start a grid's blocks roughly in launch order (CUDA
// does not promise it), so the blocks x = 0 of kGroup pairs start together; correctness never depends on the order.
template <int kGroup>
FLASHC_GRID_HOST_DEVICE GridTile head_group_tile(int linear, int blocks, int pairs) {
  const int group = linear / (kGroup * blocks), in_group = linear - group * kGroup * blocks;
  const int members = pairs - group * kGroup < kGroup ? pairs - group * kGroup : kGroup;
  const int pair = group * kGroup + in_group % members;
  return GridTile{in_group / members, pair};
}

}  // namespace device
}  // namespace flashc
