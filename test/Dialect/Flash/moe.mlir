// flash.moe: gated and plain experts parse and print back; every verifier error names the operand, the rule and
// the sizes.
// RUN: flash-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @mixtral
// CHECK: flash.moe silu %{{.*}}, %{{.*}}, %{{.*}} up %{{.*}}, %{{.*}} top_k = 2 gating = softmax renormalize :
func.func @mixtral(%x: tensor<?x64xbf16>, %router: tensor<64x8xbf16>, %wg: tensor<8x64x96xbf16>,
                   %wu: tensor<8x64x96xbf16>, %wd: tensor<8x96x64xbf16>) -> tensor<?x64xbf16> {
  %y = flash.moe silu %x, %router, %wg up %wu, %wd top_k = 2 gating = softmax renormalize
      : (tensor<?x64xbf16>, tensor<64x8xbf16>, tensor<8x64x96xbf16>, tensor<8x64x96xbf16>, tensor<8x96x64xbf16>)
      -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// CHECK-LABEL: func.func @plain_sigmoid
// CHECK: flash.moe gelu_tanh %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} top_k = 6 gating = sigmoid :
func.func @plain_sigmoid(%x: tensor<16x32xf16>, %router: tensor<32x64xf16>, %w1: tensor<64x32x48xf16>,
                         %w2: tensor<64x48x40xf16>) -> tensor<16x40xf16> {
  %y = flash.moe gelu_tanh %x, %router, %w1, %w2 top_k = 6 gating = sigmoid
      : (tensor<16x32xf16>, tensor<32x64xf16>, tensor<64x32x48xf16>, tensor<64x48x40xf16>) -> tensor<16x40xf16>
  return %y : tensor<16x40xf16>
}

// -----

func.func @top_k(%x: tensor<?x64xbf16>, %router: tensor<64x8xbf16>, %w1: tensor<8x64x96xbf16>,
                 %w2: tensor<8x96x64xbf16>) {
  // expected-error @+1 {{top_k = 9 must be in [1, E = 8]}}
  %y = flash.moe silu %x, %router, %w1, %w2 top_k = 9 gating = softmax
      : (tensor<?x64xbf16>, tensor<64x8xbf16>, tensor<8x64x96xbf16>, tensor<8x96x64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @experts(%x: tensor<?x64xbf16>, %router: tensor<64x8xbf16>, %w1: tensor<4x64x96xbf16>,
                   %w2: tensor<8x96x64xbf16>) {
  // expected-error @+1 {{w1 has shape [4, 64, 96], expected [E, d, h] = [8, 64, *]}}
  %y = flash.moe silu %x, %router, %w1, %w2 top_k = 2 gating = softmax
      : (tensor<?x64xbf16>, tensor<64x8xbf16>, tensor<4x64x96xbf16>, tensor<8x96x64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @model_dim(%x: tensor<?x32xbf16>, %router: tensor<64x8xbf16>, %w1: tensor<8x64x96xbf16>,
                     %w2: tensor<8x96x64xbf16>) {
  // expected-error @+1 {{router has shape [64, 8], expected [d, E] = [32, *]}}
  %y = flash.moe silu %x, %router, %w1, %w2 top_k = 2 gating = softmax
      : (tensor<?x32xbf16>, tensor<64x8xbf16>, tensor<8x64x96xbf16>, tensor<8x96x64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @up_shape(%x: tensor<?x64xbf16>, %router: tensor<64x8xbf16>, %w1: tensor<8x64x96xbf16>,
                    %wu: tensor<8x64x32xbf16>, %w2: tensor<8x96x64xbf16>) {
  // expected-error @+1 {{w_up has shape [8, 64, 32], expected [E, d, h] = [8, 64, 96]}}
  %y = flash.moe silu %x, %router, %w1 up %wu, %w2 top_k = 2 gating = softmax
      : (tensor<?x64xbf16>, tensor<64x8xbf16>, tensor<8x64x96xbf16>, tensor<8x64x32xbf16>, tensor<8x96x64xbf16>)
      -> tensor<?x64xbf16>
  return
}

// -----

func.func @dynamic_weights(%x: tensor<?x64xbf16>, %router: tensor<64x?xbf16>, %w1: tensor<8x64x96xbf16>,
                           %w2: tensor<8x96x64xbf16>) {
  // expected-error @+1 {{router must have a static shape [d, E], got 'tensor<64x?xbf16>'}}
  %y = flash.moe silu %x, %router, %w1, %w2 top_k = 2 gating = softmax
      : (tensor<?x64xbf16>, tensor<64x?xbf16>, tensor<8x64x96xbf16>, tensor<8x96x64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @result(%x: tensor<?x64xbf16>, %router: tensor<64x8xbf16>, %w1: tensor<8x64x96xbf16>,
                  %w2: tensor<8x96x64xbf16>) {
  // expected-error @+1 {{result has shape [?, 32], expected [T, d_out] = [?, 64]}}
  %y = flash.moe silu %x, %router, %w1, %w2 top_k = 2 gating = softmax
      : (tensor<?x64xbf16>, tensor<64x8xbf16>, tensor<8x64x96xbf16>, tensor<8x96x64xbf16>) -> tensor<?x32xbf16>
  return
}

// -----

func.func @element_type(%x: tensor<?x64xbf16>, %router: tensor<64x8xf32>, %w1: tensor<8x64x96xbf16>,
                        %w2: tensor<8x96x64xbf16>) {
  // expected-error @+1 {{router}}
  %y = flash.moe silu %x, %router, %w1, %w2 top_k = 2 gating = softmax
      : (tensor<?x64xbf16>, tensor<64x8xf32>, tensor<8x64x96xbf16>, tensor<8x96x64xbf16>) -> tensor<?x64xbf16>
  return
}
