//===- attention.h - float64 attention forward and backward -----*- C++ -*-===//
//
// The reference meaning of flash.attention, materialised softmax, float64:
//
//   s_ij  = scale · q_i·k_j, then softcap · tanh(s_ij / softcap) when softcap > 0, then a score modifier's
//           f(s_ij, b, h, i, j) when there is one
//   s_ij  = -inf where the window hides key j from query i
//   lse_i = log Σ_j exp(s_ij)          (-inf for a row that sees no key)
//   o_i   = Σ_j exp(s_ij - lse_i) v_j  (0 for a row that sees no key)
//
// with GQA (query head h reads kv head h / (Hq / Hkv)) and Sq ≠ Sk (the mask
// is bottom-right aligned: the last query row sits at the last key). The
// backward returns the textbook gradients of o for a given dO. Tensors are
// dense row-major: q [B,Hq,Sq,D], k [B,Hkv,Sk,D], v [B,Hkv,Sk,Dv],
// o / dO [B,Hq,Sq,Dv], lse [B,Hq,Sq]; gradients have their primal's shape.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_REFERENCE_ATTENTION_H
#define FLASHC_REFERENCE_ATTENTION_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

namespace flashc::reference {

struct AttentionShape {
  int64_t batch = 1, queryHeads = 1, kvHeads = 1, querySeq = 0, keySeq = 0, headDim = 0,
          valueDim = 0;
};

/// Which keys a query row sees. Query i sits at key position p = i + Sk - Sq
/// (or p = i + keyOffset when hasKeyOffset: flash.attention's run-time key
/// offset); key j is visible when p - left <= j <= p + right, a negative bound
/// meaning unbounded on that side (the rule of flash's MaskAttr::isKeyVisible).
struct AttentionWindow {
  int64_t left = -1, right = -1;
  bool hasKeyOffset = false;
  int64_t keyOffset = 0;

  static AttentionWindow none() { return {-1, -1}; }
  static AttentionWindow causal() { return {-1, 0}; }
  AttentionWindow withKeyOffset(int64_t offset) const {
    AttentionWindow w = *this;
    w.hasKeyOffset = true;
    w.keyOffset = offset;
    return w;
  }
  bool isKeyVisible(int64_t query, int64_t key, int64_t querySeq, int64_t keySeq) const {
    int64_t position = query + (hasKeyOffset ? keyOffset : keySeq - querySeq);
    return (left < 0 || key >= position - left) && (right < 0 || key <= position + right);
  }
};

struct AttentionParams {
  double scale = 1.0;
  double softcap = 0.0; // > 0: scores go through softcap · tanh(s / softcap)
  AttentionWindow window;
  /// A mask modifier (flash.attention's mask_mod): key j is also hidden from
  /// query row i of batch b, query head h where it returns false. Empty: none.
  std::function<bool(int64_t b, int64_t h, int64_t i, int64_t j)> maskMod;
  /// A score modifier (flash.attention's score_mod): the scaled score s of
  /// (b, h, i, j) becomes .first, with d(.first)/ds = .second. Empty: none.
  std::function<std::pair<double, double>(double s, int64_t b, int64_t h, int64_t i, int64_t j)> scoreMod;
};

namespace detail {
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// Row i of head (b, h): writes p_j = exp(s_ij - lse_i) (0 where masked) and
/// chain_j = d s_ij / d(q_i·k_j) (scale, times 1 - tanh² through a softcap);
/// returns lse_i (-inf when no key is visible, p then all 0).
inline double attentionRow(const AttentionShape &s, const AttentionParams &params,
                           const double *query, const double *keys, int64_t b, int64_t h, int64_t i,
                           double *p, double *chain) {
  double rowMax = kNegInf;
  for (int64_t j = 0; j < s.keySeq; ++j) {
    chain[j] = params.scale;
    if (!params.window.isKeyVisible(i, j, s.querySeq, s.keySeq) || (params.maskMod && !params.maskMod(b, h, i, j))) {
      p[j] = kNegInf;
      continue;
    }
    double dot = 0.0;
    for (int64_t d = 0; d < s.headDim; ++d)
      dot += query[d] * keys[j * s.headDim + d];
    double score = dot * params.scale;
    if (params.softcap > 0.0) {
      double t = std::tanh(score / params.softcap);
      score = params.softcap * t;
      chain[j] = params.scale * (1.0 - t * t);
    }
    if (params.scoreMod) {
      auto [modified, derivative] = params.scoreMod(score, b, h, i, j);
      score = modified;
      chain[j] *= derivative;
      if (score == kNegInf) { // a score the modifier hides: no gradient flows through it
        p[j] = kNegInf;
        chain[j] = 0.0;
        continue;
      }
    }
    p[j] = score;
    rowMax = std::max(rowMax, score);
  }
  if (rowMax == kNegInf) {
    std::fill(p, p + s.keySeq, 0.0);
    return kNegInf;
  }
  double sum = 0.0;
  for (int64_t j = 0; j < s.keySeq; ++j)
    sum += std::exp(p[j] - rowMax);
  double lse = rowMax + std::log(sum);
  for (int64_t j = 0; j < s.keySeq; ++j)
    p[j] = std::exp(p[j] - lse);
  return lse;
}
} // namespace detail

/// Forward: writes out [B,Hq,Sq,Dv] and, when non-null, lse [B,Hq,Sq].
/// Hq must be a multiple of Hkv.
inline void attentionForward(const AttentionShape &s, const AttentionParams &params,
                             const double *q, const double *k, const double *v, double *out,
                             double *lse) {
  const int64_t group = s.queryHeads / s.kvHeads;
  std::fill(out, out + s.batch * s.queryHeads * s.querySeq * s.valueDim, 0.0);
  std::vector<double> p(s.keySeq), chain(s.keySeq);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.queryHeads; ++h) {
      int64_t kvHead = b * s.kvHeads + h / group;
      const double *keys = &k[kvHead * s.keySeq * s.headDim];
      const double *values = &v[kvHead * s.keySeq * s.valueDim];
      for (int64_t i = 0; i < s.querySeq; ++i) {
        int64_t row = (b * s.queryHeads + h) * s.querySeq + i;
        double rowLse =
            detail::attentionRow(s, params, &q[row * s.headDim], keys, b, h, i, p.data(), chain.data());
        if (lse)
          lse[row] = rowLse;
        double *o = &out[row * s.valueDim];
        for (int64_t j = 0; j < s.keySeq; ++j) {
          if (p[j] == 0.0)
            continue;
          for (int64_t d = 0; d < s.valueDim; ++d)
            o[d] += p[j] * values[j * s.valueDim + d];
        }
      }
    }
}

