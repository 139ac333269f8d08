// The device library's grid orders (runtime/device/include/flashc/device/grid_order.h) on the host: head groups
// are a bijection of every grid (each (block, pair) taken by exactly one launch index), whole groups take block x of
// all their pairs before block x + 1, and the last group holds the pairs left over. Exhaustive over small grids,
// including groups larger than the pairs and pair counts that are not a multiple of the group.
#include "Check.h"

#include "flashc/device/grid_order.h"

#include <string>
#include <vector>

using namespace flashc::device;
using namespace flashc::test;

namespace {
// The kernels' groups are template arguments; these are the ones checked.
GridTile head_group_tile(int linear, int blocks, int pairs, int group) {
  switch (group) {
  case 1: return flashc::device::head_group_tile<1>(linear, blocks, pairs);
  case 2: return flashc::device::head_group_tile<2>(linear, blocks, pairs);
  case 3: return flashc::device::head_group_tile<3>(linear, blocks, pairs);
  case 4: return flashc::device::head_group_tile<4>(linear, blocks, pairs);
  case 7: return flashc::device::head_group_tile<7>(linear, blocks, pairs);
  default: return flashc::device::head_group_tile<8>(linear, blocks, pairs);
  }
}
}  // namespace

int main() {
  for (int group : {1, 2, 3, 4, 8}) {
    bool bijective = true, ordered = true;
    std::string detail;
    for (int blocks = 1; blocks <= 9; ++blocks) {
      for (int pairs = 1; pairs <= 13; ++pairs) {
        std::vector<int> taken(static_cast<size_t>(blocks * pairs), 0);
        for (int linear = 0; linear < blocks * pairs; ++linear) {
          const GridTile t = head_group_tile(linear, blocks, pairs, group);
          if (t.x < 0 || t.x >= blocks || t.pair < 0 || t.pair >= pairs) {
            bijective = false;
            detail = "out of the grid at blocks " + std::to_string(blocks) + ", pairs " + std::to_string(pairs);
            continue;
          }
          ++taken[static_cast<size_t>(t.x * pairs + t.pair)];
          // Inside a group its pairs take block x before any takes x + 1: along the launch index, x never falls
          // back within a group, and the pair cycles through the group's pairs.
          if (linear > 0 && linear % (group * blocks) != 0) {
            const GridTile prev = head_group_tile(linear - 1, blocks, pairs, group);
            if (t.x < prev.x || t.pair / group != prev.pair / group ||
                (t.x == prev.x ? t.pair <= prev.pair : t.pair > prev.pair)) {
              ordered = false;
              detail = "order at linear " + std::to_string(linear) + " (blocks " + std::to_string(blocks) +
                       ", pairs " + std::to_string(pairs) + ")";
            }
          }
        }
        for (int n : taken)
          if (n != 1) {
            bijective = false;
            detail = "a tile taken " + std::to_string(n) + " times at blocks " + std::to_string(blocks) +
                     ", pairs " + std::to_string(pairs);
          }
      }
    }
    check(bijective, "head groups of " + std::to_string(group) + ": every tile taken once (blocks 1-9, pairs 1-13)",
          detail);
    check(ordered, "head groups of " + std::to_string(group) + ": block x of a group's pairs before block x + 1",
          detail);
  }
  // Group 1 is the launch order; a group of all pairs is block-major over the whole grid.
  bool launch = true, block_major = true;
  for (int linear = 0; linear < 5 * 7; ++linear) {
    const GridTile a = head_group_tile(linear, 5, 7, 1), b = head_group_tile(linear, 5, 7, 7);
    launch = launch && a.x == linear % 5 && a.pair == linear / 5;
    block_major = block_major && b.x == linear / 7 && b.pair == linear % 7;
  }
  check(launch, "a group of 1 is the launch order (x fastest)");
  check(block_major, "a group of every pair takes block 0 of all pairs first");
  return checkSummary();
}
