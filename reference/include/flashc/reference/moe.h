//===- moe.h - float64 mixture-of-experts FFN -------------------*- C++ -*-===//
//
// The reference meaning of flash.moe on tokens x [T, d], float64:
//
//   logits = x_t · router [d, E] (rounded by `roundLogit` when given: the 16-bit graph's router matmul result, as
//            the kernels and PyTorch's router hold it, so that their top-k choice is this one);
//   s = softmax(logits) or sigmoid(logits)
//   K = the top_k experts by s, ties to the lower expert index
//   w_e = s_e (/ sum_{e' in K} s_e' when renormalize)
//   y_t = sum_{e in K} w_e · FFN_e(x_t)    (ffn.h's FFN of expert e's weights, no biases)
//
// Weights dense row-major: router [d, E], w1 / w_up [E, d, h], w2 [E, h, N]. moeBackward: the gradients of x,
// the router and every expert's weights (the top-k choice held fixed).
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_REFERENCE_MOE_H
#define FLASHC_REFERENCE_MOE_H

#include "flashc/reference/codec.h"
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

/// One token's routing: its top_k experts (by score, ties to the lower index), their weights, and every expert's
/// score (softmax or sigmoid of the logits: what the backward differentiates).
struct MoeRoute {
  std::vector<int64_t> experts;
  std::vector<double> weights;
  std::vector<double> scores;
};

/// A logit's rounding (none: nullptr).
using LogitRounding = double (*)(double);

/// The rounding of a 16-bit layer's logits: to bf16 (`bf16`) or f16.
inline LogitRounding logitRounding16(bool bf16) {
  if (bf16)
    return [](double v) { return double(roundToBf16(float(v))); };
  return [](double v) { return double(roundToF16(float(v))); };
}

/// The routing of token row `x` [d] through `router` [d, E].
inline MoeRoute moeRoute(const MoeShape &s, MoeGating gating, bool renormalize, const double *router,
                         const double *x, LogitRounding roundLogit = nullptr) {
  std::vector<double> score(s.experts, 0.0);
  for (int64_t i = 0; i < s.model; ++i)
    for (int64_t e = 0; e < s.experts; ++e)
      score[e] += x[i] * router[i * s.experts + e];
  if (roundLogit)
    for (double &v : score)
      v = roundLogit(v);
  const std::vector<double> logit = score;
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
  // The top k by logit: the scores' order, without the ties that rounding a sigmoid near 1 makes.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return logit[a] > logit[b]; });
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
  route.scores = std::move(score);
  return route;
}

