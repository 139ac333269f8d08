// Host launch wrapper for the golden backward kernels (preprocess, main, postprocess).
#include <cuda_runtime.h>

#ifdef FLASHC_BWD_WS  // warp-specialised TMA main kernel (attention_bwd_ws.cu); pre/postprocess of attention_bwd.cu
#include "attention_bwd_ws.cu"  // includes attention_bwd.cu
#include "lab_tma.h"
namespace lab_main = bwd_ws_config;
#define FLASHC_LAB_MAIN FLASHC_PASTE(FLASHC_KERNEL_PREFIX, _bwd_ws)
#elif defined(FLASHC_BWD_ROWS)  // row-form main kernel (attention_bwd_rows.cu) instead of the S^T form
#include "attention_bwd_rows.cu"
namespace lab_main = bwd_rows_config;
#define FLASHC_LAB_MAIN FLASHC_PASTE(FLASHC_KERNEL_PREFIX, _bwd_rows)
#else
#include "attention_bwd.cu"
namespace lab_main = bwd_config;
#define FLASHC_LAB_MAIN FLASHC_PASTE(FLASHC_KERNEL_PREFIX, _bwd)
#endif

#define FLASHC_LAB_K(suffix) FLASHC_PASTE(FLASHC_KERNEL_PREFIX, suffix)

extern "C" int flashc_lab_bwd(flashc::TensorArg q, flashc::TensorArg k, flashc::TensorArg v, flashc::TensorArg o,
                              flashc::TensorArg dout, flashc::TensorArg lse, flashc::TensorArg delta,
                              flashc::TensorArg dq_accum, flashc::TensorArg dq, flashc::TensorArg dk,
                              flashc::TensorArg dv, flashc::TensorArg dq_semaphore, cudaStream_t stream) {
  using namespace bwd_config;
  if (q.shape[1] != kHeadsQ || k.shape[1] != kHeadsKV || v.shape[1] != kHeadsKV) return -1;
  if (q.shape[3] != kHeadDim || k.shape[3] != kHeadDim || v.shape[3] != kHeadDim) return -2;
  if (dq_accum.shape[2] != q.shape[2] || dk.shape[2] != k.shape[2] || dv.shape[2] != k.shape[2]) return -3;
  static bool configured = false;
  if (!configured) {
    cudaError_t e = cudaFuncSetAttribute(FLASHC_LAB_MAIN, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         lab_main::kSmemBytes);
    if (e != cudaSuccess) return e;
    configured = true;
  }
  const long long B = q.shape[0], Sq = q.shape[2], Sk = k.shape[2];
  if (B == 0) return 0;
  const dim3 aux_grid(static_cast<unsigned>((Sq + kRowsPerAuxBlock - 1) / kRowsPerAuxBlock), kHeadsQ,
                      static_cast<unsigned>(B));
#if FLASHC_BWD_DETERMINISTIC
#define FLASHC_LAB_SEM , dq_semaphore
#else
#define FLASHC_LAB_SEM
  (void)dq_semaphore;
#endif
#if defined(FLASHC_BWD_WS) && FLASHC_BWD_WS_LIBRARY_ENDS  // the library's ends (attention_bwd_ends.cuh)
  if (Sq > 0) FLASHC_LAB_K(_bwd_ws_preprocess)<<<aux_grid, 128, 0, stream>>>(o, dout, delta, dq_accum);
#else
  if (Sq > 0) FLASHC_LAB_K(_bwd_preprocess)<<<aux_grid, 128, 0, stream>>>(o, dout, delta, dq_accum FLASHC_LAB_SEM);
#endif
  if (Sk > 0) {
    const dim3 grid(static_cast<unsigned>((Sk + lab_main::kBlockN - 1) / lab_main::kBlockN), kHeadsKV,
                    static_cast<unsigned>(B));
#ifdef FLASHC_BWD_WS
    CUtensorMap tq, tk, tv, tdo;
    if (int e = make_map(&tq, q, lab_main::kBlockM)) return e;
    if (int e = make_map(&tk, k, lab_main::kBlockN)) return e;
    if (int e = make_map(&tv, v, lab_main::kBlockN)) return e;
    if (int e = make_map(&tdo, dout, lab_main::kBlockM)) return e;
    CUtensorMap tdq;  // dq_accum (f32): boxes of 64 rows x 32 columns (the key split adds dQ through it)
    if (int e = make_map_f32(&tdq, dq_accum, 64)) return e;
    using flashc::TmaDescriptor;
    FLASHC_LAB_MAIN<<<grid, lab_main::kThreads, lab_main::kSmemBytes, stream>>>(
        q, k, lse, delta, dq_accum, dk, dv, *reinterpret_cast<const TmaDescriptor*>(&tq),
        *reinterpret_cast<const TmaDescriptor*>(&tk), *reinterpret_cast<const TmaDescriptor*>(&tv),
        *reinterpret_cast<const TmaDescriptor*>(&tdo), *reinterpret_cast<const TmaDescriptor*>(&tdq));
#else
    FLASHC_LAB_MAIN<<<grid, lab_main::kThreads, lab_main::kSmemBytes, stream>>>(q, k, v, dout, lse, delta, dq_accum,
                                                                               dk, dv FLASHC_LAB_SEM);
#endif
  }
#if defined(FLASHC_BWD_WS) && FLASHC_BWD_WS_LIBRARY_ENDS
  if (Sq > 0) FLASHC_LAB_K(_bwd_ws_postprocess)<<<aux_grid, 128, 0, stream>>>(dq_accum, dq);
#else
  if (Sq > 0) FLASHC_LAB_K(_bwd_postprocess)<<<aux_grid, 128, 0, stream>>>(dq_accum, dq);
#endif
  return cudaGetLastError();
}

#ifdef FLASHC_LAB_PHASE_PROBE  // the phase probe's records (attention_bwd_ws.cu), for phases.py
extern "C" size_t flashc_lab_probe_bytes() { return sizeof(flashc_lab_probe); }
extern "C" int flashc_lab_probe_read(void* dst) { return cudaMemcpyFromSymbol(dst, flashc_lab_probe, sizeof(flashc_lab_probe)); }
extern "C" int flashc_lab_probe_clear() {
  void* p = nullptr;
  if (cudaError_t e = cudaGetSymbolAddress(&p, flashc_lab_probe)) return e;
  return cudaMemset(p, 0, sizeof(flashc_lab_probe));
}
#endif
