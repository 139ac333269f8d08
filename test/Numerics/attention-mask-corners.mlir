// Mask corner cases: a diagonal-only window, a window unbounded on the
// right, causal with look-ahead, a window wider than the sequence, and
// single-row / single-key causal with Sq != Sk (rows that see no key: zeros,
// lse -inf). Bound: f32, max |tile - ref| / max |ref| < 1e-5.
//
// RUN: flash-run-tile %s --backward --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --deterministic --block-m=32 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --backward-form=transposed --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @diag_only backward d_v: {{.*}} ok
// CHECK: @right_unbounded backward d_v: {{.*}} ok
// CHECK: @lookahead3 backward d_v: {{.*}} ok
// CHECK: @wide_window backward d_v: {{.*}} ok
// CHECK: @sq1_sk70_causal backward d_v: {{.*}} ok
// CHECK: @sq70_sk1_causal forward lse: {{.*}} ok
// CHECK: @sq70_sk1_causal backward d_v: {{.*}} ok

func.func @diag_only(%q: tensor<1x2x37x32xf32>, %k: tensor<1x2x37x32xf32>, %v: tensor<1x2x37x32xf32>) -> tensor<1x2x37x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<sliding_window, left = 0, right = 0> num_kv_heads = 2
      : (tensor<1x2x37x32xf32>, tensor<1x2x37x32xf32>, tensor<1x2x37x32xf32>) -> (tensor<1x2x37x32xf32>, tensor<1x2x37xf32>)
  return %out : tensor<1x2x37x32xf32>
}

func.func @right_unbounded(%q: tensor<1x2x37x32xf32>, %k: tensor<1x2x50x32xf32>, %v: tensor<1x2x50x32xf32>) -> tensor<1x2x37x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<sliding_window, left = 0, right = -1> num_kv_heads = 2
      : (tensor<1x2x37x32xf32>, tensor<1x2x50x32xf32>, tensor<1x2x50x32xf32>) -> (tensor<1x2x37x32xf32>, tensor<1x2x37xf32>)
  return %out : tensor<1x2x37x32xf32>
}

func.func @lookahead3(%q: tensor<1x2x50x32xf32>, %k: tensor<1x2x37x32xf32>, %v: tensor<1x2x37x32xf32>) -> tensor<1x2x50x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<sliding_window, left = -1, right = 3> num_kv_heads = 2
      : (tensor<1x2x50x32xf32>, tensor<1x2x37x32xf32>, tensor<1x2x37x32xf32>) -> (tensor<1x2x50x32xf32>, tensor<1x2x50xf32>)
  return %out : tensor<1x2x50x32xf32>
}

func.func @wide_window(%q: tensor<1x2x20x32xf32>, %k: tensor<1x2x70x32xf32>, %v: tensor<1x2x70x32xf32>) -> tensor<1x2x20x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<sliding_window, left = 100, right = 100> num_kv_heads = 2
      : (tensor<1x2x20x32xf32>, tensor<1x2x70x32xf32>, tensor<1x2x70x32xf32>) -> (tensor<1x2x20x32xf32>, tensor<1x2x20xf32>)
  return %out : tensor<1x2x20x32xf32>
}

func.func @sq1_sk70_causal(%q: tensor<1x2x1x32xf32>, %k: tensor<1x2x70x32xf32>, %v: tensor<1x2x70x32xf32>) -> tensor<1x2x1x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x2x1x32xf32>, tensor<1x2x70x32xf32>, tensor<1x2x70x32xf32>) -> (tensor<1x2x1x32xf32>, tensor<1x2x1xf32>)
  return %out : tensor<1x2x1x32xf32>
}

func.func @sq70_sk1_causal(%q: tensor<1x2x70x32xf32>, %k: tensor<1x2x1x32xf32>, %v: tensor<1x2x1x32xf32>) -> tensor<1x2x70x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x2x70x32xf32>, tensor<1x2x1x32xf32>, tensor<1x2x1x32xf32>) -> (tensor<1x2x70x32xf32>, tensor<1x2x70xf32>)
  return %out : tensor<1x2x70x32xf32>
}
