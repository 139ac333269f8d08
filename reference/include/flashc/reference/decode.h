//===- decode.h - float64 decode attention over a KV cache ------*- C++ -*-===//
//
// The reference meaning of flash.decode_attention, float64: for sequence b of
// length L = seqlens[b] (its keys are cache rows 0 .. L - 1), query token t of
// T sits at position L - T + t; key j is visible when j < L and, causal,
// j <= L - T + t. With query head h reading kv head h / (Hq / Hkv):
//   s_j = scale · q·k_j,  lse = log Σ_j exp(s_j),  o = Σ_j exp(s_j - lse) v_j
// (-inf and 0 for a row that sees no key). Caches: contiguous k [B, Hkv, S, D]
// (pageSize 0) or paged k [pages, P, Hkv, D] with table [B, W]: key j of
// sequence b is row j % P of page table[b][j / P]. Dense row-major tensors:
// q [B, Hq, T, D], out [B, Hq, T, Dv], lse [B, Hq, T]. A length outside
// [0, capacity] or a page id outside [0, pages) among those a sequence uses is
// refused (DecodeCheck names the first: sequence, index, value). appendToCache is
// flash.kv_append's meaning: the new tokens' rows at seqlens[b] - T ...
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_REFERENCE_DECODE_H
#define FLASHC_REFERENCE_DECODE_H

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace flashc::reference {

struct DecodeShape {
  int64_t batch = 1, queryHeads = 1, kvHeads = 1, tokens = 1, headDim = 0, valueDim = 0;
  int64_t pageSize = 0;  // 0: contiguous cache
  int64_t capacity = 0;  // contiguous: S; paged: W · P
  int64_t pages = 0;     // paged: the cache's pages
  int64_t tableWidth = 0;
};

/// "" when every length and used page id is valid, else what is wrong, naming the sequence. `minLength`: an
/// append's new tokens (each length counts them).
inline std::string checkDecodeTables(const DecodeShape &s, const int32_t *seqlens, const int32_t *table,
                                     int64_t minLength = 0) {
  for (int64_t b = 0; b < s.batch; ++b) {
    int64_t len = seqlens[b];
    if (len < minLength || len > s.capacity)
      return "cache_seqlens[" + std::to_string(b) + "] = " + std::to_string(len) + " is outside [" +
             std::to_string(minLength) + ", " + std::to_string(s.capacity) + "]";
    if (s.pageSize > 0)
      for (int64_t i = 0; i * s.pageSize < len; ++i) {
        int64_t page = table[b * s.tableWidth + i];
        if (page < 0 || page >= s.pages)
          return "block_table[" + std::to_string(b) + "][" + std::to_string(i) + "] = " + std::to_string(page) +
                 " is not a page";
      }
  }
  return "";
}

/// Offset (in elements) of row `key` of kv head `hk` of sequence b's cache, or -1 past the table.
inline int64_t decodeCacheRow(const DecodeShape &s, const int32_t *table, int64_t b, int64_t hk, int64_t key,
                              int64_t dim) {
  if (s.pageSize == 0)
    return ((b * s.kvHeads + hk) * s.capacity + key) * dim;
  int64_t page = table[b * s.tableWidth + key / s.pageSize];
  return ((page * s.pageSize + key % s.pageSize) * s.kvHeads + hk) * dim;
}

/// out and lse in float64 (tables must pass checkDecodeTables).
inline void decodeAttention(const DecodeShape &s, const std::vector<double> &q, const std::vector<double> &k,
                            const std::vector<double> &v, const int32_t *seqlens, const int32_t *table, double scale,
                            bool causal, std::vector<double> &out, std::vector<double> &lse) {
  const double inf = std::numeric_limits<double>::infinity();
  out.assign(s.batch * s.queryHeads * s.tokens * s.valueDim, 0.0);
  lse.assign(s.batch * s.queryHeads * s.tokens, -inf);
  int64_t group = s.queryHeads / s.kvHeads;
  std::vector<double> scores;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.queryHeads; ++h)
      for (int64_t t = 0; t < s.tokens; ++t) {
        int64_t len = seqlens[b], last = causal ? len - s.tokens + t : len - 1;
        int64_t keys = std::min(len, last + 1);
        if (keys <= 0)
          continue;
        const double *qi = &q[((b * s.queryHeads + h) * s.tokens + t) * s.headDim];
        scores.assign(keys, 0.0);
        double m = -inf;
        for (int64_t j = 0; j < keys; ++j) {
          const double *kj = &k[decodeCacheRow(s, table, b, h / group, j, s.headDim)];
          double dot = 0.0;
          for (int64_t d = 0; d < s.headDim; ++d)
            dot += qi[d] * kj[d];
          scores[j] = scale * dot;
          m = std::max(m, scores[j]);
        }
        double sum = 0.0;
        for (double &x : scores)
          sum += (x = std::exp(x - m));
        int64_t row = (b * s.queryHeads + h) * s.tokens + t;
        lse[row] = m + std::log(sum);
        double *o = &out[row * s.valueDim];
        for (int64_t j = 0; j < keys; ++j) {
          const double *vj = &v[decodeCacheRow(s, table, b, h / group, j, s.valueDim)];
          for (int64_t d = 0; d < s.valueDim; ++d)
            o[d] += scores[j] / sum * vj[d];
        }
      }
}

/// flash.kv_append: new token t of sequence b (key [B, Hkv, T, D], value [B, Hkv, T, Dv] with T = s.tokens) into
/// cache row seqlens[b] - T + t of k / v (tables must pass checkDecodeTables with minLength T).
inline void appendToCache(const DecodeShape &s, const std::vector<double> &key, const std::vector<double> &value,
                          const int32_t *seqlens, const int32_t *table, std::vector<double> &k,
                          std::vector<double> &v) {
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.kvHeads; ++h)
      for (int64_t t = 0; t < s.tokens; ++t) {
        int64_t pos = seqlens[b] - s.tokens + t, row = (b * s.kvHeads + h) * s.tokens + t;
        for (int64_t d = 0; d < s.headDim; ++d)
          k[decodeCacheRow(s, table, b, h, pos, s.headDim) + d] = key[row * s.headDim + d];
        for (int64_t d = 0; d < s.valueDim; ++d)
          v[decodeCacheRow(s, table, b, h, pos, s.valueDim) + d] = value[row * s.valueDim + d];
      }
}

}  // namespace flashc::reference

#endif  // FLASHC_REFERENCE_DECODE_H
