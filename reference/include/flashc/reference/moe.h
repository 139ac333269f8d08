//===- moe.h - float64 mixture-of-experts FFN -------------------*- C++ -*-===//
//
// The reference meaning of flash.moe on tokens x [T, d], float64:
//
//   logits = x_t · router [d, E];  s = softmax(logits) or sigmoid(logits)
//   K = the top_k experts by s, ties to the lower expert index
//   w_e = s_e (/ sum_{e' in K} s_e' when renormalize)
//   y_t = sum_{e in K} w_e · FFN_e(x_t)    (ffn.h's FFN of expert e's weights, no biases)
//
// Weights dense row-major: router [d, E], w1 / w_up [E, d, h], w2 [E, h, N].
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_REFERENCE_MOE_H
#define FLASHC_REFERENCE_MOE_H

#include "flashc/reference/ffn.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace flashc::reference {

struct MoeShape {
  int64_t tokens = 0, model = 0, hidden = 0, out = 0, experts = 0, topK = 1;  // T, d, h, N, E, k
};

enum class MoeGating { Softmax, Sigmoid };

/// One token's routing: its top_k experts (by score, ties to the lower index) and their weights.
struct MoeRoute {
  std::vector<int64_t> experts;
  std::vector<double> weights;
};

/// The routing of token row `x` [d] through `router` [d, E].
inline MoeRoute moeRoute(const MoeShape &s, MoeGating gating, bool renormalize, const double *router,
                         const double *x) {
  std::vector<double> score(s.experts, 0.0);
  for (int64_t i = 0; i < s.model; ++i)
    for (int64_t e = 0; e < s.experts; ++e)
      score[e] += x[i] * router[i * s.experts + e];
  if (gating == MoeGating::Softmax) {
    double m = *std::max_element(score.begin(), score.end()), sum = 0.0;
    for (double &v : score)
      sum += (v = std::exp(v - m));
    for (double &v : score)
      v /= sum;
  } else {
    for (double &v : score)
      v = 1.0 / (1.0 + std::exp(-v));
  }
  std::vector<int64_t> order(s.experts);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return score[a] > score[b]; });
  MoeRoute route;
  double total = 0.0;
  for (int64_t j = 0; j < s.topK; ++j) {
    route.experts.push_back(order[j]);
    route.weights.push_back(score[order[j]]);
    total += score[order[j]];
  }
  if (renormalize)
    for (double &w : route.weights)
      w /= total;
  return route;
}

/// Forward: y [T, N]. `routes`, when not null, receives each token's routing.
inline void moeForward(const MoeShape &s, Activation act, MoeGating gating, bool renormalize, const double *router,
                       const double *w1, const double *wUp, const double *w2, const double *x, double *y,
                       std::vector<MoeRoute> *routes = nullptr) {
  FfnShape expert{1, s.model, s.hidden, s.out};
  std::vector<double> row(s.out);
  if (routes)
    routes->clear();
  for (int64_t t = 0; t < s.tokens; ++t) {
    const double *xt = x + t * s.model;
    MoeRoute route = moeRoute(s, gating, renormalize, router, xt);
    std::fill(y + t * s.out, y + (t + 1) * s.out, 0.0);
    for (size_t j = 0; j < route.experts.size(); ++j) {
      int64_t e = route.experts[j];
      FfnWeights w;
      w.w1 = w1 + e * s.model * s.hidden;
      w.wUp = wUp ? wUp + e * s.model * s.hidden : nullptr;
      w.w2 = w2 + e * s.hidden * s.out;
      ffnForward(expert, act, w, xt, row.data());
      for (int64_t n = 0; n < s.out; ++n)
        y[t * s.out + n] += route.weights[j] * row[n];
    }
    if (routes)
      routes->push_back(std::move(route));
  }
}

}  // namespace flashc::reference

#endif  // FLASHC_REFERENCE_MOE_H
