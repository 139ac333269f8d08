// Unit test of the reference library (reference/include/flashc/reference):
// the codec against an independent nearest-value search and hand-picked ties,
// NaN, infinities and subnormals; activations at known points and against
// central differences; attention and FFN forwards against direct formulas and
// their backwards against finite differences of the forwards; the mixture of
// experts' routing (ties, an expert with no token) and forward against a
// hand-worked case. CPU only.
#include "flashc/reference/activations.h"
#include "flashc/reference/attention.h"
#include "flashc/reference/codec.h"
#include "flashc/reference/ffn.h"
#include "flashc/reference/index_program.h"
#include "flashc/reference/moe.h"
#include "flashc/reference/score_program.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace flashc::reference;

namespace {

int checks = 0, failures = 0;

bool check(bool ok, const std::string &what, const std::string &detail = "") {
  ++checks;
  if (!ok) {
    ++failures;
    std::printf("FAIL %s%s%s\n", what.c_str(), detail.empty() ? "" : ": ", detail.c_str());
  }
  return ok;
}

std::string hex(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", v);
  return text;
}

bool near(double got, double want, double tolerance, const std::string &what) {
  double error = std::fabs(got - want) / std::max(1.0, std::fabs(want));
  return check(error <= tolerance, what,
               "got " + std::to_string(got) + ", want " + std::to_string(want));
}

/// max |a - b| / max(1, max |b|) over two equal-size vectors.
double relativeError(const std::vector<double> &a, const std::vector<double> &b) {
  double diff = 0.0, scale = 1.0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return diff / scale;
}

std::vector<double> randomVector(size_t n, std::mt19937 &rng, double scale = 1.0) {
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(rng);
  return v;
}

//===----------------------------------------------------------------------===//
// codec
//===----------------------------------------------------------------------===//

/// Independent oracle: the nearest of all finite values of a 16-bit format
/// (ties to the even encoding), found by search; beyond max + half an ulp, inf.
struct NearestOracle {
  std::vector<std::pair<double, uint16_t>> finite; // ascending, +0 only
  double overflow;                                 // first magnitude that rounds to inf

