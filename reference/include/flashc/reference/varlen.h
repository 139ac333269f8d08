//===- varlen.h - float64 attention over packed sequences -------*- C++ -*-===//
//
// The reference meaning of flash.varlen_attention, float64: sequence b's
// queries are rows cuQ[b] .. cuQ[b + 1] - 1 of q [Tq, Hq, D] and its keys rows
// cuK[b] .. cuK[b + 1] - 1 of k [Tk, Hkv, D] / v [Tk, Hkv, Dv]; each sequence
// is the dense attention of attention.h (bottom-right aligned window, softcap)
// on its own rows. out [Tq, Hq, Dv], lse [Hq, Tq]; rows outside every sequence
// are left as they were. Offsets that decrease, start below 0 or reach past
// the rows are refused (checkVarlenOffsets names the entry).
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_REFERENCE_VARLEN_H
#define FLASHC_REFERENCE_VARLEN_H

#include "flashc/reference/attention.h"

#include <cstdint>
#include <string>
#include <vector>

namespace flashc::reference {

struct VarlenShape {
  int64_t sequences = 0, rowsQ = 0, rowsK = 0, queryHeads = 1, kvHeads = 1, headDim = 0, valueDim = 0;
};

/// "" when both offset lists are valid, else the first bad entry.
inline std::string checkVarlenOffsets(const VarlenShape &s, const int32_t *cuQ, const int32_t *cuK) {
  for (int which = 0; which < 2; ++which) {
    const int32_t *cu = which ? cuK : cuQ;
    const int64_t rows = which ? s.rowsK : s.rowsQ;
    const std::string name = which ? "cu_seqlens_k" : "cu_seqlens_q";
    for (int64_t i = 0; i <= s.sequences; ++i) {
      std::string entry = name + "[" + std::to_string(i) + "] = " + std::to_string(cu[i]);
      if (i == 0 && cu[i] < 0) return entry + " is negative";
      if (i > 0 && cu[i] < cu[i - 1]) return entry + " is below " + name + "[" + std::to_string(i - 1) + "]";
      if (cu[i] > rows) return entry + " is past the " + std::to_string(rows) + " rows";
    }
  }
  return "";
}

namespace detail {
/// Rows start .. start + len - 1 of a packed [T, H, C] tensor as a dense [1, H, len, C] one, and back.
inline std::vector<double> unpackRows(const double *t, int64_t heads, int64_t width, int64_t start, int64_t len) {
  std::vector<double> out(heads * len * width);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < len; ++i)
      for (int64_t c = 0; c < width; ++c)
        out[(h * len + i) * width + c] = t[((start + i) * heads + h) * width + c];
  return out;
}
inline void packRows(const std::vector<double> &in, double *t, int64_t heads, int64_t width, int64_t start,
                     int64_t len) {
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < len; ++i)
      for (int64_t c = 0; c < width; ++c)
        t[((start + i) * heads + h) * width + c] = in[(h * len + i) * width + c];
}
inline AttentionShape sequenceShape(const VarlenShape &s, int64_t lq, int64_t lk) {
  AttentionShape d;
  d.queryHeads = s.queryHeads;
  d.kvHeads = s.kvHeads;
  d.querySeq = lq;
  d.keySeq = lk;
  d.headDim = s.headDim;
  d.valueDim = s.valueDim;
  return d;
}
}  // namespace detail

/// The gradients of varlenAttention for output gradient dOut [Tq, Hq, Dv]: dq [Tq, Hq, D], dk [Tk, Hkv, D], dv
/// [Tk, Hkv, Dv] (rows outside every sequence left as they were).
inline void varlenAttentionBackward(const VarlenShape &s, const AttentionParams &params, const double *q,
                                    const double *k, const double *v, const double *dOut, const int32_t *cuQ,
                                    const int32_t *cuK, double *dq, double *dk, double *dv) {
  for (int64_t b = 0; b < s.sequences; ++b) {
    const int64_t q0 = cuQ[b], lq = cuQ[b + 1] - q0, k0 = cuK[b], lk = cuK[b + 1] - k0;
    std::vector<double> qs = detail::unpackRows(q, s.queryHeads, s.headDim, q0, lq),
                        ks = detail::unpackRows(k, s.kvHeads, s.headDim, k0, lk),
                        vs = detail::unpackRows(v, s.kvHeads, s.valueDim, k0, lk),
                        dos = detail::unpackRows(dOut, s.queryHeads, s.valueDim, q0, lq);
    std::vector<double> dqs(qs.size()), dks(ks.size()), dvs(vs.size());
    attentionBackward(detail::sequenceShape(s, lq, lk), params, qs.data(), ks.data(), vs.data(), dos.data(),
                      dqs.data(), dks.data(), dvs.data());
    detail::packRows(dqs, dq, s.queryHeads, s.headDim, q0, lq);
    detail::packRows(dks, dk, s.kvHeads, s.headDim, k0, lk);
    detail::packRows(dvs, dv, s.kvHeads, s.valueDim, k0, lk);
  }
}

inline void varlenAttention(const VarlenShape &s, const AttentionParams &params, const double *q, const double *k,
                            const double *v, const int32_t *cuQ, const int32_t *cuK, double *out, double *lse) {
  for (int64_t b = 0; b < s.sequences; ++b) {
    const int64_t q0 = cuQ[b], lq = cuQ[b + 1] - q0, k0 = cuK[b], lk = cuK[b + 1] - k0;
    if (lq == 0) continue;
    AttentionShape d = detail::sequenceShape(s, lq, lk);
    // [rows, H, D] slices as [1, H, rows, D]
    std::vector<double> qs = detail::unpackRows(q, s.queryHeads, s.headDim, q0, lq),
                        ks = detail::unpackRows(k, s.kvHeads, s.headDim, k0, lk),
                        vs = detail::unpackRows(v, s.kvHeads, s.valueDim, k0, lk),
                        os(s.queryHeads * lq * s.valueDim), ls(s.queryHeads * lq);
    attentionForward(d, params, qs.data(), ks.data(), vs.data(), os.data(), ls.data());
    for (int64_t h = 0; h < s.queryHeads; ++h)
      for (int64_t i = 0; i < lq; ++i) {
        for (int64_t c = 0; c < s.valueDim; ++c)
          out[((q0 + i) * s.queryHeads + h) * s.valueDim + c] = os[(h * lq + i) * s.valueDim + c];
        lse[h * s.rowsQ + q0 + i] = ls[h * lq + i];
      }
  }
}

}  // namespace flashc::reference

#endif  // FLASHC_REFERENCE_VARLEN_H
