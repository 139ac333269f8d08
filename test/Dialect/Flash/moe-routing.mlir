// A mixture of experts' graph spelling: flash.sigmoid, flash.top_k, flash.normalize, flash.expert_ffn and
// flash.combine parse and print back; every verifier error names the operand, the rule and the sizes.
// RUN: flash-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @routing
// CHECK: flash.sigmoid %{{.*}} : tensor<?x8xbf16>
// CHECK: flash.top_k %{{.*}} k = 2 : tensor<?x8xbf16> -> tensor<?x2xbf16>, tensor<?x2xi32>
// CHECK: flash.normalize %{{.*}} : tensor<?x2xbf16>
// CHECK: flash.expert_ffn silu %{{.*}}, %{{.*}}, %{{.*}} up %{{.*}}, %{{.*}} : (tensor<?x64xbf16>, tensor<?x2xi32>, tensor<8x64x96xbf16>, tensor<8x64x96xbf16>, tensor<8x96x40xbf16>) -> tensor<?x2x40xbf16>
// CHECK: flash.combine %{{.*}}, %{{.*}} : tensor<?x2x40xbf16>, tensor<?x2xbf16> -> tensor<?x40xbf16>
func.func @routing(%x: tensor<?x64xbf16>, %logits: tensor<?x8xbf16>, %wg: tensor<8x64x96xbf16>,
                   %wu: tensor<8x64x96xbf16>, %w2: tensor<8x96x40xbf16>) -> tensor<?x40xbf16> {
  %s = flash.sigmoid %logits : tensor<?x8xbf16>
  %w, %ids = flash.top_k %s k = 2 : tensor<?x8xbf16> -> tensor<?x2xbf16>, tensor<?x2xi32>
  %wn = flash.normalize %w : tensor<?x2xbf16>
  %rows = flash.expert_ffn silu %x, %ids, %wg up %wu, %w2
      : (tensor<?x64xbf16>, tensor<?x2xi32>, tensor<8x64x96xbf16>, tensor<8x64x96xbf16>, tensor<8x96x40xbf16>)
      -> tensor<?x2x40xbf16>
  %y = flash.combine %rows, %wn : tensor<?x2x40xbf16>, tensor<?x2xbf16> -> tensor<?x40xbf16>
  return %y : tensor<?x40xbf16>
}

// -----

func.func @k_too_large(%s: tensor<?x8xbf16>) {
  // expected-error @+1 {{k = 9 must be in [1, N = 8]}}
  %w, %ids = flash.top_k %s k = 9 : tensor<?x8xbf16> -> tensor<?x9xbf16>, tensor<?x9xi32>
  return
}

// -----

func.func @top_k_shape(%s: tensor<?x8xbf16>) {
  // expected-error @+1 {{indices has shape [?, 3], expected [T, k] = [?, 2]}}
  %w, %ids = flash.top_k %s k = 2 : tensor<?x8xbf16> -> tensor<?x2xbf16>, tensor<?x3xi32>
  return
}

// -----

func.func @ids_rows(%x: tensor<5x64xbf16>, %ids: tensor<4x2xi32>, %w1: tensor<8x64x96xbf16>,
                    %w2: tensor<8x96x40xbf16>) {
  // expected-error @+1 {{ids has shape [4, 2], expected [T, k] = [5, *]}}
  %rows = flash.expert_ffn silu %x, %ids, %w1, %w2
      : (tensor<5x64xbf16>, tensor<4x2xi32>, tensor<8x64x96xbf16>, tensor<8x96x40xbf16>) -> tensor<5x2x40xbf16>
  return
}

// -----

func.func @expert_count(%x: tensor<?x64xbf16>, %ids: tensor<?x2xi32>, %w1: tensor<8x64x96xbf16>,
                        %w2: tensor<4x96x40xbf16>) {
  // expected-error @+1 {{w2 has shape [4, 96, 40], expected [E, h, d_out] = [8, 96, *]}}
  %rows = flash.expert_ffn silu %x, %ids, %w1, %w2
      : (tensor<?x64xbf16>, tensor<?x2xi32>, tensor<8x64x96xbf16>, tensor<4x96x40xbf16>) -> tensor<?x2x40xbf16>
  return
}

// -----

func.func @combine_weights(%rows: tensor<?x2x40xbf16>, %w: tensor<?x4xbf16>) {
  // expected-error @+1 {{weights has shape [?, 4], expected [T, k] = [?, 2]}}
  %y = flash.combine %rows, %w : tensor<?x2x40xbf16>, tensor<?x4xbf16> -> tensor<?x40xbf16>
  return
}