  NearestOracle(float (*decode)(uint16_t), double maxHalfUlp) {
    for (uint32_t b = 0; b < 0x8000u; ++b) {
      double v = decode(uint16_t(b));
      if (std::isfinite(v)) {
        finite.push_back({v, uint16_t(b)});
        finite.push_back({-v, uint16_t(b | 0x8000u)});
      }
    }
    std::sort(finite.begin(), finite.end());
    overflow = finite.back().first + maxHalfUlp;
  }
  /// Expected encoding of a finite nonzero float.
  uint16_t encode(float x) const {
    double v = x;
    uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    if (std::fabs(v) >= overflow)
      return sign | 0; // caller adds the inf pattern
    auto hi = std::lower_bound(finite.begin(), finite.end(), std::make_pair(v, uint16_t(0)));
    if (hi != finite.end() && hi->first == v)
      return v == 0.0 ? sign : hi->second;
    if (hi == finite.begin() || hi == finite.end()) // beyond ±max, short of overflow
      return hi == finite.end() ? (hi - 1)->second : hi->second;
    auto lo = hi - 1;
    double dl = v - lo->first, dh = hi->first - v;
    uint16_t pick = dl < dh ? lo->second : dh < dl ? hi->second
                                        : ((lo->second & 1u) ? hi->second : lo->second);
    // A result of zero keeps the sign of x.
    return (pick & 0x7fffu) == 0 ? sign : pick;
  }
};

void testCodec() {
  // Every bit pattern decodes and re-encodes to itself (NaNs to a NaN).
  for (uint32_t b = 0; b <= 0xffffu; ++b) {
    float bf = bf16ToFloat(uint16_t(b)), h = f16ToFloat(uint16_t(b));
    if (std::isnan(bf))
      check(std::isnan(bf16ToFloat(bf16FromFloat(bf))), "bf16 NaN round trip " + hex(b));
    else if (bf16FromFloat(bf) != b)
      check(false, "bf16 round trip " + hex(b), hex(bf16FromFloat(bf)));
    if (std::isnan(h))
      check(std::isnan(f16ToFloat(f16FromFloat(h))), "f16 NaN round trip " + hex(b));
    else if (f16FromFloat(h) != b)
      check(false, "f16 round trip " + hex(b), hex(f16FromFloat(h)));
  }
  check(true, "bf16/f16 round trips of all 65536 patterns");

  // Specific values: ties to even, overflow, subnormals, signed zero, inf, NaN.
  struct Case {
    float value;
    uint16_t bf16, f16;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const Case cases[] = {
      {1.0f, 0x3f80, 0x3c00},
      {-2.0f, 0xc000, 0xc000},
      {0.0f, 0x0000, 0x0000},
      {-0.0f, 0x8000, 0x8000},
      {inf, 0x7f80, 0x7c00},
      {-inf, 0xff80, 0xfc00},
      {1.0f + 0x1p-8f, 0x3f80, 0x3c04},         // bf16 tie between 1 and 1+2^-7: even (1)
      {1.0f + 3 * 0x1p-8f, 0x3f82, 0x3c0c},     // bf16 tie: even is 1+2^-6
      {1.0f + 0x1p-11f, 0x3f80, 0x3c00},        // f16 tie between 1 and 1+2^-10: even (1)
      {1.0f + 3 * 0x1p-11f, 0x3f80, 0x3c02},    // f16 tie: even is 1+2^-9
      {1.0f + 0x1p-11f + 0x1p-20f, 0x3f80, 0x3c01}, // just above the f16 tie: up
      {65504.0f, 0x4780, 0x7bff},               // largest f16
      {65519.0f, 0x4780, 0x7bff},               // below max + half ulp: max
      {65520.0f, 0x4780, 0x7c00},               // max + half ulp: tie to even = inf
      {0x1p-24f, 0x3380, 0x0001},               // smallest f16 subnormal
      {0x1p-25f, 0x3300, 0x0000},               // half of it: tie to even (0)
      {0x1.8p-25f, 0x3340, 0x0001},             // 0.75 of it: up
      {0x1.8p-24f, 0x33c0, 0x0002},             // 1.5 subnormal ulps: tie to even (2)
      {0x1p-14f, 0x3880, 0x0400},               // smallest f16 normal
      {0x1.ffcp-15f, 0x3880, 0x0400},           // 1023.5 subnormal ulps: up to the smallest normal
      {std::numeric_limits<float>::max(), 0x7f80, 0x7c00}, // overflows both
      {std::numeric_limits<float>::denorm_min(), 0x0000, 0x0000},
      {0x1p-133f, 0x0001, 0x0000},              // a bf16 subnormal
  };
  for (const Case &c : cases) {
    char what[64];
    std::snprintf(what, sizeof what, "%a", double(c.value));
    check(bf16FromFloat(c.value) == c.bf16, std::string("bf16 of ") + what,
          hex(bf16FromFloat(c.value)) + " != " + hex(c.bf16));
    check(f16FromFloat(c.value) == c.f16, std::string("f16 of ") + what,
          hex(f16FromFloat(c.value)) + " != " + hex(c.f16));
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  check(bf16FromFloat(nan) == 0x7fc0 && bf16FromFloat(-nan) == 0x7fc0, "bf16 NaN is 0x7fc0");
  check((f16FromFloat(nan) & 0x7fffu) == 0x7e00 && (f16FromFloat(-nan) & 0x8000u),
        "f16 NaN is a quiet NaN with its sign");
  check(std::isnan(bf16ToFloat(0x7f81)) && std::isnan(f16ToFloat(0x7c01)), "NaN patterns decode to NaN");
  // Rounding through float keeps a NaN as it is (the tile executor relies on it).
  float payload = floatFromBits(0x7fc01234u);
  check(floatBits(roundToBf16(payload)) == 0x7fc01234u && floatBits(roundToF16(payload)) == 0x7fc01234u,
        "roundTo* leave a NaN untouched");
  check(roundToF16(0.1f) == f16ToFloat(f16FromFloat(0.1f)) && roundToBf16(0.1f) == bf16ToFloat(0x3dcd),
        "roundTo* of 0.1");

  // Against the nearest-value oracle on a spread of float bit patterns.
  NearestOracle bf16Oracle(bf16ToFloat, 0x1p119), f16Oracle(f16ToFloat, 16.0);
  int bad = 0;
  for (uint64_t b = 0; b <= 0xffffffffull && bad < 5; b += 4093) {
    float x = floatFromBits(uint32_t(b));
    if (!std::isfinite(x) || x == 0.0f)
      continue;
    uint16_t wantBf = bf16Oracle.encode(x), wantH = f16Oracle.encode(x);
    uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    if (std::fabs(double(x)) >= bf16Oracle.overflow)
      wantBf = sign | 0x7f80;
    if (std::fabs(double(x)) >= f16Oracle.overflow)
      wantH = sign | 0x7c00;
    if (bf16FromFloat(x) != wantBf && !check(false, "bf16 oracle " + hex(uint32_t(b)),
                                             hex(bf16FromFloat(x)) + " != " + hex(wantBf)))
      ++bad;
    if (f16FromFloat(x) != wantH && !check(false, "f16 oracle " + hex(uint32_t(b)),
                                           hex(f16FromFloat(x)) + " != " + hex(wantH)))
      ++bad;
  }
  check(bad == 0, "codec agrees with the nearest-value oracle on ~1M floats");
}

//===----------------------------------------------------------------------===//
// activations
//===----------------------------------------------------------------------===//

void testActivations() {
  check(parseActivation("gelu_tanh") == Activation::GeluTanh &&
            parseActivation("gelu_erf") == Activation::GeluErf &&
            parseActivation("silu") == Activation::Silu && parseActivation("relu") == Activation::Relu &&
            parseActivation("identity") == Activation::Identity && !parseActivation("gelu"),
        "parseActivation names");
  // Known values (closed forms evaluated independently).
  near(geluTanh(1.0), 0.8411919906082768, 1e-15, "gelu_tanh(1)");
  near(geluErf(1.0), 0.8413447460685429, 1e-15, "gelu_erf(1)");
  near(silu(1.0), 0.7310585786300049, 1e-15, "silu(1)");
  check(geluTanh(0.0) == 0.0 && geluErf(0.0) == 0.0 && silu(0.0) == 0.0, "activations at 0");
  check(relu(-2.0) == 0.0 && relu(3.0) == 3.0 && activation(Activation::Identity, -1.5) == -1.5,
        "relu and identity");
  near(activationDerivative(Activation::GeluTanh, 0.0), 0.5, 1e-15, "gelu_tanh'(0)");
  near(activationDerivative(Activation::GeluErf, 0.0), 0.5, 1e-15, "gelu_erf'(0)");
  near(activationDerivative(Activation::Silu, 0.0), 0.5, 1e-15, "silu'(0)");
  for (double x : {-4.0, -1.3, -0.2, 0.4, 1.0, 2.7, 6.0}) {
    // gelu_erf(x) = x Φ(x) through erfc; silu through the logistic.
    near(geluErf(x), 0.5 * x * std::erfc(-x / std::sqrt(2.0)), 1e-14, "gelu_erf vs erfc");
    near(silu(x), x * (0.5 + 0.5 * std::tanh(0.5 * x)), 1e-14, "silu vs tanh form");
    for (Activation kind : {Activation::GeluTanh, Activation::GeluErf, Activation::Silu,
                            Activation::Relu, Activation::Identity})
      near(activationDerivative(kind, x), activationDerivativeByDifferences(kind, x), 1e-8,
           "closed-form derivative vs central differences at " + std::to_string(x));
  }
}

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

/// Direct formula: the full score matrix of one (b, h), the mask written as
/// conditions on j - i (not through AttentionWindow), softmax without a max.
void naiveAttention(const AttentionShape &s, double scale, double softcap, bool causal,
                    int64_t left, int64_t right, const std::vector<double> &q,
                    const std::vector<double> &k, const std::vector<double> &v,
                    std::vector<double> &out, std::vector<double> &lse) {
  out.assign(s.batch * s.queryHeads * s.querySeq * s.valueDim, 0.0);
  lse.assign(s.batch * s.queryHeads * s.querySeq, 0.0);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.queryHeads; ++h) {
      int64_t hk = h * s.kvHeads / s.queryHeads; // GQA: consecutive query heads share
      for (int64_t i = 0; i < s.querySeq; ++i) {
        std::vector<double> e(s.keySeq, 0.0);
        double total = 0.0;
        for (int64_t j = 0; j < s.keySeq; ++j) {
          int64_t offset = j - i - (s.keySeq - s.querySeq); // key relative to the query's position
          bool visible = causal ? offset <= 0
                                : (left < 0 || offset >= -left) && (right < 0 || offset <= right);
          if (!visible)
            continue;
          double dot = 0.0;
          for (int64_t d = 0; d < s.headDim; ++d)
            dot += q[((b * s.queryHeads + h) * s.querySeq + i) * s.headDim + d] *
                   k[((b * s.kvHeads + hk) * s.keySeq + j) * s.headDim + d];
          double score = scale * dot;
          if (softcap > 0)
            score = softcap * std::tanh(score / softcap);
          total += (e[j] = std::exp(score));
        }
        int64_t row = (b * s.queryHeads + h) * s.querySeq + i;
        lse[row] = total > 0 ? std::log(total) : -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < s.keySeq && total > 0; ++j)
          for (int64_t d = 0; d < s.valueDim; ++d)
            out[row * s.valueDim + d] +=
                e[j] / total * v[((b * s.kvHeads + hk) * s.keySeq + j) * s.valueDim + d];
      }
    }
}

/// d(Σ out·dO)/d(input) by central differences of attentionForward.
std::vector<double> numericGradient(const std::function<double()> &loss, std::vector<double> &input) {
  std::vector<double> grad(input.size());
  const double h = 1e-6;
  for (size_t i = 0; i < input.size(); ++i) {
    double saved = input[i];
    input[i] = saved + h;
    double up = loss();
    input[i] = saved - h;
    double down = loss();
    input[i] = saved;
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

void testAttentionCase(const std::string &name, AttentionShape s, double scale, double softcap,
                       bool causal, int64_t left, int64_t right, std::mt19937 &rng) {
  std::vector<double> q = randomVector(s.batch * s.queryHeads * s.querySeq * s.headDim, rng),
                      k = randomVector(s.batch * s.kvHeads * s.keySeq * s.headDim, rng),
                      v = randomVector(s.batch * s.kvHeads * s.keySeq * s.valueDim, rng),
                      dO = randomVector(s.batch * s.queryHeads * s.querySeq * s.valueDim, rng);
  AttentionParams params;
  params.scale = scale;
  params.softcap = softcap;
  params.window = causal ? AttentionWindow::causal() : AttentionWindow{left, right};
  std::vector<double> out(dO.size()), lse(s.batch * s.queryHeads * s.querySeq), wantOut, wantLse;
  attentionForward(s, params, q.data(), k.data(), v.data(), out.data(), lse.data());
  naiveAttention(s, scale, softcap, causal, left, right, q, k, v, wantOut, wantLse);
  check(relativeError(out, wantOut) < 1e-13, name + ": out vs direct formula",
        std::to_string(relativeError(out, wantOut)));
  bool lseOk = true;
  for (size_t i = 0; i < lse.size(); ++i)
    lseOk &= std::isinf(wantLse[i]) ? lse[i] == wantLse[i] : std::fabs(lse[i] - wantLse[i]) < 1e-12;
  check(lseOk, name + ": lse vs direct formula (-inf for rows that see no key)");

  std::vector<double> dq(q.size()), dk(k.size()), dv(v.size());
  attentionBackward(s, params, q.data(), k.data(), v.data(), dO.data(), dq.data(), dk.data(),
                    dv.data());
  auto loss = [&] {
    std::vector<double> o(dO.size());
    attentionForward(s, params, q.data(), k.data(), v.data(), o.data(), nullptr);
    double sum = 0.0;
    for (size_t i = 0; i < o.size(); ++i)
      sum += o[i] * dO[i];
    return sum;
  };
  check(relativeError(dq, numericGradient(loss, q)) < 1e-7, name + ": dq vs finite differences");
  check(relativeError(dk, numericGradient(loss, k)) < 1e-7, name + ": dk vs finite differences");
  check(relativeError(dv, numericGradient(loss, v)) < 1e-7, name + ": dv vs finite differences");
}

void testAttention() {
  std::mt19937 rng(7);
  // {B, Hq, Hkv, Sq, Sk, D, Dv}
  testAttentionCase("plain", {1, 1, 1, 4, 4, 3, 3}, 0.5, 0.0, false, -1, -1, rng);
  testAttentionCase("causal ragged Sq<Sk", {1, 2, 2, 3, 5, 4, 2}, 0.7, 0.0, true, 0, 0, rng);
  testAttentionCase("causal Sq>Sk (empty rows)", {1, 1, 1, 5, 3, 2, 3}, 1.0, 0.0, true, 0, 0, rng);
  testAttentionCase("window 2/1", {2, 1, 1, 6, 6, 3, 3}, 0.6, 0.0, false, 2, 1, rng);
  testAttentionCase("window left only", {1, 1, 1, 4, 7, 2, 2}, 0.6, 0.0, false, 1, -1, rng);
  testAttentionCase("softcap", {1, 1, 1, 4, 5, 3, 3}, 1.3, 2.0, false, -1, -1, rng);
  testAttentionCase("GQA 4/2 causal softcap", {2, 4, 2, 3, 4, 3, 2}, 0.8, 3.0, true, 0, 0, rng);
  // The window rule itself, at the boundary, with Sq ≠ Sk.
  AttentionWindow w{1, 0};
  check(w.isKeyVisible(0, 2, 2, 4) && w.isKeyVisible(0, 1, 2, 4) && !w.isKeyVisible(0, 0, 2, 4) &&
            !w.isKeyVisible(0, 3, 2, 4),
        "window {1, 0}: query 0 of 2 sees keys 1..2 of 4");
}

//===----------------------------------------------------------------------===//
// FFN
//===----------------------------------------------------------------------===//

void testFfnCase(const std::string &name, Activation act, bool gated, bool biases,
                 std::mt19937 &rng) {
  FfnShape s{3, 4, 5, 2};
  std::vector<double> x = randomVector(s.rows * s.model, rng), w1 = randomVector(s.model * s.hidden, rng),
                      wUp = randomVector(s.model * s.hidden, rng),
                      w2 = randomVector(s.hidden * s.out, rng), b1 = randomVector(s.hidden, rng),
                      b2 = randomVector(s.out, rng), dy = randomVector(s.rows * s.out, rng);
  auto weights = [&] {
    FfnWeights w;
    w.w1 = w1.data(), w.w2 = w2.data();
    w.wUp = gated ? wUp.data() : nullptr;
    w.b1 = biases ? b1.data() : nullptr, w.b2 = biases ? b2.data() : nullptr;
    return w;
  };
  std::vector<double> y(s.rows * s.out), want(s.rows * s.out, 0.0);
  ffnForward(s, act, weights(), x.data(), y.data());
  // Direct formula, element by element.
  for (int64_t r = 0; r < s.rows; ++r)
    for (int64_t n = 0; n < s.out; ++n) {
      double sum = biases ? b2[n] : 0.0;
      for (int64_t j = 0; j < s.hidden; ++j) {
        double pre = biases ? b1[j] : 0.0, up = 0.0;
        for (int64_t i = 0; i < s.model; ++i) {
          pre += x[r * s.model + i] * w1[i * s.hidden + j];
          up += x[r * s.model + i] * wUp[i * s.hidden + j];
        }
        sum += activation(act, pre) * (gated ? up : 1.0) * w2[j * s.out + n];
      }
      want[r * s.out + n] = sum;
    }
  check(relativeError(y, want) < 1e-13, name + ": y vs direct formula");

  std::vector<double> dx(x.size()), dw1(w1.size()), dwUp(wUp.size()), dw2(w2.size()),
      db1(b1.size()), db2(b2.size());
  FfnGradients g{dx.data(), dw1.data(), biases ? db1.data() : nullptr, gated ? dwUp.data() : nullptr,
                 dw2.data(), biases ? db2.data() : nullptr};
  ffnBackward(s, act, weights(), x.data(), dy.data(), g);
  auto loss = [&] {
    std::vector<double> out(dy.size());
    ffnForward(s, act, weights(), x.data(), out.data());
    double sum = 0.0;
    for (size_t i = 0; i < out.size(); ++i)
      sum += out[i] * dy[i];
    return sum;
  };
  const double tol = act == Activation::Relu ? 1e-6 : 1e-7;
  check(relativeError(dx, numericGradient(loss, x)) < tol, name + ": dx vs finite differences");
  check(relativeError(dw1, numericGradient(loss, w1)) < tol, name + ": dw1 vs finite differences");
  check(relativeError(dw2, numericGradient(loss, w2)) < tol, name + ": dw2 vs finite differences");
  if (gated)
    check(relativeError(dwUp, numericGradient(loss, wUp)) < tol, name + ": dw_up vs finite differences");
  if (biases) {
    check(relativeError(db1, numericGradient(loss, b1)) < tol, name + ": db1 vs finite differences");
    check(relativeError(db2, numericGradient(loss, b2)) < tol, name + ": db2 vs finite differences");
  }
  // The central-difference derivative (flash-run-tile's) gives the same gradients.
  std::vector<double> dxByDifferences(x.size());
  FfnGradients only{dxByDifferences.data()};
  ffnBackward(s, act, weights(), x.data(), dy.data(), only, activationDerivativeByDifferences);
  check(relativeError(dxByDifferences, dx) < 1e-8, name + ": dx with the difference derivative");
}

void testFfn() {
  std::mt19937 rng(11);
  testFfnCase("gelu_tanh biases", Activation::GeluTanh, false, true, rng);
  testFfnCase("gelu_erf", Activation::GeluErf, false, false, rng);
  testFfnCase("silu gated", Activation::Silu, true, false, rng);
  testFfnCase("gelu_tanh gated biases", Activation::GeluTanh, true, true, rng);
  testFfnCase("relu biases", Activation::Relu, false, true, rng);
  testFfnCase("identity", Activation::Identity, false, false, rng);
}

} // namespace

// Index programs (mask modifiers' text form): the ops' rules, both separators, and every malformed text refused.
void testIndexProgram() {
  auto prefix = IndexProgram::parse("v0 = lt k 20; v1 = le k q; v2 = or v0 v1; yield v2");
  check(prefix.has_value(), "prefix-LM program parses");
  if (prefix) {
    bool ok = true;
    for (int q = 0; q < 50; ++q)
      for (int k = 0; k < 50; ++k) ok = ok && prefix->visible(q, k) == (k < 20 || k <= q);
    check(ok, "prefix-LM: visible iff k < 20 or k <= q");
  }
  auto manifestForm = IndexProgram::parse("v0,=,floordiv,q,24;v1,=,floordiv,k,24;v2,=,eq,v0,v1;yield,v2");
  check(manifestForm && manifestForm->visible(30, 47) && !manifestForm->visible(23, 24),
        "the manifest's comma form: chunks of 24");
  auto rules = [](const std::string &op, int64_t a, int64_t b) {
    auto p = IndexProgram::parse("v0 = " + op + " q k; v1 = eq v0 0; yield v1");
    return p && p->visible(a, b);
  };
  check(rules("div", 7, 0) && rules("rem", 7, 0) && rules("floordiv", 7, 0) && rules("ceildiv", 7, 0),
        "division and remainder by 0 give 0");
  auto equals = [](const std::string &op, int64_t a, int64_t b, int64_t want) {
    auto p = IndexProgram::parse("v0 = " + op + " q k; v1 = eq v0 " + std::to_string(want) + "; yield v1");
    return p && p->visible(a, b);
  };
  check(equals("div", -7, 2, -3) && equals("floordiv", -7, 2, -4) && equals("ceildiv", -7, 2, -3) &&
            equals("rem", -7, 2, -1) && equals("ceildiv", 7, 2, 4) && equals("min", -3, 5, -3) &&
            equals("max", -3, 5, 5) && equals("sub", 3, 5, -2) && equals("mul", -3, 5, -15),
        "div and rem truncate, floordiv floors, ceildiv ceils, min / max / sub / mul");
  auto sel = IndexProgram::parse("v0 = lt q 10; v1 = le k q; v2 = gt k q; v3 = select v0 v1 v2; v4 = xor v3 false; "
                                 "v5 = and v4 true; yield v5");
  check(sel && sel->visible(3, 2) && !sel->visible(3, 4) && sel->visible(20, 21) && !sel->visible(20, 19),
        "select, xor, and with constants");
  for (const char *bad : {"", "v0 = lt k q", "v0 = frob k q; yield v0", "v0 = lt k; yield v0", "yield v9",
                          "v0 = lt k q; v0 = lt q k; yield v0", "v0 = lt k q; yield v0; yield v0", "v0 lt k q; yield v0",
                          "true = lt k q; yield true", "5 = lt k q; yield 5", "q = lt k q; yield q",
                          "v0 = lt k 12x; yield v0"}) {
    std::string error;
    check(!IndexProgram::parse(bad, &error) && !error.empty(), std::string("refused: '") + bad + "'", error);
  }
  // The reference attention takes the modifier: a key it hides gets no weight.
  AttentionShape s{1, 1, 1, 3, 3, 2, 2};
  std::vector<double> q = {1, 0, 0, 1, 1, 1}, k = {1, 0, 0, 1, 1, 1}, v = {1, 2, 3, 4, 5, 6}, o(6), lse(3);
  AttentionParams params;
  params.maskMod = [](int64_t, int64_t, int64_t i, int64_t j) { return j == 0 || j == i; };
  attentionForward(s, params, q.data(), k.data(), v.data(), o.data(), lse.data());
  check(std::fabs(o[0] - 1) < 1e-12 && std::fabs(o[1] - 2) < 1e-12, "query 0 sees key 0 only");
  check(o[2] > 1 && o[2] < 3 && std::fabs(o[2] + o[3] - (o[2] + o[3])) < 1e-12, "query 1 sees keys 0 and 1");
}

void testScoreProgram() {
  // ALiBi as the compiler's printer writes it (%a floats, the manifest's comma form) and as Python's (float.hex).
  auto alibi = ScoreProgram::parse("v0,=,read,t0,h;v1,=,sub,k,q;v2,=,itof,v1;v3,=,mulf,v0,v2;v4,=,addf,s,v3;yield,v4",
                                   {true});
  check(alibi.has_value(), "ALiBi program parses");
  if (alibi) {
    std::vector<double> slopes = {0.5, -0.25};
    auto read = [&](int, const std::vector<int64_t> &p) { return p[0] >= 0 && p[0] < 2 ? slopes[size_t(p[0])] : 0.0; };
    check(std::fabs(alibi->evaluate(1.0, 0, 1, 7, 3, read) - (1.0 - 0.25 * (3 - 7))) < 1e-12, "ALiBi: s + slope[h] (k - q)");
    check(std::fabs(alibi->evaluate(1.0, 0, 5, 7, 3, read) - 1.0) < 1e-12, "a read outside the slopes gives 0");
  }
  auto hex = ScoreProgram::parse("v0 = divf s f:0x1.e000000000000p+4; v1 = tanh v0; v2 = mulf v1 f:0x1.ep+4; yield v2 | f32");
  check(hex && std::fabs(hex->evaluate(45.0, 0, 0, 0, 0) - 30.0 * std::tanh(1.5)) < 1e-9, "a tanh cap of 30");
  auto branch = ScoreProgram::parse("v0 = gtf s f:0.5; v1 = minf s f:1; v2 = negf s; v3 = select v0 v1 v2; "
                                    "v4 = eq k q; v5 = select v4 f:-inf v3; yield v5");
  check(branch && branch->evaluate(2.0, 0, 0, 1, 2) == 1.0 && branch->evaluate(0.25, 0, 0, 1, 2) == -0.25 &&
            std::isinf(branch->evaluate(0.25, 0, 0, 3, 3)),
        "float compare, select of floats, min, neg and an -inf constant");
  auto ids = ScoreProgram::parse("v0 = read t0 q; v1 = read t0 k; v2 = sub v0 v1; v3 = itof v2; v4 = addf s v3; "
                                 "yield v4", {false});
  auto idRead = [](int, const std::vector<int64_t> &p) { return double(p[0] / 10); };
  check(ids && ids->evaluate(0.0, 0, 0, 35, 12, idRead) == 2.0, "an i32 tensor's reads are indices");
  auto nan = ScoreProgram::parse("v0 = log s; v1 = maxf v0 f:-4; v2 = minf v0 f:4; v3 = addf v1 v2; yield v3");
  check(nan && std::isnan(nan->evaluate(-1.0, 0, 0, 0, 0)) && nan->evaluate(1.0, 0, 0, 0, 0) == 0.0 && nan->evaluate(std::exp(-10.0), 0, 0, 0, 0) == -4.0 - 10.0,
        "maxf / minf keep a NaN (as arith.maximumf), and clamp otherwise");
  for (const char *bad : {"", "v0 = addf s; yield v0", "v0 = sinf s; yield v0", "v0 = lt k q; yield v0",
                          "v0 = addf s f:zz; yield v0", "yield v1", "v0 = read t-1 h; v1 = itof v0; yield v1",
                          "v0 = read tx h; v1 = itof v0; yield v1"}) {
    std::string error;
    check(!ScoreProgram::parse(bad, {}, &error) && !error.empty(), std::string("refused: '") + bad + "'", error);
  }
  // The reference attention takes the modifier: its derivative scales dS (a constant shift changes nothing, a
  // doubling is the scale doubled).
  AttentionShape s{1, 1, 1, 3, 3, 2, 2};
  std::vector<double> q = {1, 0, 0, 1, 1, 1}, k = {1, 0, 0, 1, 1, 1}, v = {1, 2, 3, 4, 5, 6}, o1(6), o2(6), lse(3);
  AttentionParams doubled;
  doubled.scoreMod = [](double x, int64_t, int64_t, int64_t, int64_t) { return std::make_pair(2 * x, 2.0); };
  AttentionParams scaled;
  scaled.scale = 2.0;
  attentionForward(s, doubled, q.data(), k.data(), v.data(), o1.data(), lse.data());
  attentionForward(s, scaled, q.data(), k.data(), v.data(), o2.data(), lse.data());
  bool same = true;
  for (size_t i = 0; i < o1.size(); ++i) same = same && std::fabs(o1[i] - o2[i]) < 1e-12;
  std::vector<double> dO = {1, -1, 0.5, 2, -1, 1}, g1(6), k1(6), v1(6), g2(6), k2(6), v2(6);
  attentionBackward(s, doubled, q.data(), k.data(), v.data(), dO.data(), g1.data(), k1.data(), v1.data());
  attentionBackward(s, scaled, q.data(), k.data(), v.data(), dO.data(), g2.data(), k2.data(), v2.data());
  for (size_t i = 0; i < g1.size(); ++i) same = same && std::fabs(g1[i] - g2[i]) < 1e-12 && std::fabs(k1[i] - k2[i]) < 1e-12;
  check(same, "a modifier 2 s is the scale doubled, forward and backward");
}

// flash.moe's routing and forward on a case worked by hand: d = 2, E = 4, top 2, one-hot-like tokens.
void testMoe() {
  MoeShape s{3, 2, 1, 1, 4, 2};  // T, d, h, N, E, k: one hidden unit, one output
  // router [d, E]: token (1, 0) scores (2, 2, 0, -1) (a tie between experts 0 and 1), token (0, 1) scores
  // (0, 1, 3, 1) (a tie between experts 1 and 3 for the second place), token (0, 0) all 0 (a four-way tie).
  const double router[] = {2, 2, 0, -1, 0, 1, 3, 1};
  // Expert e: w1 [d, 1] = (e + 1, 0), w2 [1, 1] = 1: with relu, FFN_e(x) = (e + 1) · max(x_0, 0).
  const double w1[] = {1, 0, 2, 0, 3, 0, 4, 0}, w2[] = {1, 1, 1, 1};
  const double x[] = {1, 0, 0, 1, 0, 0};
  double y[3] = {0, 0, 0};
  std::vector<MoeRoute> routes;
  moeForward(s, Activation::Relu, MoeGating::Softmax, /*renormalize=*/true, router, w1, nullptr, w2, x, y, &routes);
  check(routes[0].experts == std::vector<int64_t>{0, 1}, "moe: a tie goes to the lower expert (token 0: 0, 1)");
  check(routes[1].experts == std::vector<int64_t>{2, 1}, "moe: second place tie to the lower expert (token 1: 2, 1)");
  check(routes[2].experts == std::vector<int64_t>{0, 1}, "moe: a four-way tie (token 2: 0, 1)");
  // Token 0: equal scores, renormalized to 1/2 each: y = (1 + 2) / 2 = 1.5. Token 1: x_0 = 0, so 0. Token 2: 0.
  check(std::fabs(routes[0].weights[0] - 0.5) < 1e-15 && std::fabs(y[0] - 1.5) < 1e-15, "moe: token 0's output",
        std::to_string(y[0]));
  check(y[1] == 0.0 && y[2] == 0.0, "moe: tokens 1 and 2 (x_0 = 0)");
  // Expert 3 receives no token: its weights do not matter.
  double w1b[] = {1, 0, 2, 0, 3, 0, 99, 0}, yb[3];
  moeForward(s, Activation::Relu, MoeGating::Softmax, true, router, w1b, nullptr, w2, x, yb, nullptr);
  check(yb[0] == y[0] && yb[1] == y[1] && yb[2] == y[2], "moe: an expert with no token changes nothing");
  // Without renormalizing, softmax weights of token 0: e^2 / (2e^2 + 1 + e^-1) each.
  double w0 = std::exp(2.0) / (2 * std::exp(2.0) + 1 + std::exp(-1.0));
  moeForward(s, Activation::Relu, MoeGating::Softmax, false, router, w1, nullptr, w2, x, y, &routes);
  check(std::fabs(y[0] - 3 * w0) < 1e-12, "moe: softmax weights without renormalizing", std::to_string(y[0]));
  // Sigmoid gating: token 0's weights sigmoid(2) each (renormalized: 1/2).
  moeForward(s, Activation::Relu, MoeGating::Sigmoid, false, router, w1, nullptr, w2, x, y, &routes);
  check(std::fabs(y[0] - 3 / (1 + std::exp(-2.0))) < 1e-12, "moe: sigmoid gating", std::to_string(y[0]));
  // Gated experts: u = x · w_up[e] = x_0 (w_up = (1, 0)): y = sum w_e · (e + 1) · relu(x_0) · x_0.
  const double wUp[] = {1, 0, 1, 0, 1, 0, 1, 0}, x2[] = {2, 0, 0, 1, 0, 0};
  moeForward(s, Activation::Relu, MoeGating::Softmax, true, router, w1, wUp, w2, x2, y, &routes);
  check(std::fabs(y[0] - (0.5 * 1 * 2 * 2 + 0.5 * 2 * 2 * 2)) < 1e-12, "moe: gated experts", std::to_string(y[0]));
}

// moeBackward against central differences of L = sum(y · dy) on random cases whose routing is the same at every
// perturbed point (the top-k choice has no gradient): softmax and sigmoid gating, renormalised or not, gated or
// plain experts.
void testMoeBackwardCase(const std::string &name, MoeGating gating, bool renormalize, bool gated, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  MoeShape s{5, 4, 3, 2, 4, 2};
  auto fill = [&](std::vector<double> &v, size_t n) {
    v.resize(n);
    for (double &x : v) x = u(rng);
  };
  std::vector<double> x, router, w1, wUp, w2, dy;
  fill(x, s.tokens * s.model), fill(router, s.model * s.experts), fill(w1, s.experts * s.model * s.hidden);
  fill(wUp, s.experts * s.model * s.hidden), fill(w2, s.experts * s.hidden * s.out), fill(dy, s.tokens * s.out);
  const double *up = gated ? wUp.data() : nullptr;
  auto routing = [&]() {
    std::vector<MoeRoute> routes;
    std::vector<double> y(s.tokens * s.out);
    moeForward(s, Activation::GeluTanh, gating, renormalize, router.data(), w1.data(), up, w2.data(), x.data(),
               y.data(), &routes);
    std::vector<int64_t> chosen;
    for (const MoeRoute &r : routes) chosen.insert(chosen.end(), r.experts.begin(), r.experts.end());
    return chosen;
  };
  auto loss = [&]() {
    std::vector<double> y(s.tokens * s.out);
    moeForward(s, Activation::GeluTanh, gating, renormalize, router.data(), w1.data(), up, w2.data(), x.data(),
               y.data());
    double l = 0.0;
    for (size_t i = 0; i < y.size(); ++i) l += y[i] * dy[i];
    return l;
  };
  std::vector<double> dx(x.size()), dRouter(router.size()), dw1(w1.size()), dwUp(wUp.size()), dw2(w2.size());
  MoeGradients g{dx.data(), dRouter.data(), dw1.data(), gated ? dwUp.data() : nullptr, dw2.data()};
  moeBackward(s, Activation::GeluTanh, gating, renormalize, router.data(), w1.data(), up, w2.data(), x.data(),
              dy.data(), g);
  const std::vector<int64_t> base = routing();
  const double h = 1e-6;
  double worst = 0.0;
  bool stable = true;
  auto probe = [&](std::vector<double> &param, const std::vector<double> &grad) {
    for (size_t i = 0; i < param.size(); ++i) {
      double keep = param[i];
      param[i] = keep + h;
      double plus = loss();
      stable &= routing() == base;
      param[i] = keep - h;
      double minus = loss();
      stable &= routing() == base;
      param[i] = keep;
      worst = std::max(worst, std::fabs((plus - minus) / (2 * h) - grad[i]));
    }
  };
  probe(x, dx), probe(router, dRouter), probe(w1, dw1), probe(w2, dw2);
  if (gated) probe(wUp, dwUp);
  check(stable, "moe backward " + name + ": the routing did not change under the probes (seed " +
                    std::to_string(seed) + ")");
  check(worst < 1e-7, "moe backward " + name + " against central differences", std::to_string(worst));
}

void testMoeBackward() {
  testMoeBackwardCase("softmax renormalized gated", MoeGating::Softmax, true, true, 11);
  testMoeBackwardCase("softmax plain", MoeGating::Softmax, false, false, 12);
  testMoeBackwardCase("sigmoid renormalized", MoeGating::Sigmoid, true, false, 13);
  testMoeBackwardCase("sigmoid gated", MoeGating::Sigmoid, false, true, 14);
}

int main() {
  testCodec();
  testIndexProgram();
  testScoreProgram();
  testActivations();
  testAttention();
  testFfn();
  testMoe();
  testMoeBackward();
  std::printf("%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
