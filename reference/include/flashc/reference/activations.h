//===- activations.h - FFN activations and derivatives, float64 -*- C++ -*-===//
//
// The activations flashc's FFNs apply, by the names the flash and tile
// dialects and the bundle manifest (`meta activation`) use. Each user maps its
// own enum through the name once (parseActivation), then calls these per
// element.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_REFERENCE_ACTIVATIONS_H
#define FLASHC_REFERENCE_ACTIVATIONS_H

#include <cmath>
#include <optional>
#include <string_view>

namespace flashc::reference {

enum class Activation { Identity, GeluTanh, GeluErf, Silu, Relu };

/// "identity", "gelu_tanh", "gelu_erf", "silu", "relu"; nullopt otherwise.
inline std::optional<Activation> parseActivation(std::string_view name) {
  if (name == "identity")
    return Activation::Identity;
  if (name == "gelu_tanh")
    return Activation::GeluTanh;
  if (name == "gelu_erf")
    return Activation::GeluErf;
  if (name == "silu")
    return Activation::Silu;
  if (name == "relu")
    return Activation::Relu;
  return std::nullopt;
}

inline constexpr double kGeluTanhCoefficient = 0.044715;
/// π as M_PI spells it (M_PI itself is not standard C++).
inline constexpr double kPi = 3.14159265358979323846;

/// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
inline double geluTanh(double x) {
  const double k = std::sqrt(2.0 / kPi);
  return 0.5 * x * (1.0 + std::tanh(k * (x + kGeluTanhCoefficient * x * x * x)));
}
/// x·Φ(x) = 0.5·x·(1 + erf(x/√2)).
inline double geluErf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
/// x·σ(x).
inline double silu(double x) { return x / (1.0 + std::exp(-x)); }
inline double relu(double x) { return x > 0.0 ? x : 0.0; }

inline double activation(Activation kind, double x) {
  switch (kind) {
  case Activation::GeluTanh:
    return geluTanh(x);
  case Activation::GeluErf:
    return geluErf(x);
  case Activation::Silu:
    return silu(x);
  case Activation::Relu:
    return relu(x);
  case Activation::Identity:
    return x;
  }
  return x;
}

/// d activation(x) / dx in closed form (relu: 0 at x = 0).
inline double activationDerivative(Activation kind, double x) {
  switch (kind) {
  case Activation::GeluTanh: {
    const double k = std::sqrt(2.0 / kPi);
    double t = std::tanh(k * (x + kGeluTanhCoefficient * x * x * x));
    return 0.5 * (1.0 + t) +
           0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * kGeluTanhCoefficient * x * x);
  }
  case Activation::GeluErf:
    return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) +
           x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * kPi);
  case Activation::Silu: {
    double s = 1.0 / (1.0 + std::exp(-x));
    return s * (1.0 + x * (1.0 - s));
  }
  case Activation::Relu:
    return x > 0.0 ? 1.0 : 0.0;
  case Activation::Identity:
    return 1.0;
  }
  return 1.0;
}

/// d activation(x) / dx by central differences (step 1e-5; relu exact):
/// independent of activationDerivative's formulas, so a checker that uses it
/// also catches a wrong closed form (flash-run-tile's FFN backward does).
inline double activationDerivativeByDifferences(Activation kind, double x) {
  if (kind == Activation::Relu)
    return x > 0.0 ? 1.0 : 0.0;
  const double h = 1e-5;
  return (activation(kind, x + h) - activation(kind, x - h)) / (2 * h);
}

} // namespace flashc::reference

#endif // FLASHC_REFERENCE_ACTIVATIONS_H
