// Block order over a 2-D tile grid (flash-order-blocks' #tile.grid_order<order = grouped>).
//
// Launched row-major (blockIdx.x fastest), a wave of blocks covers every row block of one column block and
// re-reads all of A from DRAM for each column. Grouped: launch index p = x + y * gridDim.x walks kGroup row
// blocks of one column block, then the next column, so the blocks in flight share A rows and B columns in L2.
// A bijection of the grid (the last group may have fewer rows).
#pragma once

namespace flashc {
namespace device {

template <int kGroup>
__device__ __forceinline__ int2 grouped_block() {
  const int p = static_cast<int>(blockIdx.x + blockIdx.y * gridDim.x);
  const int per_group = kGroup * static_cast<int>(gridDim.y);
  const int first_x = (p / per_group) * kGroup;
  const int rows = min(static_cast<int>(gridDim.x) - first_x, kGroup);
  const int in_group = p % per_group;
  return make_int2(first_x + in_group % rows, in_group / rows);
}

}  // namespace device
}  // namespace flashc
