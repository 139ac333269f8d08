// The segment plan's layout (segments.cuh): one definition for the kernels, the compiler's CPU executor that mirrors
// them, and the runtime's tests. The compiler sizes the plan with the same formula in the program's integer ops
// (TileLowering.cpp's launchSegmentPlan). Plain C++: host code includes it too.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define FLASHC_SEGMENT_HOST_DEVICE __host__ __device__
#else
#define FLASHC_SEGMENT_HOST_DEVICE
#endif

namespace flashc {
namespace device {

// The header's form (row 0, x): the segment form, or the fallback to the block-class table. (Enumerators: a
// namespace-scope constexpr variable leaves an unused symbol in every cubin that includes this.)
enum : int { kSegmentFallback = 0, kSegmentForm = 1 };
// The plan kernel's threads, and the most documents its shared list holds (16 KB).
enum : int { kSegmentPlanThreads = 1024, kSegmentPlanMaxDocuments = 4096 };

// Map rows for one block size: the row blocks and a quarter more (a document adds at most one partial tile, so any
// packing of up to a quarter of the row blocks' documents, plus one, fits).
FLASHC_SEGMENT_HOST_DEVICE constexpr long long segment_tile_bound(long long rows, int block_m) {
  return (rows + block_m - 1) / block_m + ((rows + block_m - 1) / block_m + 3) / 4;
}
// The maps' tile heights: the backward's key tiles (64, 128) and the forward's query tiles (128, 192).
FLASHC_SEGMENT_HOST_DEVICE constexpr int segment_map_block_rows(int map) {
  return map == 0 ? 64 : map == 1 ? 128 : 192;
}
enum : int { kSegmentMaps = 3 };
// The plan's rows: the header {form, tiles at 64, at 128, at 192}, then the maps at 64, 128 and 192 rows.
FLASHC_SEGMENT_HOST_DEVICE constexpr long long segment_plan_rows(long long rows) {
  return 1 + segment_tile_bound(rows, 64) + segment_tile_bound(rows, 128) + segment_tile_bound(rows, 192);
}
// The plan's row where block size block_m's map starts (64, 128 or 192).
FLASHC_SEGMENT_HOST_DEVICE constexpr long long segment_map_row(long long rows, int block_m) {
  return 1 + (block_m > 64 ? segment_tile_bound(rows, 64) : 0) + (block_m > 128 ? segment_tile_bound(rows, 128) : 0);
}
// The header's column of block size block_m's tile count.
FLASHC_SEGMENT_HOST_DEVICE constexpr int segment_tiles_column(int block_m) {
  return block_m == 64 ? 1 : block_m == 128 ? 2 : 3;
}

}  // namespace device
}  // namespace flashc
