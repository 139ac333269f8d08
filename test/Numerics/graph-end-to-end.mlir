// End to end from unfused graphs, as a user writes them: fusion (graph
// pipeline), flash-generate-backward, flash-tile, flash-plan-memory, then the
// CPU tile executor against the float64 evaluation of the *unfused* graph
// (materialised softmax) and textbook gradients; a function with two
// independent fused ops gets one backward program for both.
// Bound: f32, max |tile - ref| / max |ref| < 1e-5.
//
// RUN: flash-run-tile %s --backward --dynamic-size=19 --block-m=16 --block-n=16 --block-k=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --deterministic --dynamic-size=19 --ffn-plan=two-kernel --tolerance=1e-5 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @gpt_block forward result 0: {{.*}} ok
// CHECK: @gpt_block forward result 1: {{.*}} ok
// CHECK: @gpt_block backward d_q: {{.*}} ok
// CHECK: @gpt_block backward d_v: {{.*}} ok
// CHECK: @gpt_block backward d_x: {{.*}} ok
// CHECK: @gpt_block backward d_w1: {{.*}} ok
// CHECK: @gpt_block backward d_b2: {{.*}} ok
// CHECK: @attention_only forward result 0: {{.*}} ok
// CHECK: @attention_only backward d_k: {{.*}} ok
// CHECK: @llama_ffn forward result 0: {{.*}} ok
// CHECK: @llama_ffn backward d_x: {{.*}} ok
// CHECK: @llama_ffn backward d_w_up: {{.*}} ok
// CHECK: @chunked_mask_graph forward result 0: {{.*}} ok
// CHECK: @chunked_mask_graph backward d_q: {{.*}} ok

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

// A LLaMA-style gated SiLU FFN on a rank-3 stream, unfused.
func.func @llama_ffn(%x: tensor<?x?x32xf32>, %w_gate: tensor<32x88xf32>, %w_up: tensor<32x88xf32>,
                     %w_down: tensor<88x32xf32>) -> tensor<?x?x32xf32> {
  %gate = flash.matmul %x, %w_gate : tensor<?x?x32xf32>, tensor<32x88xf32> -> tensor<?x?x88xf32>
  %act = flash.silu %gate : tensor<?x?x88xf32>
  %up = flash.matmul %x, %w_up : tensor<?x?x32xf32>, tensor<32x88xf32> -> tensor<?x?x88xf32>
  %hidden = flash.mul %act, %up : tensor<?x?x88xf32>
  %y = flash.matmul %hidden, %w_down : tensor<?x?x88xf32>, tensor<88x32xf32> -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// A mask modifier in the graph spelling (flash.mask ... mod): chunks of 13 rows attend within
// themselves; fused into flash.attention's mask_mod, tiled, run on the CPU against the unfused graph.
func.func @chunked_mask_graph(%q: tensor<1x2x40x32xf32>, %k: tensor<1x2x40x32xf32>, %v: tensor<1x2x40x32xf32>)
    -> tensor<1x2x40x32xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x40x32xf32>, tensor<1x2x40x32xf32> -> tensor<1x2x40x40xf32>
  %t = flash.scale %s by 0.17677669529663687 : tensor<1x2x40x40xf32>
  %m = flash.mask %t <none> mod {
  ^bb0(%i: index, %j: index):
    %c13 = arith.constant 13 : index
    %qi = arith.floordivsi %i, %c13 : index
    %kj = arith.floordivsi %j, %c13 : index
    %same = arith.cmpi eq, %qi, %kj : index
    flash.yield %same : i1
  } : tensor<1x2x40x40xf32>
  %p = flash.softmax %m : tensor<1x2x40x40xf32>
  %o = flash.matmul %p, %v : tensor<1x2x40x40xf32>, tensor<1x2x40x32xf32> -> tensor<1x2x40x32xf32>
  return %o : tensor<1x2x40x32xf32>
}
