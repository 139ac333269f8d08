// Backward from unfused graphs: fusion finds flash.attention / flash.ffn,
// flash-generate-backward differentiates them, the CPU tile executor runs the
// backward programs; gradients against float64 textbook gradients.
// Bound: f32, max |tile - ref| / max |ref| < 1e-5.
//
// RUN: flash-run-tile %s --backward --block-m=16 --block-n=16 --block-k=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --deterministic --tolerance=1e-5 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @window_gqa backward d_q: {{.*}} ok
// CHECK: @window_gqa backward d_k: {{.*}} ok
// CHECK: @window_gqa backward d_v: {{.*}} ok
// CHECK: @mlp backward d_x: {{.*}} ok
// CHECK: @mlp backward d_w1: {{.*}} ok
// CHECK: @mlp backward d_b1: {{.*}} ok
// CHECK: @mlp backward d_w2: {{.*}} ok

func.func @window_gqa(%q: tensor<1x4x40x32xf32>, %k: tensor<1x2x40x32xf32>, %v: tensor<1x2x40x32xf32>)
    -> tensor<1x4x40x32xf32> {
  %scores = flash.matmul %q, %k transpose_b
      : tensor<1x4x40x32xf32>, tensor<1x2x40x32xf32> -> tensor<1x4x40x40xf32>
  %scaled = flash.scale %scores by 0.17677669529663687 : tensor<1x4x40x40xf32>
  %masked = flash.mask %scaled <sliding_window, left = 7, right = 0> : tensor<1x4x40x40xf32>
  %probs = flash.softmax %masked : tensor<1x4x40x40xf32>
  %attn = flash.matmul %probs, %v
      : tensor<1x4x40x40xf32>, tensor<1x2x40x32xf32> -> tensor<1x4x40x32xf32>
  return %attn : tensor<1x4x40x32xf32>
}

func.func @mlp(%x: tensor<37x24xf32>, %w1: tensor<24x72xf32>, %b1: tensor<72xf32>, %w2: tensor<72x24xf32>)
    -> tensor<37x24xf32> {
  %h = flash.matmul %x, %w1 : tensor<37x24xf32>, tensor<24x72xf32> -> tensor<37x72xf32>
  %hb = flash.add %h, %b1 : tensor<37x72xf32>, tensor<72xf32>
  %act = flash.silu %hb : tensor<37x72xf32>
  %y = flash.matmul %act, %w2 : tensor<37x72xf32>, tensor<72x24xf32> -> tensor<37x24xf32>
  return %y : tensor<37x24xf32>
}
