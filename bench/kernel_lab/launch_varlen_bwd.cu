// Host launch wrapper for the packed variable-length backward's main kernel (lab only): the golden
// attention_bwd_ws.cu's varlen kernels, built per config with -D flags (those of launch_bwd.cu's FLASHC_BWD_WS),
// loaded via ctypes. delta = rowsum(dO O) and dQ = scale dq_accum are the caller's (torch) in the lab.
#define FLASHC_BWD_WS 1
#include "launch_bwd.cu"

// 3-D tiled map (C, H, T) of a packed [T, H, C] tensor, box (box_cols, 1, box_rows), 128B swizzle.
static int make_packed_map_of(CUtensorMap* map, const flashc::TensorArg& t, unsigned box_rows, unsigned box_cols,
                              CUtensorMapDataType type, int elem) {
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(t.shape[2]), static_cast<cuuint64_t>(t.shape[1]),
                              static_cast<cuuint64_t>(t.shape[0])};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(t.stride[1]) * elem, static_cast<cuuint64_t>(t.stride[0]) * elem};
  if (strides[0] % 16 || strides[1] % 16 || (reinterpret_cast<unsigned long long>(t.data) & 15)) return -10;
  const cuuint32_t box[3] = {box_cols, 1, box_rows};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  EncodeTiledFn fn = encode_tiled();
  if (!fn) return -12;
  const CUresult r = fn(map, type, 3, t.data, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? 0 : -100 - static_cast<int>(r);
}

extern "C" long long flashc_lab_varlen_key_tiles(long long rows_k, long long sequences) {
  return flashc::device::packed_tile_bound(rows_k, sequences, bwd_ws_config::kBlockN);
}

// q, k, v, dout [T, H, D]; lse, delta [Hq, Tq]; dq_accum [Tq, Hq, D] f32 (zeroed); dk, dv [Tk, Hkv, D]; cu_q, cu_k;
// key_map int2 [flashc_lab_varlen_key_tiles]; status [4] (zeroed).
extern "C" int flashc_lab_varlen_bwd(flashc::TensorArg q, flashc::TensorArg k, flashc::TensorArg v,
                                     flashc::TensorArg dout, flashc::TensorArg lse, flashc::TensorArg delta,
                                     flashc::TensorArg dq_accum, flashc::TensorArg dk, flashc::TensorArg dv,
                                     flashc::TensorArg cu_q, flashc::TensorArg cu_k, flashc::TensorArg key_map,
                                     flashc::TensorArg status, cudaStream_t stream) {
  using namespace bwd_config;
  if (q.shape[1] != kHeadsQ || k.shape[1] != kHeadsKV || q.shape[2] != kHeadDim || k.shape[2] != kHeadDim) return -1;
  if (cu_q.shape[0] != cu_k.shape[0] || cu_q.shape[0] < 1) return -3;
  static bool configured = false;
  if (!configured) {
    cudaError_t e = cudaFuncSetAttribute(FLASHC_LAB_K(_bwd_ws_varlen), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         bwd_ws_config::kSmemBytes);
    if (e != cudaSuccess) return e;
    configured = true;
  }
  const long long tiles = flashc::device::packed_tile_bound(k.shape[0], cu_k.shape[0] - 1, bwd_ws_config::kBlockN);
  if (key_map.shape[0] != tiles) return -5;
  FLASHC_LAB_K(_varlen_key_plan)<<<1, 512, 0, stream>>>(cu_q, cu_k, q, k, key_map, status);
  if (tiles == 0) return cudaGetLastError();
  const auto bf = FLASHC_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  CUtensorMap tq, tk, tv, tdo, tdq;
  if (int e = make_packed_map_of(&tq, q, bwd_ws_config::kBlockM, 64, bf, 2)) return e;
  if (int e = make_packed_map_of(&tk, k, bwd_ws_config::kBlockN, 64, bf, 2)) return e;
  if (int e = make_packed_map_of(&tv, v, bwd_ws_config::kBlockN, 64, bf, 2)) return e;
  if (int e = make_packed_map_of(&tdo, dout, bwd_ws_config::kBlockM, 64, bf, 2)) return e;
  if (int e = make_packed_map_of(&tdq, dq_accum, 64, 32, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4)) return e;
  using flashc::TmaDescriptor;
  dim3 grid(static_cast<unsigned>(tiles), kHeadsKV, 1);
  FLASHC_LAB_K(_bwd_ws_varlen)<<<grid, bwd_ws_config::kThreads, bwd_ws_config::kSmemBytes, stream>>>(
      q, k, lse, delta, dq_accum, dk, dv, cu_q, cu_k, key_map, status, *reinterpret_cast<const TmaDescriptor*>(&tq),
      *reinterpret_cast<const TmaDescriptor*>(&tk), *reinterpret_cast<const TmaDescriptor*>(&tv),
      *reinterpret_cast<const TmaDescriptor*>(&tdo), *reinterpret_cast<const TmaDescriptor*>(&tdq));
  return cudaGetLastError();
}
