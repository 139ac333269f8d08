// End to end from unfused graphs, as a user writes them: fusion (graph
// pipeline), flash-generate-backward, flash-tile, flash-plan-memory, then the
// CPU tile executor against the float64 evaluation of the *unfused* graph
// (materialised softmax). Bound: f32, max |tile - ref| / max |ref| < 1e-5.
//
// RUN: flash-run-tile %s --dynamic-size=19 --block-m=16 --block-n=16 --block-k=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --dynamic-size=19 --ffn-plan=two-kernel --tolerance=1e-5 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @gpt_block forward result 0: {{.*}} ok
// CHECK: @gpt_block forward result 1: {{.*}} ok
// CHECK: @attention_only forward result 0: {{.*}} ok

// A GPT-style block (causal attention, then a GeLU FFN on a rank-3 stream).
func.func @gpt_block(%q: tensor<?x2x?x32xf32>, %k: tensor<?x2x?x32xf32>, %v: tensor<?x2x?x32xf32>,
                     %x: tensor<?x?x48xf32>,
                     %w1: tensor<48x80xf32>, %b1: tensor<80xf32>,
                     %w2: tensor<80x48xf32>, %b2: tensor<48xf32>)
    -> (tensor<?x2x?x32xf32>, tensor<?x?x48xf32>) {
  %scores = flash.matmul %q, %k transpose_b
      : tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32> -> tensor<?x2x?x?xf32>
  %scaled = flash.scale %scores by 0.17677669529663687 : tensor<?x2x?x?xf32>
  %masked = flash.mask %scaled <causal> : tensor<?x2x?x?xf32>
  %probs = flash.softmax %masked : tensor<?x2x?x?xf32>
  %attn = flash.matmul %probs, %v
      : tensor<?x2x?x?xf32>, tensor<?x2x?x32xf32> -> tensor<?x2x?x32xf32>
  %h = flash.matmul %x, %w1 : tensor<?x?x48xf32>, tensor<48x80xf32> -> tensor<?x?x80xf32>
  %hb = flash.add %h, %b1 : tensor<?x?x80xf32>, tensor<80xf32>
  %act = flash.gelu tanh %hb : tensor<?x?x80xf32>
  %y = flash.matmul %act, %w2 : tensor<?x?x80xf32>, tensor<80x48xf32> -> tensor<?x?x48xf32>
  %yb = flash.add %y, %b2 : tensor<?x?x48xf32>, tensor<48xf32>
  return %attn, %yb : tensor<?x2x?x32xf32>, tensor<?x?x48xf32>
}

// Sliding-window GQA attention written with a grouped matmul.
func.func @attention_only(%q: tensor<1x4x40x32xf32>, %k: tensor<1x2x40x32xf32>, %v: tensor<1x2x40x32xf32>)
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
