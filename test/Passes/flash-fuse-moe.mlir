// RUN: flash-opt %s --flash-fuse-moe --split-input-file -verify-diagnostics | FileCheck %s
// RUN: flash-eval %s -split-input-file --dynamic-size=13 | FileCheck %s --check-prefix=EVAL
// RUN: flash-opt %S/Inputs/fuse-moe-mismatched.mlir --flash-fuse-moe -split-input-file -verify-diagnostics
//
// logits = x·router; s = softmax(logits) | sigmoid(logits); w, ids = top_k(s); [w = normalize(w)];
// rows = expert_ffn(x, ids, w1 [, w_up], w2); y = combine(rows, w)
//   ==> flash.moe act x, router, w1 [up w_up], w2 top_k = k gating = softmax | sigmoid [renormalize]
// EVAL: @mixtral result #0 [13, 40] sum

// Mixtral's routing: softmax over 8, the top 2 renormalised, SwiGLU experts.
// CHECK-LABEL: func.func @mixtral
// CHECK-SAME: (%[[X:.+]]: tensor<?x64xbf16>, %[[R:.+]]: tensor<64x8xbf16>, %[[WG:.+]]: tensor<8x64x96xbf16>, %[[WU:.+]]: tensor<8x64x96xbf16>, %[[W2:.+]]: tensor<8x96x40xbf16>)
// CHECK-NEXT: %[[Y:.+]] = flash.moe silu %[[X]], %[[R]], %[[WG]] up %[[WU]], %[[W2]] top_k = 2 gating = softmax renormalize
// CHECK-NEXT: return %[[Y]]
func.func @mixtral(%x: tensor<?x64xbf16>, %r: tensor<64x8xbf16>, %wg: tensor<8x64x96xbf16>, %wu: tensor<8x64x96xbf16>,
                   %w2: tensor<8x96x40xbf16>) -> tensor<?x40xbf16> {
  %logits = flash.matmul %x, %r : tensor<?x64xbf16>, tensor<64x8xbf16> -> tensor<?x8xbf16>
  %p = flash.softmax %logits : tensor<?x8xbf16>
  %w, %ids = flash.top_k %p k = 2 : tensor<?x8xbf16> -> tensor<?x2xbf16>, tensor<?x2xi32>
  %wn = flash.normalize %w : tensor<?x2xbf16>
  %rows = flash.expert_ffn silu %x, %ids, %wg up %wu, %w2
      : (tensor<?x64xbf16>, tensor<?x2xi32>, tensor<8x64x96xbf16>, tensor<8x64x96xbf16>, tensor<8x96x40xbf16>)
      -> tensor<?x2x40xbf16>
  %y = flash.combine %rows, %wn : tensor<?x2x40xbf16>, tensor<?x2xbf16> -> tensor<?x40xbf16>
  return %y : tensor<?x40xbf16>
}

// -----

// Sigmoid gating, not renormalised, plain GeLU experts, f16, d_out != d.
// CHECK-LABEL: func.func @sigmoid_plain
// CHECK-NEXT: %[[Y:.+]] = flash.moe gelu_tanh %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} top_k = 4 gating = sigmoid :
// CHECK-NEXT: return %[[Y]]
func.func @sigmoid_plain(%x: tensor<?x32xf16>, %r: tensor<32x16xf16>, %w1: tensor<16x32x48xf16>,
                         %w2: tensor<16x48x24xf16>) -> tensor<?x24xf16> {
  %logits = flash.matmul %x, %r : tensor<?x32xf16>, tensor<32x16xf16> -> tensor<?x16xf16>
  %s = flash.sigmoid %logits : tensor<?x16xf16>
  %w, %ids = flash.top_k %s k = 4 : tensor<?x16xf16> -> tensor<?x4xf16>, tensor<?x4xi32>
  %rows = flash.expert_ffn gelu_tanh %x, %ids, %w1, %w2
      : (tensor<?x32xf16>, tensor<?x4xi32>, tensor<16x32x48xf16>, tensor<16x48x24xf16>) -> tensor<?x4x24xf16>
  %y = flash.combine %rows, %w : tensor<?x4x24xf16>, tensor<?x4xf16> -> tensor<?x24xf16>
  return %y : tensor<?x24xf16>
}

// -----

// The logits also returned: nothing fuses, the warning says why.
// CHECK-LABEL: func.func @logits_returned
// CHECK: flash.top_k
// CHECK: flash.combine
// CHECK-NOT: flash.moe
func.func @logits_returned(%x: tensor<?x32xbf16>, %r: tensor<32x8xbf16>, %w1: tensor<8x32x16xbf16>,
                           %w2: tensor<8x16x32xbf16>) -> (tensor<?x32xbf16>, tensor<?x8xbf16>) {
  %logits = flash.matmul %x, %r : tensor<?x32xbf16>, tensor<32x8xbf16> -> tensor<?x8xbf16>
  %p = flash.softmax %logits : tensor<?x8xbf16>
  %w, %ids = flash.top_k %p k = 2 : tensor<?x8xbf16> -> tensor<?x2xbf16>, tensor<?x2xi32>
  %rows = flash.expert_ffn silu %x, %ids, %w1, %w2
      : (tensor<?x32xbf16>, tensor<?x2xi32>, tensor<8x32x16xbf16>, tensor<8x16x32xbf16>) -> tensor<?x2x32xbf16>
  // expected-warning @+1 {{flash-fuse-moe: not fused into flash.moe: the router's logits has another use besides the mixture of experts}}
  %y = flash.combine %rows, %w : tensor<?x2x32xbf16>, tensor<?x2xbf16> -> tensor<?x32xbf16>
  return %y, %logits : tensor<?x32xbf16>, tensor<?x8xbf16>
}

