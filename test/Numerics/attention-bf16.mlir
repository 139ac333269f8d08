// bf16 (and one f16) attention: inputs exact bf16/f16 values; P and dS are rounded to bf16
// before their matmuls and outputs are stored in bf16 (f32 accumulation), as
// on the GPU. Against the float64 reference the bound is bf16-sized:
// max |tile - ref| / max |ref| < 2e-2.
//
// The row form explicitly (--backward-form=auto, the default, picks Sᵀ for 16-bit D = 64/128 on sm_90a).
// RUN: flash-run-tile %s --backward --backward-form=rows --block-m=16 --block-n=16 --warps=1 --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %s --backward --backward-form=rows --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %s --backward --backward-form=transposed --tolerance=2e-2 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @bf16_causal backward d_v: {{.*}} ok
// CHECK: @bf16_gqa_window backward d_v: {{.*}} ok
// CHECK: @f16_full backward d_v: {{.*}} ok

func.func @bf16_causal(%q: tensor<1x2x130x64xbf16>, %k: tensor<1x2x130x64xbf16>, %v: tensor<1x2x130x64xbf16>) -> tensor<1x2x130x64xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x2x130x64xbf16>, tensor<1x2x130x64xbf16>, tensor<1x2x130x64xbf16>) -> (tensor<1x2x130x64xbf16>, tensor<1x2x130xf32>)
  return %out : tensor<1x2x130x64xbf16>
}

func.func @bf16_gqa_window(%q: tensor<1x4x70x32xbf16>, %k: tensor<1x2x70x32xbf16>, %v: tensor<1x2x70x32xbf16>) -> tensor<1x4x70x32xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<sliding_window, left = 16, right = 0> num_kv_heads = 2
      : (tensor<1x4x70x32xbf16>, tensor<1x2x70x32xbf16>, tensor<1x2x70x32xbf16>) -> (tensor<1x4x70x32xbf16>, tensor<1x4x70xf32>)
  return %out : tensor<1x4x70x32xbf16>
}

func.func @f16_full(%q: tensor<1x2x33x32xf16>, %k: tensor<1x2x33x32xf16>, %v: tensor<1x2x33x32xf16>) -> tensor<1x2x33x32xf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<1x2x33x32xf16>, tensor<1x2x33x32xf16>, tensor<1x2x33x32xf16>) -> (tensor<1x2x33x32xf16>, tensor<1x2x33xf32>)
  return %out : tensor<1x2x33x32xf16>
}
