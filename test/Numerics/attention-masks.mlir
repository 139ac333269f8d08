// Masks: sliding windows and causal with Sq != Sk (bottom-right aligned: row i
// sees keys j <= i + Sk - Sq). With Sq > Sk the first Sq - Sk rows see no key:
// output 0, lse -inf (compared exactly), zero gradients, never NaN.
// Bound: f32, max |tile - ref| / max |ref| < 1e-5.
//
// RUN: flash-run-tile %s --backward --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --deterministic --block-m=16 --block-n=32 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --backward-form=transposed --deterministic --block-m=32 --block-n=32 --warps=2 --tolerance=1e-5 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @window_left5 backward d_v: {{.*}} ok
// CHECK: @window_3_2 backward d_v: {{.*}} ok
// CHECK: @window_left40_s130 backward d_v: {{.*}} ok
// CHECK: @causal_sq17_sk40 backward d_v: {{.*}} ok
// CHECK: @causal_sq40_sk17 forward lse: {{.*}} ok
// CHECK: @causal_sq40_sk17 backward d_v: {{.*}} ok
// CHECK: @full_sq17_sk64 backward d_v: {{.*}} ok
// CHECK: @window_sq33_sk70 backward d_v: {{.*}} ok

func.func @window_left5(%q: tensor<1x2x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>) -> tensor<1x2x64x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<sliding_window, left = 5, right = 0> num_kv_heads = 2
      : (tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>) -> (tensor<1x2x64x32xf32>, tensor<1x2x64xf32>)
  return %out : tensor<1x2x64x32xf32>
}

func.func @window_3_2(%q: tensor<1x2x17x32xf32>, %k: tensor<1x2x17x32xf32>, %v: tensor<1x2x17x32xf32>) -> tensor<1x2x17x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<sliding_window, left = 3, right = 2> num_kv_heads = 2
      : (tensor<1x2x17x32xf32>, tensor<1x2x17x32xf32>, tensor<1x2x17x32xf32>) -> (tensor<1x2x17x32xf32>, tensor<1x2x17xf32>)
  return %out : tensor<1x2x17x32xf32>
}

func.func @window_left40_s130(%q: tensor<1x1x130x32xf32>, %k: tensor<1x1x130x32xf32>, %v: tensor<1x1x130x32xf32>) -> tensor<1x1x130x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<sliding_window, left = 40, right = 0> num_kv_heads = 1
      : (tensor<1x1x130x32xf32>, tensor<1x1x130x32xf32>, tensor<1x1x130x32xf32>) -> (tensor<1x1x130x32xf32>, tensor<1x1x130xf32>)
  return %out : tensor<1x1x130x32xf32>
}

func.func @causal_sq17_sk40(%q: tensor<1x2x17x32xf32>, %k: tensor<1x2x40x32xf32>, %v: tensor<1x2x40x32xf32>) -> tensor<1x2x17x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x2x17x32xf32>, tensor<1x2x40x32xf32>, tensor<1x2x40x32xf32>) -> (tensor<1x2x17x32xf32>, tensor<1x2x17xf32>)
  return %out : tensor<1x2x17x32xf32>
}

func.func @causal_sq40_sk17(%q: tensor<1x2x40x32xf32>, %k: tensor<1x2x17x32xf32>, %v: tensor<1x2x17x32xf32>) -> tensor<1x2x40x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x2x40x32xf32>, tensor<1x2x17x32xf32>, tensor<1x2x17x32xf32>) -> (tensor<1x2x40x32xf32>, tensor<1x2x40xf32>)
  return %out : tensor<1x2x40x32xf32>
}

func.func @full_sq17_sk64(%q: tensor<2x1x17x64xf32>, %k: tensor<2x1x64x64xf32>, %v: tensor<2x1x64x64xf32>) -> tensor<2x1x17x64xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 1
      : (tensor<2x1x17x64xf32>, tensor<2x1x64x64xf32>, tensor<2x1x64x64xf32>) -> (tensor<2x1x17x64xf32>, tensor<2x1x17xf32>)
  return %out : tensor<2x1x17x64xf32>
}

func.func @window_sq33_sk70(%q: tensor<1x2x33x32xf32>, %k: tensor<1x2x70x32xf32>, %v: tensor<1x2x70x32xf32>) -> tensor<1x2x33x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<sliding_window, left = 20, right = 4> num_kv_heads = 2
      : (tensor<1x2x33x32xf32>, tensor<1x2x70x32xf32>, tensor<1x2x70x32xf32>) -> (tensor<1x2x33x32xf32>, tensor<1x2x33xf32>)
  return %out : tensor<1x2x33x32xf32>
}
