// Host launch wrapper for the golden forward kernel (lab only; the runtime launches through the
// driver API from the manifest instead). Built once per config with -D flags, loaded via ctypes.
#include <cuda_runtime.h>

#if defined(FLASHC_FWD_WS)  // TMA + warp-specialized wgmma (FlashAttention-3 style)
#include "attention_fwd_ws.cu"
#elif defined(FLASHC_FWD_WGMMA)  // wgmma_sm90 strategy
#include "attention_fwd_wgmma.cu"
#elif defined(FLASHC_FWD_EMITSTYLE)  // the emitter's call forms (emitter_api.cuh)
#include "attention_fwd_emitter_style.cu"
#else
#include "attention_fwd.cu"
#endif

#if defined(FLASHC_FWD_WS)
#include "lab_tma.h"
#endif

// Returns 0, a negative code for a shape that does not match the compiled config, or a CUDA error.
extern "C" int flashc_lab_fwd(flashc::TensorArg q, flashc::TensorArg k, flashc::TensorArg v, flashc::TensorArg o,
                              flashc::TensorArg lse, cudaStream_t stream) {
  using namespace fwd_config;
  if (q.shape[1] != kHeadsQ || k.shape[1] != kHeadsKV || v.shape[1] != kHeadsKV || o.shape[1] != kHeadsQ)
    return -1;
  if (q.shape[3] != kHeadDim || k.shape[3] != kHeadDim || v.shape[3] != kHeadDim || o.shape[3] != kHeadDim)
    return -2;
  if (k.shape[2] != v.shape[2] || o.shape[2] != q.shape[2] || lse.shape[2] != q.shape[2]) return -3;
  static bool configured = false;
  if (!configured) {
    cudaError_t e = cudaFuncSetAttribute(FLASHC_KERNEL_NAME, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
    if (e != cudaSuccess) return e;
    configured = true;
  }
  const long long B = q.shape[0], Sq = q.shape[2];
  if (B == 0 || Sq == 0) return 0;
  dim3 grid(static_cast<unsigned>((Sq + kBlockM - 1) / kBlockM), kHeadsQ, static_cast<unsigned>(B));
#if defined(FLASHC_FWD_WS)
  if (kPersistent) {
    static int sms = 0;
    if (sms == 0) {
      int device = 0;
      cudaGetDevice(&device);
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    }
    const long long units = flashc::device::persistent_units(static_cast<int>(grid.x), kHeadsQ, static_cast<int>(B));
    grid = dim3(static_cast<unsigned>(units < sms ? units : sms), 1, 1);
  }
  CUtensorMap tq, tk, tv;
  if (int e = make_map(&tq, q, kBlockM)) return e;
  if (int e = make_map(&tk, k, kBlockN)) return e;
  if (int e = make_map(&tv, v, kBlockN)) return e;
  FLASHC_KERNEL_NAME<<<grid, kThreads, kSmemBytes, stream>>>(*reinterpret_cast<const flashc::TmaDescriptor*>(&tq),
                                                            *reinterpret_cast<const flashc::TmaDescriptor*>(&tk),
                                                            *reinterpret_cast<const flashc::TmaDescriptor*>(&tv), q, k, o, lse);
#else
  FLASHC_KERNEL_NAME<<<grid, kThreads, kSmemBytes, stream>>>(q, k, v, o, lse);
#endif
  return cudaGetLastError();
}

extern "C" int flashc_lab_fwd_info(int* block_m, int* block_n, int* threads, int* smem_bytes) {
  *block_m = fwd_config::kBlockM;
  *block_n = fwd_config::kBlockN;
  *threads = fwd_config::kThreads;
  *smem_bytes = fwd_config::kSmemBytes;
  return 0;
}
