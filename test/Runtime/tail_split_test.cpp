// The persistent GEMM's tail split (runtime/device/include/flashc/device/tail_split.cuh) on the host: for grids and
// shapes around the cases it serves (2048 / 1376 / 8192 tiles on 132 SMs, short and long K) every (tile, K block)
// is summed by exactly one unit, every tile is finished by exactly one unit, after the partials of exactly the
// blocks it names, each block leaves at most one partial and takes it before the piece it finishes, and the split
// shortens the longest block's work where it is taken.
#include "Check.h"

#include "flashc/device/tail_split.cuh"

#include <map>
#include <string>
#include <vector>

using namespace flashc::device;
using namespace flashc::test;

namespace {

std::string name(int tiles, int k_blocks, int blocks) {
  return std::to_string(tiles) + " tiles x " + std::to_string(k_blocks) + " K blocks on " + std::to_string(blocks) +
         " blocks";
}

void walk(int tiles, int k_blocks, int blocks, int slots, bool expectSplit) {
  const TailSplit split = TailSplit::plan(tiles, k_blocks, blocks, slots);
  const std::string what = name(tiles, k_blocks, blocks);
  std::vector<std::vector<int>> covered(tiles, std::vector<int>(k_blocks, 0));
  std::vector<int> finishers(tiles, 0);
  std::map<int, int> partialTile;  // block -> the tile of its partial
  bool ok = true, orderOk = true;
  long long longest = 0;
  std::vector<GemmUnit> finishing;
  std::vector<int> finishingBlock;
  for (int b = 0; b < blocks; ++b) {
    long long work = 0;
    bool finishedBefore = false;
    for (int u = 0; u < split.units(b, blocks); ++u) {
      GemmUnit unit = split.unit(u, b, blocks);
      if (unit.tile < 0 || unit.tile >= tiles || unit.k_begin < 0 || unit.k_end > k_blocks ||
          unit.k_begin >= unit.k_end) {
        ok = false;
        continue;
      }
      work += unit.k_end - unit.k_begin;
      for (int k = unit.k_begin; k < unit.k_end; ++k) ++covered[unit.tile][k];
      if (unit.finishes) {
        ++finishers[unit.tile];
        finishing.push_back(unit);
        finishingBlock.push_back(b);
        if (unit.tile >= split.whole_tiles) finishedBefore = true;
      } else {
        if (partialTile.count(b)) ok = false;  // a second partial: one slot a block
        partialTile[b] = unit.tile;
        if (finishedBefore) orderOk = false;  // the partial after a tail piece it finishes
      }
    }
    longest = std::max(longest, work);
  }
  bool once = true;
  for (int t = 0; t < tiles; ++t)
    for (int k = 0; k < k_blocks; ++k) once &= covered[t][k] == 1;
  bool oneFinisher = true;
  for (int t = 0; t < tiles; ++t) oneFinisher &= finishers[t] == 1;
  // A finisher's contributors are exactly the blocks whose partial is its tile.
  bool contributors = true;
  for (size_t i = 0; i < finishing.size(); ++i) {
    const GemmUnit &f = finishing[i];
    std::vector<int> expected;
    for (auto [block, tile] : partialTile)
      if (tile == f.tile) expected.push_back(block);
    std::vector<int> named;
    if (f.k_begin > 0)
      for (int g = f.first_contributor; g < finishingBlock[i]; ++g) named.push_back(g);
    contributors &= expected == named;
  }
  check(ok, what + ": units in range, at most one partial a block");
  check(once, what + ": every (tile, K block) summed once");
  check(oneFinisher, what + ": every tile finished once");
  check(contributors, what + ": a finisher names exactly the blocks whose partial is its tile");
  check(orderOk, what + ": a block's partial comes before the tail piece it finishes");
  const long long whole = (static_cast<long long>(tiles) + blocks - 1) / blocks * k_blocks;
  check((split.run > 0) == expectSplit, what + (expectSplit ? ": split" : ": not split"),
        "run " + std::to_string(split.run));
  if (expectSplit)
    check(longest < whole, what + ": the longest block's K blocks " + std::to_string(longest) + " < " +
                               std::to_string(whole) + " unsplit");
}

}  // namespace

int main() {
  // The d = 4096 FFN's GEMMs on the H200's 132 SMs: 2048 tiles (R = 68), gated dW 1376 (R = 56), dpre 8192 (R = 8).
  walk(2048, 256, 132, 132, true);
  walk(2048, 64, 132, 132, true);
  walk(1376, 256, 132, 132, true);
  walk(1376, 172, 132, 132, true);
  walk(8192, 64, 132, 132, true);
  walk(284, 64, 132, 132, true);  // a d = 1024 dx at 9000 rows
  // Not split: whole waves, a nearly full last wave, short K, fewer tiles than blocks, more blocks than slots.
  walk(264, 64, 132, 132, false);
  walk(512, 4, 132, 132, false);
  walk(250, 64, 132, 132, false);
  walk(100, 64, 132, 132, false);
  walk(2048, 256, 132, 100, false);
  // Brute force over small grids: whatever plan() decides, the walk is exact.
  int plans = 0;
  for (int blocks = 1; blocks <= 20; ++blocks)
    for (int tiles = blocks; tiles <= 3 * blocks + 2; ++tiles)
      for (int k_blocks : {1, 4, 5, 9, 16, 33}) {
        const TailSplit split = TailSplit::plan(tiles, k_blocks, blocks, blocks);
        plans += split.run > 0;
        walk(tiles, k_blocks, blocks, blocks, split.run > 0);
      }
  check(plans > 100, "the brute force exercises the split", std::to_string(plans) + " split plans");
  return checkSummary();
}
