// Tensor maps for the lab's TMA kernels (host side): the runtime builds them from the manifest in use.
#pragma once
#include <cuda.h>  // CUtensorMap and its enums only: the encoder comes from the runtime's driver entry point
#include <cuda_runtime.h>

#include "flashc/device/tma.cuh"
#include "flashc/device/tensor.cuh"

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
// stride and 16-byte multiples elsewhere: bhsd and bshd alike), box (128 bytes of columns, rows, 1, 1),
// 128-byte swizzle = one SmemPanelTile panel per copy; out-of-bounds elements read as zero. Built per
// call: it embeds the base pointer, so nothing is cached.
static int make_map_of(CUtensorMap* map, const flashc::TensorArg& t, unsigned box_rows, CUtensorMapDataType type,
                       int elem_bytes) {
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(t.shape[3]), static_cast<cuuint64_t>(t.shape[2]),
                              static_cast<cuuint64_t>(t.shape[1]), static_cast<cuuint64_t>(t.shape[0])};
  const cuuint64_t strides[3] = {static_cast<cuuint64_t>(t.stride[2]) * elem_bytes,
                                 static_cast<cuuint64_t>(t.stride[1]) * elem_bytes,
                                 static_cast<cuuint64_t>(t.stride[0]) * elem_bytes};
  cuuint64_t s_fixed[3];  // a size-1 dim may carry any stride (never stepped): give TMA a legal one
  for (int i = 0; i < 3; ++i) {
    if (dims[i + 1] > 1 && (strides[i] == 0 || strides[i] % 16 != 0)) return -10;
    s_fixed[i] = dims[i + 1] > 1 ? strides[i] : strides[i] == 0 ? 16 : (strides[i] + 15) / 16 * 16;
  }
  if ((reinterpret_cast<unsigned long long>(t.data) & 15) != 0) return -11;
  const cuuint32_t box[4] = {static_cast<cuuint32_t>(128 / elem_bytes), box_rows, 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  EncodeTiledFn fn = encode_tiled();
  if (!fn) return -12;
  const CUresult r = fn(map, type, 4, t.data, dims, s_fixed, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? 0 : -100 - static_cast<int>(r);
}

// q, k, v, dO (16-bit): boxes of 64 columns.
static int make_map(CUtensorMap* map, const flashc::TensorArg& t, unsigned box_rows) {
  return make_map_of(map, t, box_rows, FLASHC_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2);
}
// dq_accum (f32): boxes of 32 columns.
static int make_map_f32(CUtensorMap* map, const flashc::TensorArg& t, unsigned box_rows) {
  return make_map_of(map, t, box_rows, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4);
}
// Row-major 16-bit tensor [outer, rows, cols] (rank 2: [rows, cols]), contiguous: box (64 columns, box_rows, 1),
// 128-byte swizzle (the grouped GEMM labs' A, B and C).
static int make_rowmajor_map(CUtensorMap* map, const void* data, CUtensorMapDataType type, int rank, long long outer,
                             long long rows, long long cols, unsigned box_rows) {
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows),
                              static_cast<cuuint64_t>(outer)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(cols) * 2, static_cast<cuuint64_t>(rows * cols) * 2};
  if (strides[0] % 16 != 0 || (reinterpret_cast<unsigned long long>(data) & 15) != 0) return -10;
  const cuuint32_t box[3] = {64, box_rows, 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  EncodeTiledFn fn = encode_tiled();
  if (!fn) return -12;
  const CUresult r = fn(map, type, rank, const_cast<void*>(data), dims, strides, box, elem_strides,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? 0 : -100 - static_cast<int>(r);
}
