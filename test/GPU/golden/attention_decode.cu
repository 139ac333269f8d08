// Golden decode kernels over a KV cache: the device library's attention_decode.cuh (which says how they work)
// instantiated for one configuration given by macros, the three kernels a decode program launches in order:
// the table check, the split kernel (one block per key split, kv head x row group, sequence), the combine.
// Built by the kernel lab (bench/kernel_lab/launch_decode.cu adds the host launcher and tensor maps) and by
// the NVRTC compile check (ctest device.golden_nvrtc_compile).
#include "flashc/device/attention_decode.cuh"

#ifndef FLASHC_HEAD_DIM
#define FLASHC_HEAD_DIM 128
#endif
#ifndef FLASHC_GQA_GROUP  // query heads per kv head
#define FLASHC_GQA_GROUP 4
#endif
#ifndef FLASHC_F16
#define FLASHC_F16 0
#endif
#ifndef FLASHC_CAUSAL
#define FLASHC_CAUSAL 1
#endif
#ifndef FLASHC_DEC_QUERIES  // new tokens per sequence
#define FLASHC_DEC_QUERIES 1
#endif
#ifndef FLASHC_DEC_PAGE  // 0: contiguous cache
#define FLASHC_DEC_PAGE 0
#endif
#ifndef FLASHC_DEC_STAGES
#define FLASHC_DEC_STAGES 4
#endif

struct DecodeConfig {
#if FLASHC_F16
  using Elem = flashc::device::f16;
#else
  using Elem = flashc::device::bf16;
#endif
  static constexpr int kHeadDim = FLASHC_HEAD_DIM, kValueDim = FLASHC_HEAD_DIM, kQueries = FLASHC_DEC_QUERIES,
                       kGroup = FLASHC_GQA_GROUP, kPageSize = FLASHC_DEC_PAGE, kStages = FLASHC_DEC_STAGES;
  static constexpr bool kCausal = FLASHC_CAUSAL;
  static constexpr float kScale = static_cast<float>(1.0 / flashc::device::constexpr_sqrt(FLASHC_HEAD_DIM));
};
using DecodePlan = flashc::device::AttentionDecodePlan<DecodeConfig>;

// grid (B), 128 threads; status zeroed before.
extern "C" __global__ void __launch_bounds__(128)
    flashc_decode_check(flashc::TensorArg seqlens, flashc::TensorArg table, int capacity, int pages,
                        flashc::TensorArg status) {
  flashc::device::attention_decode_check<FLASHC_DEC_PAGE>(seqlens, table, capacity, pages,
                                                          static_cast<int*>(status.data));
}
// grid (splits, Hkv x row groups, B), DecodePlan::kThreads threads, DecodePlan::kSharedBytes of shared memory.
extern "C" __global__ void __launch_bounds__(DecodePlan::kThreads)
    flashc_decode_split(const __grid_constant__ flashc::TmaDescriptor k_map,
                        const __grid_constant__ flashc::TmaDescriptor v_map, flashc::TensorArg q,
                        flashc::TensorArg seqlens, flashc::TensorArg table, flashc::TensorArg out, flashc::TensorArg lse,
                        flashc::TensorArg o_part, flashc::TensorArg lse_part, flashc::TensorArg status) {
  flashc::device::attention_decode_split<DecodeConfig>(k_map, v_map, q, seqlens, table, out, lse, o_part, lse_part,
                                                       static_cast<const int*>(status.data));
}
// grid (Hq x queries, B), 128 threads; returns at once with one split.
extern "C" __global__ void __launch_bounds__(128)
    flashc_decode_combine(flashc::TensorArg o_part, flashc::TensorArg lse_part, flashc::TensorArg out,
                          flashc::TensorArg lse, flashc::TensorArg status) {
  flashc::device::attention_decode_combine<DecodeConfig>(o_part, lse_part, out, lse,
                                                         static_cast<const int*>(status.data));
}
