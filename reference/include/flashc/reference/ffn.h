//===- ffn.h - float64 FFN forward and backward -----------------*- C++ -*-===//
//
// The reference meaning of flash.ffn on rows x [R, d] (any leading dims
// flattened into R), float64:
//
//   plain: y = act(x·W1 + b1)·W2 + b2
//   gated: y = (act(x·W1 + b1) ⊙ x·W_up)·W2 + b2
//
// W1, W_up [d, H], W2 [H, N], b1 [H], b2 [N], y [R, N]; every bias optional,
// gated when W_up is given. Dense row-major; the hidden activation is kept in
// float64 (never rounded to the kernel's element type).
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_REFERENCE_FFN_H
#define FLASHC_REFERENCE_FFN_H

#include "flashc/reference/activations.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace flashc::reference {

struct FfnShape {
  int64_t rows = 0, model = 0, hidden = 0, out = 0; // R, d, H, N
};

/// The FFN's parameters; null b1 / wUp / b2 mean "absent".
struct FfnWeights {
  const double *w1 = nullptr, *b1 = nullptr, *wUp = nullptr, *w2 = nullptr, *b2 = nullptr;
};

/// Gradient outputs, each of its parameter's shape; null ones are not computed.
struct FfnGradients {
  double *dx = nullptr, *dw1 = nullptr, *db1 = nullptr, *dwUp = nullptr, *dw2 = nullptr,
         *db2 = nullptr;
};

namespace detail {
/// Pre-activation a = x_r·W1 + b1 and up-projection u = x_r·W_up (1 when not
/// gated) of one row; sums run over d in order, the bias added last.
inline void ffnHiddenRow(const FfnShape &s, const FfnWeights &w, const double *x, double *a,
                         double *u) {
  std::fill(a, a + s.hidden, 0.0);
  std::fill(u, u + s.hidden, w.wUp ? 0.0 : 1.0);
  for (int64_t i = 0; i < s.model; ++i)
    for (int64_t j = 0; j < s.hidden; ++j) {
      a[j] += x[i] * w.w1[i * s.hidden + j];
      if (w.wUp)
        u[j] += x[i] * w.wUp[i * s.hidden + j];
    }
  if (w.b1)
    for (int64_t j = 0; j < s.hidden; ++j)
      a[j] += w.b1[j];
}
} // namespace detail

/// Forward: writes y [R, N].
inline void ffnForward(const FfnShape &s, Activation act, const FfnWeights &w, const double *x,
                       double *y) {
  std::vector<double> a(s.hidden), u(s.hidden);
  for (int64_t r = 0; r < s.rows; ++r) {
    detail::ffnHiddenRow(s, w, &x[r * s.model], a.data(), u.data());
    double *yRow = &y[r * s.out];
    std::fill(yRow, yRow + s.out, 0.0);
    for (int64_t j = 0; j < s.hidden; ++j) {
      double hidden = activation(act, a[j]) * u[j];
      for (int64_t n = 0; n < s.out; ++n)
        yRow[n] += hidden * w.w2[j * s.out + n];
    }
    if (w.b2)
      for (int64_t n = 0; n < s.out; ++n)
        yRow[n] += w.b2[n];
  }
}

/// Backward for output gradient dy [R, N]. `derivative` is act' (closed form
/// by default; flash-run-tile passes activationDerivativeByDifferences).
inline void ffnBackward(const FfnShape &s, Activation act, const FfnWeights &w, const double *x,
                        const double *dy, const FfnGradients &g,
                        double (*derivative)(Activation, double) = activationDerivative) {
  const int64_t D = s.model, H = s.hidden, N = s.out;
  auto zero = [](double *p, int64_t n) {
    if (p)
      std::fill(p, p + n, 0.0);
  };
  zero(g.dx, s.rows * D), zero(g.dw1, D * H), zero(g.db1, H), zero(g.dwUp, D * H);
  zero(g.dw2, H * N), zero(g.db2, N);
  std::vector<double> a(H), u(H), da(H), du(H);
  for (int64_t r = 0; r < s.rows; ++r) {
    const double *xRow = &x[r * D], *dyRow = &dy[r * N];
    detail::ffnHiddenRow(s, w, xRow, a.data(), u.data());
    for (int64_t j = 0; j < H; ++j) {
      double dHidden = 0.0;
      for (int64_t n = 0; n < N; ++n)
        dHidden += dyRow[n] * w.w2[j * N + n];
      double activated = activation(act, a[j]);
      da[j] = dHidden * u[j] * derivative(act, a[j]);
      du[j] = w.wUp ? dHidden * activated : 0.0;
      if (g.db1)
        g.db1[j] += da[j];
      if (g.dw2)
        for (int64_t n = 0; n < N; ++n)
          g.dw2[j * N + n] += activated * u[j] * dyRow[n];
    }
    if (g.db2)
      for (int64_t n = 0; n < N; ++n)
        g.db2[n] += dyRow[n];
    for (int64_t i = 0; i < D; ++i) {
      double dxi = 0.0;
      for (int64_t j = 0; j < H; ++j) {
        dxi += da[j] * w.w1[i * H + j];
        if (w.wUp)
          dxi += du[j] * w.wUp[i * H + j];
        if (g.dw1)
          g.dw1[i * H + j] += xRow[i] * da[j];
        if (g.dwUp)
          g.dwUp[i * H + j] += xRow[i] * du[j];
      }
      if (g.dx)
        g.dx[r * D + i] = dxi;
    }
  }
}

} // namespace flashc::reference

#endif // FLASHC_REFERENCE_FFN_H