/// Forward: y [T, N]. `routes`, when not null, receives each token's routing.
inline void moeForward(const MoeShape &s, Activation act, MoeGating gating, bool renormalize, const double *router,
                       const double *w1, const double *wUp, const double *w2, const double *x, double *y,
                       std::vector<MoeRoute> *routes = nullptr, LogitRounding roundLogit = nullptr) {
  FfnShape expert{1, s.model, s.hidden, s.out};
  std::vector<double> row(s.out);
  if (routes)
    routes->clear();
  for (int64_t t = 0; t < s.tokens; ++t) {
    const double *xt = x + t * s.model;
    MoeRoute route = moeRoute(s, gating, renormalize, router, xt, roundLogit);
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

/// Gradient outputs, each of its parameter's shape; null ones are not computed.
struct MoeGradients {
  double *dx = nullptr, *dRouter = nullptr, *dw1 = nullptr, *dwUp = nullptr, *dw2 = nullptr;
};

/// Backward for dy [T, N]. The top-k choice is piecewise constant (no gradient through it); the weights' gradient
/// dw_e = dy_t · FFN_e(x_t) goes back through the renormalisation and the softmax / sigmoid to the logits, so to the
/// router and x; each expert's FFN backward takes its rows' dy scaled by their weights. `roundLogit`: as moeForward's
/// (the choice and the scores from the rounded logits; the gradient flows through the rounding as through identity).
inline void moeBackward(const MoeShape &s, Activation act, MoeGating gating, bool renormalize, const double *router,
                        const double *w1, const double *wUp, const double *w2, const double *x, const double *dy,
                        const MoeGradients &g, LogitRounding roundLogit = nullptr) {
  const int64_t D = s.model, H = s.hidden, N = s.out, E = s.experts;
  if (g.dx)
    std::fill(g.dx, g.dx + s.tokens * D, 0.0);
  if (g.dRouter)
    std::fill(g.dRouter, g.dRouter + D * E, 0.0);
  std::vector<MoeRoute> routes;
  for (int64_t t = 0; t < s.tokens; ++t)
    routes.push_back(moeRoute(s, gating, renormalize, router, x + t * D, roundLogit));
  std::vector<std::vector<double>> dWeight(s.tokens, std::vector<double>(s.topK, 0.0));
  for (int64_t e = 0; e < E; ++e) {
    // The expert's rows: (token, slot) pairs routed to it.
    std::vector<std::pair<int64_t, int64_t>> rows;
    for (int64_t t = 0; t < s.tokens; ++t)
      for (int64_t j = 0; j < s.topK; ++j)
        if (routes[t].experts[j] == e)
          rows.push_back({t, j});
    FfnShape shape{static_cast<int64_t>(rows.size()), D, H, N};
    FfnWeights w;
    w.w1 = w1 + e * D * H;
    w.wUp = wUp ? wUp + e * D * H : nullptr;
    w.w2 = w2 + e * H * N;
    std::vector<double> xs(rows.size() * D), dys(rows.size() * N), f(rows.size() * N), dxs(rows.size() * D);
    for (size_t r = 0; r < rows.size(); ++r) {
      auto [t, j] = rows[r];
      std::copy(x + t * D, x + (t + 1) * D, xs.begin() + r * D);
      for (int64_t n = 0; n < N; ++n)
        dys[r * N + n] = routes[t].weights[j] * dy[t * N + n];
    }
    ffnForward(shape, act, w, xs.data(), f.data());
    FfnGradients fg;
    fg.dx = dxs.data();
    fg.dw1 = g.dw1 ? g.dw1 + e * D * H : nullptr;
    fg.dwUp = g.dwUp && wUp ? g.dwUp + e * D * H : nullptr;
    fg.dw2 = g.dw2 ? g.dw2 + e * H * N : nullptr;
    ffnBackward(shape, act, w, xs.data(), dys.data(), fg);  // (zeroes the expert's weight gradients first)
    for (size_t r = 0; r < rows.size(); ++r) {
      auto [t, j] = rows[r];
      for (int64_t n = 0; n < N; ++n)
        dWeight[t][j] += dy[t * N + n] * f[r * N + n];
      if (g.dx)
        for (int64_t i = 0; i < D; ++i)
          g.dx[t * D + i] += dxs[r * D + i];
    }
  }
  // The routing: d weights -> d scores (renormalisation) -> d logits (softmax / sigmoid) -> router and x.
  for (int64_t t = 0; t < s.tokens; ++t) {
    const MoeRoute &route = routes[t];
    std::vector<double> dScore(E, 0.0), dLogit(E, 0.0);
    double total = 0.0, dot = 0.0;
    for (int64_t j = 0; j < s.topK; ++j) {
      total += route.scores[route.experts[j]];
      dot += dWeight[t][j] * route.weights[j];
    }
    for (int64_t j = 0; j < s.topK; ++j)
      dScore[route.experts[j]] = renormalize ? (dWeight[t][j] - dot) / total : dWeight[t][j];
    if (gating == MoeGating::Softmax) {
      double sum = 0.0;
      for (int64_t e = 0; e < E; ++e)
        sum += route.scores[e] * dScore[e];
      for (int64_t e = 0; e < E; ++e)
        dLogit[e] = route.scores[e] * (dScore[e] - sum);
    } else {
      for (int64_t e = 0; e < E; ++e)
        dLogit[e] = dScore[e] * route.scores[e] * (1.0 - route.scores[e]);
    }
    for (int64_t i = 0; i < D; ++i)
      for (int64_t e = 0; e < E; ++e) {
        if (g.dRouter)
          g.dRouter[i * E + e] += x[t * D + i] * dLogit[e];
        if (g.dx)
          g.dx[t * D + i] += router[i * E + e] * dLogit[e];
      }
  }
}

}  // namespace flashc::reference

#endif  // FLASHC_REFERENCE_MOE_H
