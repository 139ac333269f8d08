// Host launch wrapper for the device library's warp-specialised persistent GEMM (gemm_ws.cuh), lab only (the
// runtime launches through the driver API from the manifest). Built once per config with -D flags:
//   GEMM_F16 (else bf16), GEMM_TRANS_A, GEMM_TRANS_B, GEMM_BLOCK_N, GEMM_STAGES, GEMM_GROUP, GEMM_ACT (an Act
//   enumerator), GEMM_BIAS, GEMM_SAVE_PRE, GEMM_ACCUMULATE (C += ...), GEMM_ACT_GRAD (C = A·B ∘ act'(P), P passed
//   as `pre`), GEMM_PINGPONG (64-row tiles taken by the consumer warpgroups in turn), GEMM_RESIDENT_K=K (the
//   resident-B form of gemm_resident_b.cuh for contractions up to K: B's column block kept in shared memory over a
//   run of tiles; with GEMM_STAGES slots of A); loaded via ctypes by gemm_lab.py.
#include <cuda_runtime.h>

#if defined(GEMM_F16)
#define FLASHC_F16 1
#else
#define FLASHC_F16 0
#endif
#include "flashc/device/gemm_resident_b.cuh"
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
#ifndef GEMM_ACT
#define GEMM_ACT Identity
#endif

namespace {
struct LabConfig {
#if defined(GEMM_F16)
  using Elem = flashc::device::f16;
#else
  using Elem = flashc::device::bf16;
#endif
#if defined(GEMM_TRANS_A)
  static constexpr bool kTransA = true;
#else
  static constexpr bool kTransA = false;
#endif
#if defined(GEMM_TRANS_B)
  static constexpr bool kTransB = true;
#else
  static constexpr bool kTransB = false;
#endif
#if defined(GEMM_BIAS)
  static constexpr bool kBias = true;
#else
  static constexpr bool kBias = false;
#endif
#if defined(GEMM_SAVE_PRE)
  static constexpr bool kSavePre = true;
#else
  static constexpr bool kSavePre = false;
#endif
  static constexpr flashc::device::Act kAct = flashc::device::Act::GEMM_ACT;
  static constexpr bool kBatched = false, kGated = false;
#if defined(GEMM_ACT_GRAD)
  static constexpr bool kActGrad = true;
#endif
#if defined(GEMM_PINGPONG)
  static constexpr bool kPingPong = true;
#endif
#if defined(GEMM_ACCUMULATE)
  static constexpr bool kAccumulate = true;
#else
  static constexpr bool kAccumulate = false;
#endif
  static constexpr int kBlockN = GEMM_BLOCK_N, kStages = GEMM_STAGES, kGroup = GEMM_GROUP;
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;
#if defined(GEMM_RESIDENT_K)
  static constexpr int kResidentK = GEMM_RESIDENT_K;
#if !defined(GEMM_ACT_GRAD)
  static constexpr bool kActGrad = false;
#endif
#endif
};
#if defined(GEMM_RESIDENT_K)
using Plan = flashc::device::GemmResidentBPlan<LabConfig>;
#else
using Plan = flashc::device::GemmWsPlan<LabConfig>;
#endif

__global__ void __launch_bounds__(Plan::kThreads, 1)
    lab_gemm_ws(const __grid_constant__ flashc::TmaDescriptor map_a, const __grid_constant__ flashc::TmaDescriptor map_b,
                const __grid_constant__ flashc::TmaDescriptor map_c, const __grid_constant__ flashc::TmaDescriptor map_pre,
                flashc::TensorArg a, flashc::TensorArg b, flashc::TensorArg bias, float alpha) {
#if defined(GEMM_RESIDENT_K)
  flashc::device::gemm_resident_b<LabConfig>(map_a, map_b, map_c, map_pre, a, b, bias, alpha);
#else
  flashc::device::gemm_ws<LabConfig>(map_a, map_b, map_b, map_c, map_pre, map_pre, a, b, bias, alpha);
#endif
}

// 2-D tiled map over a row-major [rows, cols] 16-bit tensor (row stride in elements), box (64 columns, box_rows).
int make_map_2d(CUtensorMap* map, void* data, long long rows, long long cols, long long row_stride, unsigned box_rows) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(row_stride) * 2};
  if (strides[0] % 16 != 0 || (reinterpret_cast<unsigned long long>(data) & 15) != 0) return -10;
  const cuuint32_t box[2] = {64, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  EncodeTiledFn fn = encode_tiled();
  if (!fn) return -12;
#if defined(GEMM_F16)
  const CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
#else
  const CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
#endif
  const CUresult r = fn(map, type, 2, data, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? 0 : -100 - static_cast<int>(r);
}
}  // namespace

extern "C" int flashc_lab_gemm_smem() { return Plan::kSmemBytes; }

// C [M, N] = act(alpha · op(A) op(B) + bias); pre [M, N] too when built with GEMM_SAVE_PRE. Row-major, contiguous.
extern "C" int flashc_lab_gemm(void* a, void* b, void* bias, void* c, void* pre, long long M, long long N, long long K,
                               float alpha, int max_blocks, cudaStream_t stream) {
  static bool configured = false;
  if (!configured) {
    cudaError_t e = cudaFuncSetAttribute(lab_gemm_ws, cudaFuncAttributeMaxDynamicSharedMemorySize, Plan::kSmemBytes);
    if (e != cudaSuccess) return e;
    configured = true;
  }
  flashc::TensorArg ta{a, {LabConfig::kTransA ? K : M, LabConfig::kTransA ? M : K}, {LabConfig::kTransA ? M : K, 1}};
  flashc::TensorArg tb{b, {LabConfig::kTransB ? N : K, LabConfig::kTransB ? K : N}, {LabConfig::kTransB ? K : N, 1}};
  flashc::TensorArg tbias{bias, {N}, {1}};
  CUtensorMap ma, mb, mc, mp;
  if (int e = LabConfig::kTransA ? make_map_2d(&ma, a, K, M, M, 64) : make_map_2d(&ma, a, M, K, K, Plan::kBlockM)) return e;
  if (int e = LabConfig::kTransB ? make_map_2d(&mb, b, N, K, K, GEMM_BLOCK_N) : make_map_2d(&mb, b, K, N, N, 64)) return e;
  if (int e = make_map_2d(&mc, c, M, N, N, 64)) return e;
  if (int e = make_map_2d(&mp, pre ? pre : c, M, N, N, 64)) return e;
  static int sms = 0;
  if (sms == 0) {
    int device = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  }
  const long long tiles = ((M + Plan::kBlockM - 1) / Plan::kBlockM) * ((N + GEMM_BLOCK_N - 1) / GEMM_BLOCK_N);
  long long blocks = tiles < sms ? tiles : sms;
  if (max_blocks > 0 && blocks > max_blocks) blocks = max_blocks;
  if (blocks == 0) return 0;
  lab_gemm_ws<<<static_cast<unsigned>(blocks), Plan::kThreads, Plan::kSmemBytes, stream>>>(
      *reinterpret_cast<const flashc::TmaDescriptor*>(&ma), *reinterpret_cast<const flashc::TmaDescriptor*>(&mb),
      *reinterpret_cast<const flashc::TmaDescriptor*>(&mc), *reinterpret_cast<const flashc::TmaDescriptor*>(&mp), ta,
      tb, tbias, alpha);
  return cudaGetLastError();
}
