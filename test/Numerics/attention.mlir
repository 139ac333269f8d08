// Attention forward and backward on the CPU tile executor against a float64
// reference (materialised softmax; textbook gradients). f32 everywhere, so the
// bound is tight: max |tile - ref| / max |ref| < 1e-5 for out, lse, dq, dk, dv.
// Small blocks (16 x 16, one warp) make every size below span several row and
// key blocks with ragged tails; RUNs without block options use the target's
// default plan; --backward-form=transposed checks the S^T form of the dK/dV kernel.
//
// RUN: flash-run-tile %s --backward --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --deterministic --block-m=32 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --block-m=16 --block-n=32 --warps=1 --stages=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --backward-form=transposed --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --backward-form=transposed --tolerance=1e-5 | FileCheck %s
// The comparison is not vacuous: an impossible bound fails.
// RUN: not flash-run-tile %s --backward --block-m=16 --block-n=16 --warps=1 --tolerance=1e-12 | FileCheck %s --check-prefix=TIGHT
// TIGHT: FAIL

// CHECK-NOT: FAIL
// CHECK: @full_s17 forward result 0: {{.*}} ok
// CHECK: @full_s17 forward lse: {{.*}} ok
// CHECK: @full_s17 backward d_q: {{.*}} ok
// CHECK: @full_s17 backward d_k: {{.*}} ok
// CHECK: @full_s17 backward d_v: {{.*}} ok
// CHECK: @causal_s130 backward d_v: {{.*}} ok
// CHECK: @causal_s1 backward d_v: {{.*}} ok
// CHECK: @full_s1 backward d_v: {{.*}} ok
// CHECK: @full_s64_d64 backward d_v: {{.*}} ok
// CHECK: @causal_s64_d64 backward d_v: {{.*}} ok
// CHECK: @causal_s130_d64_dv32 backward d_v: {{.*}} ok

func.func @full_s17(%q: tensor<1x2x17x32xf32>, %k: tensor<1x2x17x32xf32>, %v: tensor<1x2x17x32xf32>) -> tensor<1x2x17x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<1x2x17x32xf32>, tensor<1x2x17x32xf32>, tensor<1x2x17x32xf32>) -> (tensor<1x2x17x32xf32>, tensor<1x2x17xf32>)
  return %out : tensor<1x2x17x32xf32>
}

func.func @causal_s130(%q: tensor<1x2x130x32xf32>, %k: tensor<1x2x130x32xf32>, %v: tensor<1x2x130x32xf32>) -> tensor<1x2x130x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x2x130x32xf32>, tensor<1x2x130x32xf32>, tensor<1x2x130x32xf32>) -> (tensor<1x2x130x32xf32>, tensor<1x2x130xf32>)
  return %out : tensor<1x2x130x32xf32>
}

func.func @causal_s1(%q: tensor<2x1x1x32xf32>, %k: tensor<2x1x1x32xf32>, %v: tensor<2x1x1x32xf32>) -> tensor<2x1x1x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<causal> num_kv_heads = 1
      : (tensor<2x1x1x32xf32>, tensor<2x1x1x32xf32>, tensor<2x1x1x32xf32>) -> (tensor<2x1x1x32xf32>, tensor<2x1x1xf32>)
  return %out : tensor<2x1x1x32xf32>
}

func.func @full_s1(%q: tensor<1x2x1x64xf32>, %k: tensor<1x2x1x64xf32>, %v: tensor<1x2x1x64xf32>) -> tensor<1x2x1x64xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<1x2x1x64xf32>, tensor<1x2x1x64xf32>, tensor<1x2x1x64xf32>) -> (tensor<1x2x1x64xf32>, tensor<1x2x1xf32>)
  return %out : tensor<1x2x1x64xf32>
}

func.func @full_s64_d64(%q: tensor<2x2x64x64xf32>, %k: tensor<2x2x64x64xf32>, %v: tensor<2x2x64x64xf32>) -> tensor<2x2x64x64xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<2x2x64x64xf32>, tensor<2x2x64x64xf32>, tensor<2x2x64x64xf32>) -> (tensor<2x2x64x64xf32>, tensor<2x2x64xf32>)
  return %out : tensor<2x2x64x64xf32>
}

func.func @causal_s64_d64(%q: tensor<1x2x64x64xf32>, %k: tensor<1x2x64x64xf32>, %v: tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) -> (tensor<1x2x64x64xf32>, tensor<1x2x64xf32>)
  return %out : tensor<1x2x64x64xf32>
}

func.func @causal_s130_d64_dv32(%q: tensor<1x1x130x64xf32>, %k: tensor<1x1x130x64xf32>, %v: tensor<1x1x130x32xf32>) -> tensor<1x1x130x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 1
      : (tensor<1x1x130x64xf32>, tensor<1x1x130x64xf32>, tensor<1x1x130x32xf32>) -> (tensor<1x1x130x32xf32>, tensor<1x1x130xf32>)
  return %out : tensor<1x1x130x32xf32>
}
