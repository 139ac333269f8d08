// Host launch wrapper for the packed variable-length forward (lab only; the runtime launches from the manifest):
// the golden attention_fwd_ws.cu's varlen kernels, built per config with -D flags, loaded via ctypes. Also the
// dense forward of the same config (flashc_lab_fwd, launch_fwd.cu's contract) for the same-process comparison.
#define FLASHC_FWD_WS 1
#include "launch_fwd.cu"

// 3-D tiled map (D, H, T) of a packed [T, H, D] tensor, box (64 columns, 1 head, box_rows rows), 128B swizzle.
static int make_packed_map(CUtensorMap* map, const flashc::TensorArg& t, unsigned box_rows) {
  const int elem = 2;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(t.shape[2]), static_cast<cuuint64_t>(t.shape[1]),
                              static_cast<cuuint64_t>(t.shape[0])};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(t.stride[1]) * elem, static_cast<cuuint64_t>(t.stride[0]) * elem};
  if (strides[0] % 16 || strides[1] % 16 || (reinterpret_cast<unsigned long long>(t.data) & 15)) return -10;
  const cuuint32_t box[3] = {64, 1, box_rows};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  EncodeTiledFn fn = encode_tiled();
  if (!fn) return -12;
  const CUresult r = fn(map, FLASHC_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, t.data,
                        dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? 0 : -100 - static_cast<int>(r);
}

// q [Tq, Hq, D], k / v [Tk, Hkv, D], o [Tq, Hq, D], lse [Hq, Tq], cu_q / cu_k [B + 1] int32, tile_map int2
// [flashc_lab_varlen_tiles(Tq, B)], status [4] int32 (zeroed). plan = 0 reuses the last call's map.
extern "C" long long flashc_lab_varlen_tiles(long long rows_q, long long sequences) {
  return flashc::device::packed_tile_bound(rows_q, sequences, fwd_config::kBlockM);
}

extern "C" int flashc_lab_varlen(flashc::TensorArg q, flashc::TensorArg k, flashc::TensorArg v, flashc::TensorArg o,
                                 flashc::TensorArg lse, flashc::TensorArg cu_q, flashc::TensorArg cu_k,
                                 flashc::TensorArg tile_map, flashc::TensorArg status, int plan, cudaStream_t stream) {
  using namespace fwd_config;
  if (kPersistent) return -4;
  if (q.shape[1] != kHeadsQ || k.shape[1] != kHeadsKV || q.shape[2] != kHeadDim || k.shape[2] != kHeadDim) return -1;
  if (cu_q.shape[0] != cu_k.shape[0] || cu_q.shape[0] < 1) return -3;
  static bool configured = false;
  if (!configured) {
    cudaError_t e = cudaFuncSetAttribute(flashc_attention_fwd_varlen, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
    if (e != cudaSuccess) return e;
    configured = true;
  }
  const long long tiles = flashc::device::packed_tile_bound(q.shape[0], cu_q.shape[0] - 1, kBlockM);
  if (tile_map.shape[0] != tiles) return -5;
  if (plan) flashc_attention_varlen_plan<<<1, 1024, 0, stream>>>(cu_q, cu_k, q, k, tile_map, status);
  if (tiles == 0) return cudaGetLastError();
  CUtensorMap tq, tk, tv;
  if (int e = make_packed_map(&tq, q, kBlockM)) return e;
  if (int e = make_packed_map(&tk, k, kBlockN)) return e;
  if (int e = make_packed_map(&tv, v, kBlockN)) return e;
  dim3 grid(static_cast<unsigned>(tiles), kHeadsQ, 1);
  flashc_attention_fwd_varlen<<<grid, kThreads, kSmemBytes, stream>>>(
      *reinterpret_cast<const flashc::TmaDescriptor*>(&tq), *reinterpret_cast<const flashc::TmaDescriptor*>(&tk),
      *reinterpret_cast<const flashc::TmaDescriptor*>(&tv), q, k, o, lse, cu_q, cu_k, tile_map, status);
  return cudaGetLastError();
}
