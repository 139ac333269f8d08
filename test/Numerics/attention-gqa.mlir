// Grouped-query and multi-query attention: query head h reads kv head
// h / (Hq / Hkv); dK and dV of a kv head sum over its query-head group.
// Bound: f32, max |tile - ref| / max |ref| < 1e-5.
//
// RUN: flash-run-tile %s --backward --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --deterministic --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --backward-form=transposed --block-m=32 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @gqa_causal backward d_k: {{.*}} ok
// CHECK: @gqa_causal backward d_v: {{.*}} ok
// CHECK: @mqa_full backward d_k: {{.*}} ok
// CHECK: @mqa_full backward d_v: {{.*}} ok

func.func @gqa_causal(%q: tensor<1x4x33x32xf32>, %k: tensor<1x2x33x32xf32>, %v: tensor<1x2x33x32xf32>) -> tensor<1x4x33x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x4x33x32xf32>, tensor<1x2x33x32xf32>, tensor<1x2x33x32xf32>) -> (tensor<1x4x33x32xf32>, tensor<1x4x33xf32>)
  return %out : tensor<1x4x33x32xf32>
}

func.func @mqa_full(%q: tensor<2x4x17x64xf32>, %k: tensor<2x1x29x64xf32>, %v: tensor<2x1x29x64xf32>) -> tensor<2x4x17x64xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 1
      : (tensor<2x4x17x64xf32>, tensor<2x1x29x64xf32>, tensor<2x1x29x64xf32>) -> (tensor<2x4x17x64xf32>, tensor<2x4x17xf32>)
  return %out : tensor<2x4x17x64xf32>
}
