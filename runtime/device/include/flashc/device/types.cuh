// Element types of tiles (bf16, f16) and packing of two values into one 32-bit register,
// the unit of mma.sync operands and of C-fragment stores.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// NVRTC has no <math.h>: provide INFINITY for device code.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

namespace flashc {
namespace device {

using bf16 = __nv_bfloat16;
using f16 = __half;

template <class T>
struct ElemTraits;

template <>
struct ElemTraits<bf16> {
  static constexpr bool kIsBf16 = true;
  static __device__ __forceinline__ unsigned pack(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&v);
  }
  static __device__ __forceinline__ float2 unpack(unsigned w) {
    __nv_bfloat162 v = *reinterpret_cast<__nv_bfloat162*>(&w);
    return __bfloat1622float2(v);
  }
};

template <>
struct ElemTraits<f16> {
  static constexpr bool kIsBf16 = false;
  static __device__ __forceinline__ unsigned pack(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&v);
  }
  static __device__ __forceinline__ float2 unpack(unsigned w) {
    __half2 v = *reinterpret_cast<__half2*>(&w);
    return __half22float2(v);
  }
};

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(f16 x) { return __half2float(x); }
template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ bf16 from_float<bf16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ __forceinline__ f16 from_float<f16>(float x) { return __float2half_rn(x); }

// log2(e): exp(x) == exp2(x * kLog2e); softmax runs in base 2 (one FMA per element).
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Compile-time square root (Newton), for the default softmax scale 1/sqrt(head_dim) as a constant.
__host__ __device__ constexpr double constexpr_sqrt(double x, double guess = 1.0, int iters = 64) {
  return iters == 0 ? guess : constexpr_sqrt(x, 0.5 * (guess + x / guess), iters - 1);
}

// std::conditional without <type_traits> (NVRTC compiles the library without the standard headers).
template <bool kCond, class T, class F>
struct Select {
  using type = T;
};
template <class T, class F>
struct Select<false, T, F> {
  using type = F;
};

__device__ __forceinline__ int lane_id() { return threadIdx.x & 31; }
__device__ __forceinline__ int warp_id() { return threadIdx.x >> 5; }

}  // namespace device
}  // namespace flashc