// -----

// The experts read another top-k's ids than the one that weighs them.
func.func @other_ids(%x: tensor<?x32xbf16>, %r: tensor<32x8xbf16>, %w1: tensor<8x32x16xbf16>,
                     %w2: tensor<8x16x32xbf16>, %ids: tensor<?x2xi32>) -> tensor<?x32xbf16> {
  %logits = flash.matmul %x, %r : tensor<?x32xbf16>, tensor<32x8xbf16> -> tensor<?x8xbf16>
  %p = flash.softmax %logits : tensor<?x8xbf16>
  %w, %own = flash.top_k %p k = 2 : tensor<?x8xbf16> -> tensor<?x2xbf16>, tensor<?x2xi32>
  %rows = flash.expert_ffn silu %x, %ids, %w1, %w2
      : (tensor<?x32xbf16>, tensor<?x2xi32>, tensor<8x32x16xbf16>, tensor<8x16x32xbf16>) -> tensor<?x2x32xbf16>
  // expected-warning @+1 {{flash-fuse-moe: not fused into flash.moe: the experts' ids are not the indices of the flash.top_k that weighs them}}
  %y = flash.combine %rows, %w : tensor<?x2x32xbf16>, tensor<?x2xbf16> -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// -----

// Weights from elsewhere (not a top-k's values).
func.func @free_weights(%x: tensor<?x32xbf16>, %ids: tensor<?x2xi32>, %w: tensor<?x2xbf16>, %w1: tensor<8x32x16xbf16>,
                        %w2: tensor<8x16x32xbf16>) -> tensor<?x32xbf16> {
  %rows = flash.expert_ffn relu %x, %ids, %w1, %w2
      : (tensor<?x32xbf16>, tensor<?x2xi32>, tensor<8x32x16xbf16>, tensor<8x16x32xbf16>) -> tensor<?x2x32xbf16>
  // expected-warning @+1 {{flash-fuse-moe: not fused into flash.moe: its weights are not a flash.top_k's values (or their flash.normalize)}}
  %y = flash.combine %rows, %w : tensor<?x2x32xbf16>, tensor<?x2xbf16> -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// -----

// The scores are not softmax or sigmoid of the logits.
func.func @relu_scores(%x: tensor<?x32xbf16>, %r: tensor<32x8xbf16>, %w1: tensor<8x32x16xbf16>,
                       %w2: tensor<8x16x32xbf16>) -> tensor<?x32xbf16> {
  %logits = flash.matmul %x, %r : tensor<?x32xbf16>, tensor<32x8xbf16> -> tensor<?x8xbf16>
  %p = flash.relu %logits : tensor<?x8xbf16>
  %w, %ids = flash.top_k %p k = 2 : tensor<?x8xbf16> -> tensor<?x2xbf16>, tensor<?x2xi32>
  %rows = flash.expert_ffn silu %x, %ids, %w1, %w2
      : (tensor<?x32xbf16>, tensor<?x2xi32>, tensor<8x32x16xbf16>, tensor<8x16x32xbf16>) -> tensor<?x2x32xbf16>
  // expected-warning @+1 {{flash-fuse-moe: not fused into flash.moe: flash.top_k does not read a flash.softmax or flash.sigmoid of the router's logits}}
  %y = flash.combine %rows, %w : tensor<?x2x32xbf16>, tensor<?x2xbf16> -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// -----

// A transposed router, or one that routes another input than the experts'.
func.func @transposed_router(%x: tensor<?x32xbf16>, %r: tensor<8x32xbf16>, %w1: tensor<8x32x16xbf16>,
                             %w2: tensor<8x16x32xbf16>) -> tensor<?x32xbf16> {
  %logits = flash.matmul %x, %r transpose_b : tensor<?x32xbf16>, tensor<8x32xbf16> -> tensor<?x8xbf16>
  %p = flash.softmax %logits : tensor<?x8xbf16>
  %w, %ids = flash.top_k %p k = 2 : tensor<?x8xbf16> -> tensor<?x2xbf16>, tensor<?x2xi32>
  %rows = flash.expert_ffn silu %x, %ids, %w1, %w2
      : (tensor<?x32xbf16>, tensor<?x2xi32>, tensor<8x32x16xbf16>, tensor<8x16x32xbf16>) -> tensor<?x2x32xbf16>
  // expected-warning @+1 {{flash-fuse-moe: not fused into flash.moe: the router matmul's router is not a static [d, E] weight, untransposed}}
  %y = flash.combine %rows, %w : tensor<?x2x32xbf16>, tensor<?x2xbf16> -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// -----

func.func @other_input(%x: tensor<?x32xbf16>, %z: tensor<?x32xbf16>, %r: tensor<32x8xbf16>, %w1: tensor<8x32x16xbf16>,
                       %w2: tensor<8x16x32xbf16>) -> tensor<?x32xbf16> {
  %logits = flash.matmul %z, %r : tensor<?x32xbf16>, tensor<32x8xbf16> -> tensor<?x8xbf16>
  %p = flash.softmax %logits : tensor<?x8xbf16>
  %w, %ids = flash.top_k %p k = 2 : tensor<?x8xbf16> -> tensor<?x2xbf16>, tensor<?x2xi32>
  %rows = flash.expert_ffn silu %x, %ids, %w1, %w2
      : (tensor<?x32xbf16>, tensor<?x2xi32>, tensor<8x32x16xbf16>, tensor<8x16x32xbf16>) -> tensor<?x2x32xbf16>
  // expected-warning @+1 {{flash-fuse-moe: not fused into flash.moe: the router reads another input than the experts}}
  %y = flash.combine %rows, %w : tensor<?x2x32xbf16>, tensor<?x2xbf16> -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

