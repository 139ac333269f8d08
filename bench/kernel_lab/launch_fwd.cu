// Host launch wrapper for the golden forward kernel (lab only; the runtime launches through the
// driver API from the manifest instead). Built once per config with -D flags, loaded via ctypes.
#include <cuda_runtime.h>

#if defined(FLASHC_FWD_WS)  // TMA + warp-specialized wgmma (FlashAttention-3 style)
#include <cuda.h>  // CUtensorMap and its enums only: the encoder comes from the runtime's driver entry point
#include "attention_fwd_ws.cu"
#elif defined(FLASHC_FWD_WGMMA)  // wgmma_sm90 strategy
#include "attention_fwd_wgmma.cu"
#elif defined(FLASHC_FWD_EMITSTYLE)  // the emitter's call forms (emitter_api.cuh)
#include "attention_fwd_emitter_style.cu"
#else
#include "attention_fwd.cu"
#endif

#if defined(FLASHC_FWD_WS)
static_assert(sizeof(CUtensorMap) == sizeof(flashc::TmaDescriptor) && alignof(CUtensorMap) == alignof(flashc::TmaDescriptor),
              "TmaDescriptor must mirror CUtensorMap");
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled through the runtime (no -lcuda); the function pointer is process-global and safe to keep.
static EncodeTiledFn encode_tiled() {
  static EncodeTiledFn fn = nullptr;
  if (!fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult qres;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &qres) == cudaSuccess &&
        qres == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<EncodeTiledFn>(p);
  }
  return fn;
}

// 4-D tiled map (D, S, H, B) of an attention tensor [B, H, S, D] (any strides with a unit inner
// stride and 16-byte multiples elsewhere: bhsd and bshd alike), box (64, rows, 1, 1), 128-byte
// swizzle = one SmemPanelTile panel per copy; out-of-bounds elements read as zero. Built per call:
// it embeds the base pointer, so nothing is cached.
static int make_map(CUtensorMap* map, const flashc::TensorArg& t, unsigned box_rows) {
  constexpr int kElem = 2;
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(t.shape[3]), static_cast<cuuint64_t>(t.shape[2]),
                              static_cast<cuuint64_t>(t.shape[1]), static_cast<cuuint64_t>(t.shape[0])};
  const cuuint64_t strides[3] = {static_cast<cuuint64_t>(t.stride[2]) * kElem, static_cast<cuuint64_t>(t.stride[1]) * kElem,
                                 static_cast<cuuint64_t>(t.stride[0]) * kElem};
  cuuint64_t s_fixed[3];  // a size-1 dim may carry any stride (never stepped): give TMA a legal one
  for (int i = 0; i < 3; ++i) {
    if (dims[i + 1] > 1 && (strides[i] == 0 || strides[i] % 16 != 0)) return -10;
    s_fixed[i] = dims[i + 1] > 1 ? strides[i] : strides[i] == 0 ? 16 : (strides[i] + 15) / 16 * 16;
  }
  if ((reinterpret_cast<unsigned long long>(t.data) & 15) != 0) return -11;
  const cuuint32_t box[4] = {64, box_rows, 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  EncodeTiledFn fn = encode_tiled();
  if (!fn) return -12;
  const CUresult r = fn(map, FLASHC_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                        4, t.data, dims, s_fixed, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? 0 : -100 - static_cast<int>(r);
}
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
