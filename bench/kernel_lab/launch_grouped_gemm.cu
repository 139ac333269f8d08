// Host launch wrapper for the grouped form of the warp-specialised persistent GEMM (gemm_ws_grouped: a mixture of
// experts' expert GEMMs over rows permuted by expert), lab only. Built once per config with -D flags:
//   GEMM_F16 (else bf16), GEMM_TRANS_B (weights [E, N, K]), GEMM_GATED (C = silu(A·Bg) ⊙ (A·Bu), 128 columns of
//   each a tile), GEMM_BLOCK_N, GEMM_STAGES, GEMM_GROUP, GEMM_PINGPONG, GEMM_SAVE_PRE; loaded via ctypes by
//   moe_lab.py.
#include <cuda_runtime.h>

#if defined(GEMM_F16)
#define FLASHC_F16 1
#else
#define FLASHC_F16 0
#endif
#include "flashc/device/gemm_ws.cuh"
#include "lab_tma.h"

#ifndef GEMM_BLOCK_N
#define GEMM_BLOCK_N 256
#endif
#ifndef GEMM_STAGES
#define GEMM_STAGES 4
#endif
#ifndef GEMM_GROUP
#define GEMM_GROUP 8
#endif

namespace {
struct LabConfig {
#if defined(GEMM_F16)
  using Elem = flashc::device::f16;
#else
  using Elem = flashc::device::bf16;
#endif
  static constexpr bool kTransA = false;
#if defined(GEMM_TRANS_B)
  static constexpr bool kTransB = true;
#else
  static constexpr bool kTransB = false;
#endif
#if defined(GEMM_GATED)
  static constexpr bool kGated = true;
  static constexpr flashc::device::Act kAct = flashc::device::Act::Silu;
#else
  static constexpr bool kGated = false;
  static constexpr flashc::device::Act kAct = flashc::device::Act::Identity;
#endif
#if defined(GEMM_SAVE_PRE)
  static constexpr bool kSavePre = true;
#else
  static constexpr bool kSavePre = false;
#endif
#if defined(GEMM_PINGPONG)
  static constexpr bool kPingPong = true;
#endif
  static constexpr bool kBias = false, kBatched = false, kAccumulate = false, kGrouped = true;
  static constexpr int kBlockN = GEMM_BLOCK_N, kStages = GEMM_STAGES, kGroup = GEMM_GROUP;
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;
};
using Plan = flashc::device::GemmWsPlan<LabConfig>;

__global__ void __launch_bounds__(Plan::kThreads, 1)
    lab_grouped_gemm_ws(const __grid_constant__ flashc::TmaDescriptor map_a,
                        const __grid_constant__ flashc::TmaDescriptor map_b,
                        const __grid_constant__ flashc::TmaDescriptor map_b2,
                        const __grid_constant__ flashc::TmaDescriptor map_c,
                        const __grid_constant__ flashc::TmaDescriptor map_pre,
                        const __grid_constant__ flashc::TmaDescriptor map_pre2, flashc::TensorArg a,
                        flashc::TensorArg b, flashc::TensorArg groups, float alpha) {
  flashc::device::gemm_ws_grouped<LabConfig>(map_a, map_b, map_b2, map_c, map_pre, map_pre2, a, b, groups, alpha);
}

CUtensorMapDataType elem_type() {
#if defined(GEMM_F16)
  return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
#else
  return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
#endif
}

int make_map(CUtensorMap* map, void* data, int rank, long long outer, long long rows, long long cols,
             unsigned box_rows) {
  return make_rowmajor_map(map, data, elem_type(), rank, outer, rows, cols, box_rows);
}
}  // namespace

extern "C" int flashc_lab_grouped_gemm_smem() { return Plan::kSmemBytes; }

// C [rows, N] = A [rows, K] · B[expert of the row block] (gated: silu(A·Bg) ⊙ (A·Bu)); B [E, K, N] (GEMM_TRANS_B:
// [E, N, K]); groups int32 [1 + rows / 128] on the device; pre / pre2 with GEMM_SAVE_PRE. Row-major, contiguous.
extern "C" int flashc_lab_grouped_gemm(void* a, void* b, void* b2, void* c, void* pre, void* pre2, void* groups,
                                       long long rows, long long N, long long K, long long E, float alpha,
                                       int max_blocks, cudaStream_t stream) {
  static bool configured = false;
  if (!configured) {
    cudaError_t e = cudaFuncSetAttribute(lab_grouped_gemm_ws, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         Plan::kSmemBytes);
    if (e != cudaSuccess) return e;
    configured = true;
  }
  flashc::TensorArg ta{a, {rows, K}, {K, 1}};
  flashc::TensorArg tb{b, {E, LabConfig::kTransB ? N : K, LabConfig::kTransB ? K : N},
                       {N * K, LabConfig::kTransB ? K : N, 1}};
  flashc::TensorArg tg{groups, {1 + rows / 128}, {1}};
  CUtensorMap ma, mb, mb2, mc, mp, mp2;
  if (int e = make_map(&ma, a, 2, 1, rows, K, Plan::kBlockM)) return e;
  if (int e = LabConfig::kTransB ? make_map(&mb, b, 3, E, N, K, GEMM_BLOCK_N) : make_map(&mb, b, 3, E, K, N, 64)) return e;
  if (int e = make_map(&mb2, b2 ? b2 : b, 3, E, LabConfig::kTransB ? N : K, LabConfig::kTransB ? K : N,
                       LabConfig::kTransB ? GEMM_BLOCK_N : 64))
    return e;
  if (int e = make_map(&mc, c, 2, 1, rows, N, 64)) return e;
  if (int e = make_map(&mp, pre ? pre : c, 2, 1, rows, N, 64)) return e;
  if (int e = make_map(&mp2, pre2 ? pre2 : c, 2, 1, rows, N, 64)) return e;
  static int sms = 0;
  if (sms == 0) {
    int device = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  }
  // The tiles of every row block the rows could hold: the kernel reads how many are in use.
  const long long tiles = (rows / Plan::kBlockM) * ((N + GEMM_BLOCK_N - 1) / GEMM_BLOCK_N);
  long long blocks = tiles < sms ? tiles : sms;
  if (max_blocks > 0 && blocks > max_blocks) blocks = max_blocks;
  if (blocks == 0) return 0;
  const auto& d = [](const CUtensorMap& m) -> const flashc::TmaDescriptor& {
    return *reinterpret_cast<const flashc::TmaDescriptor*>(&m);
  };
  lab_grouped_gemm_ws<<<static_cast<unsigned>(blocks), Plan::kThreads, Plan::kSmemBytes, stream>>>(
      d(ma), d(mb), d(mb2), d(mc), d(mp), d(mp2), ta, tb, tg, alpha);
  return cudaGetLastError();
}
