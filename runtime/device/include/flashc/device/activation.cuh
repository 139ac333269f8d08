// FFN elementwise tile ops on f32 register tiles: `activation`, `activation_grad`, `add_bias`.
#pragma once
#include "flashc/device/regtile.cuh"

namespace flashc {
namespace device {

enum class Act { Identity, Relu, GeluTanh, GeluErf, Silu };

// tanh by the SFU (tanh.approx.f32, sm_75+: one MUFU op, max relative error 2^-11), for kernels whose results are
// bf16 / f16 (2^-11 is below half their ulp): the accurate tanhf is a ~20-instruction sequence an element, and the
// fused FFN issues one GELU per 2 x d_out multiply-adds (kApprox below; f32 kernels keep tanhf).
__device__ __forceinline__ float fast_tanh(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// kApprox: SFU tanh and rcp.approx divides (16-bit results); else tanhf and IEEE divides.
template <bool kApprox>
__device__ __forceinline__ float act_tanh(float x) {
  if constexpr (kApprox) return fast_tanh(x);
  return tanhf(x);
}
template <bool kApprox>
__device__ __forceinline__ float act_divide(float x, float y) {
  if constexpr (kApprox) return __fdividef(x, y);
  return x / y;
}

// GELU's tanh form: gelu(x) = 0.5 x (1 + tanh(c (x + a x³))).
constexpr float kGeluC = 0.7978845608028654f, kGeluA = 0.044715f;

template <Act K, bool kApprox = false>
__device__ __forceinline__ float act(float x) {
  if constexpr (K == Act::Identity) return x;
  if constexpr (K == Act::Relu) return fmaxf(x, 0.f);
  if constexpr (K == Act::GeluTanh) {  // 0.5 x (1 + tanh(c (x + a x³))), factored: 4 operations and the tanh
    const float x2 = x * x, half_x = 0.5f * x;
    return fmaf(half_x, act_tanh<kApprox>(x * fmaf(x2, kGeluC * kGeluA, kGeluC)), half_x);
  }
  if constexpr (K == Act::GeluErf) return 0.5f * x * (1.f + erff(x * 0.7071067811865476f));
  if constexpr (K == Act::Silu) return act_divide<kApprox>(x, 1.f + __expf(-x));
  return x;
}

// Derivative K'(x) of the formulas above (relu'(0) = 0).
template <Act K, bool kApprox = false>
__device__ __forceinline__ float act_grad(float x) {
  if constexpr (K == Act::Identity) return 1.f;
  if constexpr (K == Act::Relu) return x > 0.f ? 1.f : 0.f;
  if constexpr (K == Act::GeluTanh) {
    // 0.5 (1 + t) + 0.5 x (1 - t²) c (1 + 3 a x²), t = tanh(c (x + a x³)), factored into 8 operations and the tanh
    // (the fused dpre's epilogue issues one an element: its instruction count is the kernel's time).
    const float x2 = x * x, t = act_tanh<kApprox>(x * fmaf(x2, kGeluC * kGeluA, kGeluC));
    const float k = x * fmaf(x2, 1.5f * kGeluC * kGeluA, 0.5f * kGeluC);  // 0.5 c x (1 + 3 a x²)
    return fmaf(0.5f, t, fmaf(k, fmaf(-t, t, 1.f), 0.5f));
  }
  if constexpr (K == Act::GeluErf)
    return 0.5f * (1.f + erff(x * 0.7071067811865476f)) + x * 0.3989422804014327f * __expf(-0.5f * x * x);
  if constexpr (K == Act::Silu) {
    const float s = act_divide<kApprox>(1.f, 1.f + __expf(-x));
    return s * (1.f + x * (1.f - s));
  }
  return 1.f;
}

// tile op `activation K %x`, in place.
template <Act K, bool kApprox = false, int R, int C, int W>
__device__ __forceinline__ void activation(RegTileF32<R, C, W>& t) {
#pragma unroll
  for (int mt = 0; mt < t.kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < t.kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) t.v[mt][nt][i] = act<K, kApprox>(t.v[mt][nt][i]);
}

// tile op `activation_grad K %g, %pre`: g[r][c] *= K'(pre[r][c]), in place in g.
template <Act K, bool kApprox = false, int R, int C, int W>
__device__ __forceinline__ void activation_grad(RegTileF32<R, C, W>& g, const RegTileF32<R, C, W>& pre) {
#pragma unroll
  for (int mt = 0; mt < g.kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < g.kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) g.v[mt][nt][i] *= act_grad<K, kApprox>(pre.v[mt][nt][i]);
}

// tile op `activation_grad K %g, %pre` with a 16-bit pre-activation: each packed pair is unpacked where it is
// used, so no f32 copy of the tile lives beside g (the FFN backward's 128 x 256 epilogue fits the registers).
template <Act K, bool kApprox = false, class T, int R, int C, int W>
__device__ __forceinline__ void activation_grad(RegTileF32<R, C, W>& g, const RegTile16<T, R, C, W>& pre) {
#pragma unroll
  for (int mt = 0; mt < g.kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < g.kNT; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float2 p = ElemTraits<T>::unpack(pre.v[mt][nt][h]);
        g.v[mt][nt][2 * h] *= act_grad<K, kApprox>(p.x);
        g.v[mt][nt][2 * h + 1] *= act_grad<K, kApprox>(p.y);
      }
}

// tile op `add_bias %acc, %b[col0] limit cl`: t[r][c] += b[col0 + c] for col0 + c < limit.
template <class T, int R, int C, int W>
__device__ __forceinline__ void add_bias(RegTileF32<R, C, W>& t, const T* bias, int col0, int limit) {
#pragma unroll
  for (int nt = 0; nt < t.kNT; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int c = col0 + t.col(nt, e);
      const float b = c < limit ? to_float(bias[c]) : 0.f;
#pragma unroll
      for (int mt = 0; mt < t.kMT; ++mt) {
        t.v[mt][nt][e] += b;
        t.v[mt][nt][2 + e] += b;
      }
    }
}

}  // namespace device
}  // namespace flashc
