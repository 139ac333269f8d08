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
// The plan's rows: the header, then the maps at 128 and at 192 query rows (the ws forward's two tile heights).
FLASHC_SEGMENT_HOST_DEVICE constexpr long long segment_plan_rows(long long rows) {
  return 1 + segment_tile_bound(rows, 128) + segment_tile_bound(rows, 192);
}
// The plan's row where block size block_m's map starts.
FLASHC_SEGMENT_HOST_DEVICE constexpr long long segment_map_row(long long rows, int block_m) {
  return block_m == 128 ? 1 : 1 + segment_tile_bound(rows, 128);
}

}  // namespace device
}  // namespace flashc
