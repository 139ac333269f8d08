// flash.kv_append: both cache layouts parse and print back; every verifier error names the operand, the rule and
// the sizes.
// RUN: flash-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @paged
// CHECK: flash.kv_append %{{.*}}, %{{.*}} into %{{.*}}, %{{.*}}, %{{.*}} page_size = 64 block_table %{{.*}} :
func.func @paged(%k: tensor<?x8x1x128xbf16>, %v: tensor<?x8x1x128xbf16>, %kc: tensor<?x64x8x128xbf16>,
                 %vc: tensor<?x64x8x128xbf16>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>)
    -> (tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>) {
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens page_size = 64 block_table %table
      : (tensor<?x8x1x128xbf16>, tensor<?x8x1x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>,
         tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>)
  return %k2, %v2 : tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>
}

// -----

// A contiguous cache, any number of new tokens (T dynamic), D = 40 (rows of five 16-byte pieces).
// CHECK-LABEL: func.func @contiguous
// CHECK: flash.kv_append %{{.*}}, %{{.*}} into %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x4x?x40xf16>
func.func @contiguous(%k: tensor<2x4x?x40xf16>, %v: tensor<2x4x?x40xf16>, %kc: tensor<2x4x?x40xf16>,
                      %vc: tensor<2x4x?x40xf16>, %lens: tensor<2xi32>) -> tensor<2x4x?x40xf16> {
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens
      : (tensor<2x4x?x40xf16>, tensor<2x4x?x40xf16>, tensor<2x4x?x40xf16>, tensor<2x4x?x40xf16>, tensor<2xi32>)
      -> (tensor<2x4x?x40xf16>, tensor<2x4x?x40xf16>)
  return %k2 : tensor<2x4x?x40xf16>
}

// -----

func.func @head_dim(%k: tensor<?x2x1x36xbf16>, %v: tensor<?x2x1x36xbf16>, %kc: tensor<?x2x?x36xbf16>,
                    %vc: tensor<?x2x?x36xbf16>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{head dim D = 36 must be a positive multiple of 8 (the append copies 16-byte pieces of rows)}}
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens
      : (tensor<?x2x1x36xbf16>, tensor<?x2x1x36xbf16>, tensor<?x2x?x36xbf16>, tensor<?x2x?x36xbf16>, tensor<?xi32>)
      -> (tensor<?x2x?x36xbf16>, tensor<?x2x?x36xbf16>)
  return
}

// -----

func.func @element_type(%k: tensor<?x2x1x64xf32>, %v: tensor<?x2x1x64xf32>, %kc: tensor<?x2x?x64xf32>,
                        %vc: tensor<?x2x?x64xf32>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{key must be bf16 or f16, got 'tensor<?x2x1x64xf32>'}}
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens
      : (tensor<?x2x1x64xf32>, tensor<?x2x1x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?xi32>)
      -> (tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>)
  return
}

// -----

func.func @mixed_types(%k: tensor<?x2x1x64xbf16>, %v: tensor<?x2x1x64xbf16>, %kc: tensor<?x2x?x64xf16>,
                       %vc: tensor<?x2x?x64xf16>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{key cache}}
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens
      : (tensor<?x2x1x64xbf16>, tensor<?x2x1x64xbf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?xi32>)
      -> (tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>)
  return
}

// -----

func.func @heads(%k: tensor<?x2x1x64xbf16>, %v: tensor<?x2x1x64xbf16>, %kc: tensor<?x4x?x64xbf16>,
                 %vc: tensor<?x4x?x64xbf16>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{key cache has shape [?, 4, ?, 64], expected [B, Hkv, S, D] = [?, 2, *, 64]}}
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens
      : (tensor<?x2x1x64xbf16>, tensor<?x2x1x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?xi32>)
      -> (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>)
  return
}

// -----

func.func @value_tokens(%k: tensor<?x2x2x64xbf16>, %v: tensor<?x2x3x64xbf16>, %kc: tensor<?x2x?x64xbf16>,
                        %vc: tensor<?x2x?x64xbf16>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{value has shape [?, 2, 3, 64], expected [B, Hkv, T, Dv] = [?, 2, 2, 64]}}
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens
      : (tensor<?x2x2x64xbf16>, tensor<?x2x3x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?xi32>)
      -> (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>)
  return
}

// -----

func.func @no_table(%k: tensor<?x2x1x64xbf16>, %v: tensor<?x2x1x64xbf16>, %kc: tensor<?x16x2x64xbf16>,
                    %vc: tensor<?x16x2x64xbf16>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{a paged cache (page_size = 16) needs a block_table [B, pages a sequence]}}
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens page_size = 16
      : (tensor<?x2x1x64xbf16>, tensor<?x2x1x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?xi32>)
      -> (tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>)
  return
}

// -----

func.func @page_size(%k: tensor<?x2x1x64xbf16>, %v: tensor<?x2x1x64xbf16>, %kc: tensor<?x24x2x64xbf16>,
                     %vc: tensor<?x24x2x64xbf16>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>) {
  // expected-error @+1 {{page_size = 24 must be a power of two from 16 to 256}}
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens page_size = 24 block_table %table
      : (tensor<?x2x1x64xbf16>, tensor<?x2x1x64xbf16>, tensor<?x24x2x64xbf16>, tensor<?x24x2x64xbf16>, tensor<?xi32>,
         tensor<?x?xi32>) -> (tensor<?x24x2x64xbf16>, tensor<?x24x2x64xbf16>)
  return
}

// -----

func.func @lengths(%k: tensor<3x2x1x64xbf16>, %v: tensor<3x2x1x64xbf16>, %kc: tensor<3x2x?x64xbf16>,
                   %vc: tensor<3x2x?x64xbf16>, %lens: tensor<4xi32>) {
  // expected-error @+1 {{cache_seqlens has shape [4], expected [B] = [3]}}
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens
      : (tensor<3x2x1x64xbf16>, tensor<3x2x1x64xbf16>, tensor<3x2x?x64xbf16>, tensor<3x2x?x64xbf16>, tensor<4xi32>)
      -> (tensor<3x2x?x64xbf16>, tensor<3x2x?x64xbf16>)
  return
}

// -----

func.func @zero_tokens(%k: tensor<?x2x0x64xbf16>, %v: tensor<?x2x0x64xbf16>, %kc: tensor<?x2x?x64xbf16>,
                       %vc: tensor<?x2x?x64xbf16>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{appends at least one new token a sequence, got T = 0 (dimension 2 of key)}}
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens
      : (tensor<?x2x0x64xbf16>, tensor<?x2x0x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?xi32>)
      -> (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>)
  return
}

// -----

func.func @result_type(%k: tensor<?x2x1x64xbf16>, %v: tensor<?x2x1x64xbf16>, %kc: tensor<?x2x?x64xbf16>,
                       %vc: tensor<?x2x?x64xbf16>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{results must have the caches' types}}
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens
      : (tensor<?x2x1x64xbf16>, tensor<?x2x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?xi32>)
      -> (tensor<?x2x8x64xbf16>, tensor<?x2x?x64xbf16>)
  return
}
