// flash.decode_attention: the two cache layouts parse and print back; every verifier error names the operand,
// the rule and the sizes.
// RUN: flash-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @paged
// CHECK: flash.decode_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} block_table %{{.*}} scale = 1.250000e-01 causal page_size = 64 num_kv_heads = 8
func.func @paged(%q: tensor<?x32x1x128xbf16>, %k: tensor<?x64x8x128xbf16>, %v: tensor<?x64x8x128xbf16>,
                 %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x32x1x128xbf16> {
  %out, %lse = flash.decode_attention %q, %k, %v, %lens block_table %table scale = 0.125 causal page_size = 64
      num_kv_heads = 8
      : (tensor<?x32x1x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?xi32>, tensor<?x?xi32>)
      -> (tensor<?x32x1x128xbf16>, tensor<?x32x1xf32>)
  return %out : tensor<?x32x1x128xbf16>
}

// -----

// CHECK-LABEL: func.func @contiguous
// CHECK: flash.decode_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scale = 1.250000e-01 num_kv_heads = 2
func.func @contiguous(%q: tensor<4x8x16x64xf16>, %k: tensor<4x2x?x64xf16>, %v: tensor<4x2x?x128xf16>,
                      %lens: tensor<4xi32>) -> tensor<4x8x16x128xf16> {
  %out, %lse = flash.decode_attention %q, %k, %v, %lens scale = 0.125 num_kv_heads = 2
      : (tensor<4x8x16x64xf16>, tensor<4x2x?x64xf16>, tensor<4x2x?x128xf16>, tensor<4xi32>)
      -> (tensor<4x8x16x128xf16>, tensor<4x8x16xf32>)
  return %out : tensor<4x8x16x128xf16>
}

// -----

func.func @too_many_tokens(%q: tensor<?x8x17x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>,
                           %lens: tensor<?xi32>) {
  // expected-error @+1 {{decodes 1 to 16 new tokens a sequence, got T = 17 (dimension 2 of query)}}
  %out, %lse = flash.decode_attention %q, %k, %v, %lens scale = 0.125 num_kv_heads = 2
      : (tensor<?x8x17x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?xi32>)
      -> (tensor<?x8x17x64xbf16>, tensor<?x8x17xf32>)
  return
}

// -----

func.func @head_dim(%q: tensor<?x8x1x96xbf16>, %k: tensor<?x2x?x96xbf16>, %v: tensor<?x2x?x96xbf16>,
                    %lens: tensor<?xi32>) {
  // expected-error @+1 {{head dim D = 96 is not supported by the decode kernels (multiples of 64 up to 256)}}
  %out, %lse = flash.decode_attention %q, %k, %v, %lens scale = 0.125 num_kv_heads = 2
      : (tensor<?x8x1x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?xi32>)
      -> (tensor<?x8x1x96xbf16>, tensor<?x8x1xf32>)
  return
}

// -----

func.func @f32(%q: tensor<?x8x1x64xf32>, %k: tensor<?x2x?x64xf32>, %v: tensor<?x2x?x64xf32>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{query must be bf16 or f16, got 'tensor<?x8x1x64xf32>'}}
  %out, %lse = flash.decode_attention %q, %k, %v, %lens scale = 0.125 num_kv_heads = 2
      : (tensor<?x8x1x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?xi32>)
      -> (tensor<?x8x1x64xf32>, tensor<?x8x1xf32>)
  return
}

// -----

func.func @page_size(%q: tensor<?x8x1x64xbf16>, %k: tensor<?x48x2x64xbf16>, %v: tensor<?x48x2x64xbf16>,
                     %lens: tensor<?xi32>, %table: tensor<?x?xi32>) {
  // expected-error @+1 {{page_size = 48 must be a power of two from 16 to 256}}
  %out, %lse = flash.decode_attention %q, %k, %v, %lens block_table %table scale = 0.125 page_size = 48
      num_kv_heads = 2
      : (tensor<?x8x1x64xbf16>, tensor<?x48x2x64xbf16>, tensor<?x48x2x64xbf16>, tensor<?xi32>, tensor<?x?xi32>)
      -> (tensor<?x8x1x64xbf16>, tensor<?x8x1xf32>)
  return
}

// -----

func.func @paged_without_table(%q: tensor<?x8x1x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x64xbf16>,
                               %lens: tensor<?xi32>) {
  // expected-error @+1 {{a paged cache (page_size = 16) needs a block_table [B, pages a sequence]}}
  %out, %lse = flash.decode_attention %q, %k, %v, %lens scale = 0.125 page_size = 16 num_kv_heads = 2
      : (tensor<?x8x1x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?xi32>)
      -> (tensor<?x8x1x64xbf16>, tensor<?x8x1xf32>)
  return
}

// -----

func.func @page_rows(%q: tensor<?x8x1x64xbf16>, %k: tensor<?x32x2x64xbf16>, %v: tensor<?x32x2x64xbf16>,
                     %lens: tensor<?xi32>, %table: tensor<?x?xi32>) {
  // expected-error @+1 {{key cache has shape [?, 32, 2, 64], expected [pages, P, Hkv, D] = [*, 16, 2, 64]}}
  %out, %lse = flash.decode_attention %q, %k, %v, %lens block_table %table scale = 0.125 page_size = 16
      num_kv_heads = 2
      : (tensor<?x8x1x64xbf16>, tensor<?x32x2x64xbf16>, tensor<?x32x2x64xbf16>, tensor<?xi32>, tensor<?x?xi32>)
      -> (tensor<?x8x1x64xbf16>, tensor<?x8x1xf32>)
  return
}

// -----

func.func @table_without_pages(%q: tensor<?x8x1x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>,
                               %lens: tensor<?xi32>, %table: tensor<?x?xi32>) {
  // expected-error @+1 {{block_table is for a paged cache: set page_size, or drop the table}}
  %out, %lse = flash.decode_attention %q, %k, %v, %lens block_table %table scale = 0.125 num_kv_heads = 2
      : (tensor<?x8x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?xi32>, tensor<?x?xi32>)
      -> (tensor<?x8x1x64xbf16>, tensor<?x8x1xf32>)
  return
}

// -----

func.func @heads(%q: tensor<?x6x1x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{query heads Hq = 6 must be a positive multiple of num_kv_heads = 4}}
  %out, %lse = flash.decode_attention %q, %k, %v, %lens scale = 0.125 num_kv_heads = 4
      : (tensor<?x6x1x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?xi32>)
      -> (tensor<?x6x1x64xbf16>, tensor<?x6x1xf32>)
  return
}

// -----

func.func @lens_batch(%q: tensor<2x8x1x64xbf16>, %k: tensor<2x2x?x64xbf16>, %v: tensor<2x2x?x64xbf16>,
                      %lens: tensor<3xi32>) {
  // expected-error @+1 {{cache_seqlens has shape [3], expected [B] = [2]}}
  %out, %lse = flash.decode_attention %q, %k, %v, %lens scale = 0.125 num_kv_heads = 2
      : (tensor<2x8x1x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16>, tensor<3xi32>)
      -> (tensor<2x8x1x64xbf16>, tensor<2x8x1xf32>)
  return
}

// -----

func.func @scale(%q: tensor<?x8x1x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %lens: tensor<?xi32>) {
  // expected-error @+1 {{scale must be positive and finite}}
  %out, %lse = flash.decode_attention %q, %k, %v, %lens scale = -1.0 num_kv_heads = 2
      : (tensor<?x8x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?xi32>)
      -> (tensor<?x8x1x64xbf16>, tensor<?x8x1xf32>)
  return
}
