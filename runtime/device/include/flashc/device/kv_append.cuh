// Appending the new tokens' keys and values into a KV cache (flash.kv_append), the layouts of
// attention_decode.cuh: contiguous k_cache [B, Hkv, capacity, D] or paged [pages, P, Hkv, D] through
// block_table [B, W]. New token t of sequence b (key [B, Hkv, T, D]) becomes cache row
// cache_seqlens[b] - T + t: lengths count the new tokens, as the decode kernels do, so one cache_seqlens
// serves the append and the decode after it.
//
//   kv_append_check<Config>  one block a sequence: attention_decode_check, and a length below T is bad too.
//   kv_append<Config>        one block a (4 new tokens, sequence): every kv head's K and V rows of those tokens
//                            copied in 16-byte pieces; nothing once the check set its status.
#pragma once
#include "flashc/device/attention_decode.cuh"
#include "flashc/device/tensor.cuh"

namespace flashc {
namespace device {

template <class Config>
struct KvAppendPlan {
  using T = typename Config::Elem;
  static constexpr int kHeadDim = Config::kHeadDim;
  static constexpr int kValueDim = Config::kValueDim;
  static constexpr int kPageSize = Config::kPageSize;
  static constexpr int kTokensPerBlock = 4;
  static constexpr int kThreads = 128;
  static constexpr int kChunk = 16 / sizeof(T);  // elements a 16-byte piece
  static_assert(kHeadDim % kChunk == 0 && kValueDim % kChunk == 0, "kv_append: rows of whole 16-byte pieces");
  static_assert(kPageSize == 0 || (kPageSize & (kPageSize - 1)) == 0, "kv_append: pages of a power of two rows");
};

// The check of a generated kernel: key [B, Hkv, T, D] gives T; the rest is attention_decode_check's.
template <class Config>
__device__ __forceinline__ void kv_append_check(const TensorArg& key, const TensorArg& k_cache,
                                                const TensorArg& seqlens, const TensorArg& block_table, int* status) {
  constexpr int P = Config::kPageSize;
  const int capacity = P > 0 ? static_cast<int>(block_table.shape[1]) * P : static_cast<int>(k_cache.shape[2]);
  attention_decode_check<P>(seqlens, block_table, capacity, P > 0 ? static_cast<int>(k_cache.shape[0]) : 0, status,
                            static_cast<int>(key.shape[2]));
}

// Element offset of cache row `pos` of kv head `h` of sequence b (the table checked: pos < length).
template <int kPageSize>
__device__ __forceinline__ long long kv_cache_row(const TensorArg& cache, const TensorArg& block_table, int b, int h,
                                                  int pos) {
  if constexpr (kPageSize > 0) {
    const int page = static_cast<const int*>(block_table.data)[b * block_table.stride[0] +
                                                               (pos / kPageSize) * block_table.stride[1]];
    return page * cache.stride[0] + (pos % kPageSize) * cache.stride[1] + h * cache.stride[2];
  } else {
    return b * cache.stride[0] + h * cache.stride[1] + pos * cache.stride[2];
  }
}

// Rows [t0, t0 + 4) of sequence blockIdx.y, every kv head, of one of key / value into its cache.
template <class Config, int kDim>
__device__ __forceinline__ void kv_append_rows(const TensorArg& src, const TensorArg& cache,
                                               const TensorArg& block_table, int b, int t0, int tokens, int first) {
  using Plan = KvAppendPlan<Config>;
  using T = typename Plan::T;
  constexpr int kPieces = kDim / Plan::kChunk;  // 16-byte pieces a row
  const int heads = static_cast<int>(src.shape[1]);
  const int rows = min(Plan::kTokensPerBlock, tokens - t0) * heads;
  for (int i = threadIdx.x; i < rows * kPieces; i += Plan::kThreads) {
    const int row = i / kPieces, piece = i % kPieces;
    const int t = t0 + row / heads, h = row % heads;
    const T* from = static_cast<const T*>(src.data) + b * src.stride[0] + h * src.stride[1] + t * src.stride[2] +
                    piece * Plan::kChunk;
    T* to = static_cast<T*>(cache.data) + kv_cache_row<Config::kPageSize>(cache, block_table, b, h, first + t) +
            piece * Plan::kChunk;
    *reinterpret_cast<uint4*>(to) = *reinterpret_cast<const uint4*>(from);
  }
}

template <class Config>
__device__ __forceinline__ void kv_append(const TensorArg& key, const TensorArg& value, const TensorArg& k_cache,
                                          const TensorArg& v_cache, const TensorArg& seqlens,
                                          const TensorArg& block_table, const int* status) {
  grid_dependency_wait();  // (launched programmatically after the check: its verdict from here on)
  launch_dependents();     // the decode's split may start its prologue; it waits for these rows
  if (*reinterpret_cast<const volatile int*>(status) != kTableOk) return;  // a bad table: nothing written
  const int b = blockIdx.y, tokens = static_cast<int>(key.shape[2]);
  const int t0 = blockIdx.x * KvAppendPlan<Config>::kTokensPerBlock;
  if (t0 >= tokens) return;
  const int first = static_cast<const int*>(seqlens.data)[b * seqlens.stride[0]] - tokens;  // the check: >= 0
  kv_append_rows<Config, Config::kHeadDim>(key, k_cache, block_table, b, t0, tokens, first);
  kv_append_rows<Config, Config::kValueDim>(value, v_cache, block_table, b, t0, tokens, first);
}

}  // namespace device
}  // namespace flashc
