// Host launch wrapper for the decode kernels of the device library (lab only: the runtime launches
// through the driver API from a bundle's manifest). Built once per config with -D flags, loaded via ctypes.
//   test/GPU/golden/attention_decode.cu's macros: FLASHC_HEAD_DIM, FLASHC_GQA_GROUP, FLASHC_DEC_QUERIES,
//   FLASHC_DEC_PAGE (0 = contiguous), FLASHC_CAUSAL, FLASHC_DEC_STAGES, FLASHC_F16.
#include <cuda.h>
#include <cuda_runtime.h>

#include "attention_decode.cu"
#include "lab_tma.h"

using Plan = DecodePlan;
#define DEC_PAGE FLASHC_DEC_PAGE
#define DEC_GROUP FLASHC_GQA_GROUP
#define DEC_F16 FLASHC_F16

// A paged cache [pages, page, Hkv, D] as the 4-D map (D, Hkv, page, pages), box (64, 1, rows, 1).
static int make_paged_map(CUtensorMap* map, const flashc::TensorArg& t, unsigned box_rows) {
  const cuuint64_t dims[4] = {(cuuint64_t)t.shape[3], (cuuint64_t)t.shape[2], (cuuint64_t)t.shape[1], (cuuint64_t)t.shape[0]};
  const cuuint64_t strides[3] = {(cuuint64_t)t.stride[2] * 2, (cuuint64_t)t.stride[1] * 2, (cuuint64_t)t.stride[0] * 2};
  const cuuint32_t box[4] = {64, 1, box_rows, 1}, es[4] = {1, 1, 1, 1};
  EncodeTiledFn fn = encode_tiled();
  if (!fn) return -12;
  CUresult r = fn(map, DEC_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, t.data, dims, strides,
                  box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? 0 : -100 - (int)r;
}

extern "C" int flashc_lab_decode_info(int* threads, int* smem, int* row_groups) {
  *threads = Plan::kThreads;
  *smem = Plan::kSharedBytes;
  *row_groups = Plan::kRowGroups;
  return 0;
}

// status must be zeroed by the caller (the runtime's zeroed scratch). Returns 0 or an error code.
extern "C" int flashc_lab_decode(flashc::TensorArg q, flashc::TensorArg k, flashc::TensorArg v, flashc::TensorArg seqlens,
                                 flashc::TensorArg table, flashc::TensorArg out, flashc::TensorArg lse,
                                 flashc::TensorArg o_part, flashc::TensorArg lse_part, flashc::TensorArg status,
                                 cudaStream_t stream) {
  static bool configured = false;
  if (!configured) {
    cudaError_t e = cudaFuncSetAttribute(flashc_decode_split, cudaFuncAttributeMaxDynamicSharedMemorySize, Plan::kSharedBytes);
    if (e != cudaSuccess) return e;
    configured = true;
  }
  const int B = (int)q.shape[0], hkv = (int)q.shape[1] / DEC_GROUP, splits = (int)o_part.shape[1];
  const int capacity = DEC_PAGE ? (int)table.shape[1] * DEC_PAGE : (int)k.shape[2];
  const int pages = DEC_PAGE ? (int)k.shape[0] : 0;
  CUtensorMap km, vm;
  if (DEC_PAGE) {
    if (int e = make_paged_map(&km, k, Plan::kBoxRows)) return e;
    if (int e = make_paged_map(&vm, v, Plan::kBoxRows)) return e;
  } else {
    if (int e = make_map(&km, k, 64)) return e;
    if (int e = make_map(&vm, v, 64)) return e;
  }
  flashc_decode_check<<<B, 128, 0, stream>>>(seqlens, table, capacity, pages, status);
  dim3 grid(splits, hkv * Plan::kRowGroups, B);
  flashc_decode_split<<<grid, Plan::kThreads, Plan::kSharedBytes, stream>>>(
      *reinterpret_cast<const flashc::TmaDescriptor*>(&km), *reinterpret_cast<const flashc::TmaDescriptor*>(&vm), q, seqlens,
      table, out, lse, o_part, lse_part, status);
  const int rows = (int)o_part.shape[2];
  if (splits > 1) flashc_decode_combine<<<dim3(rows, B), 128, 0, stream>>>(o_part, lse_part, out, lse, status);
  return cudaGetLastError();
}

