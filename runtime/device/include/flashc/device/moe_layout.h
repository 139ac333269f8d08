// A mixture of experts' permuted layout (docs/design/moe.md): every expert's rows padded to a multiple of
// kMoeGroupRows, the grouped GEMM's row block, so that no tile spans two experts. One definition for the kernels
// (moe_routing.cuh, gemm_ws.cuh's grouped form), the compiler that sizes the workspaces and the CPU executor that
// mirrors the kernels. Plain C++: host code includes it too.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define FLASHC_MOE_HOST_DEVICE __host__ __device__
#else
#define FLASHC_MOE_HOST_DEVICE
#endif

namespace flashc {
namespace device {

constexpr int kMoeGroupRows = 128;
// The routing kernels (select, combine): a warp a token, kMoeTokensPerBlock tokens a block. (Enumerators: a
// namespace-scope constexpr variable leaves an unused symbol in every cubin that includes this.)
enum : int { kMoeTokensPerBlock = 8, kMoeRoutingThreads = 32 * kMoeTokensPerBlock };

// Rows the permuted layout needs at most for `routed_rows` (tokens x top_k) over `experts`: every expert's rows rounded
// up to kMoeGroupRows (= kMoeGroupRows ceil((routed_rows + (kMoeGroupRows - 1) (experts - 1)) / kMoeGroupRows)).
FLASHC_MOE_HOST_DEVICE constexpr long long moe_padded_capacity(long long routed_rows, int experts) {
  return (routed_rows + static_cast<long long>(experts) * (kMoeGroupRows - 1)) / kMoeGroupRows * kMoeGroupRows;
}

}  // namespace device
}  // namespace flashc