/// Backward for output gradient dOut [B,Hq,Sq,Dv]: writes dq, dk, dv (shapes
/// of q, k, v; GQA heads accumulate into their shared kv head). With
/// dP_ij = dO_i·v_j, Δ_i = Σ_j P_ij dP_ij, dS_ij = P_ij (dP_ij - Δ_i) · chain_ij:
/// dq_i = Σ_j dS_ij k_j, dk_j = Σ_i dS_ij q_i, dv_j = Σ_i P_ij dO_i.
inline void attentionBackward(const AttentionShape &s, const AttentionParams &params,
                              const double *q, const double *k, const double *v,
                              const double *dOut, double *dq, double *dk, double *dv) {
  const int64_t group = s.queryHeads / s.kvHeads;
  std::fill(dq, dq + s.batch * s.queryHeads * s.querySeq * s.headDim, 0.0);
  std::fill(dk, dk + s.batch * s.kvHeads * s.keySeq * s.headDim, 0.0);
  std::fill(dv, dv + s.batch * s.kvHeads * s.keySeq * s.valueDim, 0.0);
  std::vector<double> p(s.keySeq), chain(s.keySeq), dp(s.keySeq);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.queryHeads; ++h) {
      int64_t kvHead = b * s.kvHeads + h / group;
      const double *keys = &k[kvHead * s.keySeq * s.headDim];
      const double *values = &v[kvHead * s.keySeq * s.valueDim];
      double *dKeys = &dk[kvHead * s.keySeq * s.headDim];
      double *dValues = &dv[kvHead * s.keySeq * s.valueDim];
      for (int64_t i = 0; i < s.querySeq; ++i) {
        int64_t row = (b * s.queryHeads + h) * s.querySeq + i;
        const double *query = &q[row * s.headDim];
        const double *dO = &dOut[row * s.valueDim];
        double *dQuery = &dq[row * s.headDim];
        if (detail::attentionRow(s, params, query, keys, b, h, i, p.data(), chain.data()) ==
            detail::kNegInf)
          continue; // no visible key: output 0, no gradient
        double delta = 0.0;
        for (int64_t j = 0; j < s.keySeq; ++j) {
          double x = 0.0;
          for (int64_t d = 0; d < s.valueDim; ++d)
            x += dO[d] * values[j * s.valueDim + d];
          dp[j] = x;
          delta += p[j] * x;
        }
        for (int64_t j = 0; j < s.keySeq; ++j) {
          if (p[j] == 0.0)
            continue;
          double ds = p[j] * (dp[j] - delta) * chain[j];
          for (int64_t d = 0; d < s.headDim; ++d) {
            dQuery[d] += ds * keys[j * s.headDim + d];
            dKeys[j * s.headDim + d] += ds * query[d];
          }
          for (int64_t d = 0; d < s.valueDim; ++d)
            dValues[j * s.valueDim + d] += p[j] * dO[d];
        }
      }
    }
}

} // namespace flashc::reference

#endif // FLASHC_REFERENCE_ATTENTION_H
