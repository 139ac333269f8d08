// Soft-capped scores (Gemma style): s = cap · tanh(scale · q·k / cap), forward
// and backward (dS goes back through the cap: · (1 - (s / cap)²) · scale).
// Inputs in [-4, 4] so that the cap bites. Bound: f32, max |tile - ref| / max |ref| < 1e-5.
//
// RUN: flash-run-tile %s --backward --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 --input-range=4 | FileCheck %s
// RUN: flash-run-tile %s --backward --deterministic --tolerance=1e-5 --input-range=4 | FileCheck %s
// RUN: flash-run-tile %s --backward --backward-form=transposed --tolerance=1e-5 --input-range=4 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @softcap_causal forward result 0: {{.*}} ok
// CHECK: @softcap_causal forward lse: {{.*}} ok
// CHECK: @softcap_causal backward d_q: {{.*}} ok
// CHECK: @softcap_causal backward d_k: {{.*}} ok
// CHECK: @softcap_causal backward d_v: {{.*}} ok

func.func @softcap_causal(%q: tensor<1x2x40x32xf32>, %k: tensor<1x2x40x32xf32>, %v: tensor<1x2x40x32xf32>) -> tensor<1x2x40x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<causal> softcap = 2.000000e+00 num_kv_heads = 2
      : (tensor<1x2x40x32xf32>, tensor<1x2x40x32xf32>, tensor<1x2x40x32xf32>) -> (tensor<1x2x40x32xf32>, tensor<1x2x40xf32>)
  return %out : tensor<1x2x40x32xf32>
}
