// Every verifier error of the flash dialect names the operand and the
// expected shape.
// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @matmul_rank1(%a: tensor<8xf32>, %b: tensor<8x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{lhs must have rank 2 to 4 [..., M, K], got 'tensor<8xf32>'}}
  %0 = flash.matmul %a, %b : tensor<8xf32>, tensor<8x4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @matmul_rank5(%a: tensor<1x2x3x4x5xf32>, %b: tensor<5x4xf32>) -> tensor<1x2x3x4x4xf32> {
  // expected-error @+1 {{lhs must have rank 2 to 4 [..., M, K]}}
  %0 = flash.matmul %a, %b : tensor<1x2x3x4x5xf32>, tensor<5x4xf32> -> tensor<1x2x3x4x4xf32>
  return %0 : tensor<1x2x3x4x4xf32>
}

// -----

func.func @matmul_rank_mix(%a: tensor<2x4x8x16xf32>, %b: tensor<4x16x8xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{rhs must have rank 2 (shared by every lhs batch slice) or the rank of lhs (4), got 'tensor<4x16x8xf32>'}}
  %0 = flash.matmul %a, %b : tensor<2x4x8x16xf32>, tensor<4x16x8xf32> -> tensor<2x4x8x8xf32>
  return %0 : tensor<2x4x8x8xf32>
}

// -----

func.func @matmul_dtype(%a: tensor<8x16xf32>, %b: tensor<16x4xbf16>) -> tensor<8x4xf32> {
  // expected-error @+1 {{rhs has element type 'bf16', expected 'f32' (that of lhs)}}
  %0 = flash.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xbf16> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @matmul_int(%a: tensor<8x16xi32>, %b: tensor<16x4xi32>) -> tensor<8x4xi32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of bfloat16 type or 16-bit float or 32-bit float values}}
  %0 = flash.matmul %a, %b : tensor<8x16xi32>, tensor<16x4xi32> -> tensor<8x4xi32>
  return %0 : tensor<8x4xi32>
}

// -----

func.func @matmul_contraction(%q: tensor<2x4x8x64xf32>, %k: tensor<2x4x8x128xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{contraction sizes differ: lhs [2, 4, 8, 64] read as [..., M, K] has K = 64, rhs [2, 4, 8, 128] read as [..., N, K] has K = 128}}
  %0 = flash.matmul %q, %k transpose_b : tensor<2x4x8x64xf32>, tensor<2x4x8x128xf32> -> tensor<2x4x8x8xf32>
  return %0 : tensor<2x4x8x8xf32>
}

// -----

func.func @matmul_group(%q: tensor<2x6x8x64xf32>, %k: tensor<2x4x8x64xf32>) -> tensor<2x6x8x8xf32> {
  // expected-error @+1 {{batch dimension 1: lhs size 6 must equal rhs size 4 or be a multiple of it (grouped broadcast)}}
  %0 = flash.matmul %q, %k transpose_b : tensor<2x6x8x64xf32>, tensor<2x4x8x64xf32> -> tensor<2x6x8x8xf32>
  return %0 : tensor<2x6x8x8xf32>
}

// -----

func.func @matmul_group_reversed(%q: tensor<2x4x8x64xf32>, %k: tensor<2x8x8x64xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{batch dimension 1: lhs size 4 must equal rhs size 8 or be a multiple of it (grouped broadcast)}}
  %0 = flash.matmul %q, %k transpose_b : tensor<2x4x8x64xf32>, tensor<2x8x8x64xf32> -> tensor<2x4x8x8xf32>
  return %0 : tensor<2x4x8x8xf32>
}

// -----

func.func @matmul_result(%a: tensor<?x8x16xf32>, %b: tensor<16x4xf32>) -> tensor<?x8x5xf32> {
  // expected-error @+1 {{result has shape [?, 8, 5], expected [..., M, N] = [?, 8, 4]}}
  %0 = flash.matmul %a, %b : tensor<?x8x16xf32>, tensor<16x4xf32> -> tensor<?x8x5xf32>
  return %0 : tensor<?x8x5xf32>
}

// -----

func.func @matmul_result_rank(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<1x8x4xf32> {
  // expected-error @+1 {{result must have rank 2 [..., M, N], got 'tensor<1x8x4xf32>'}}
  %0 = flash.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<1x8x4xf32>
  return %0 : tensor<1x8x4xf32>
}

// -----

func.func @scale_inf(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{factor must be finite, got INF}}
  %0 = flash.scale %x by 0x7FF0000000000000 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @mask_rank(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{input must have rank >= 2 [..., Sq, Sk], got 'tensor<4xf32>'}}
  %0 = flash.mask %x <causal> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @mask_unbounded(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{sliding_window with both sides unbounded masks nothing; use #flash.mask<none>}}
  %0 = flash.mask %x <sliding_window, left = -1, right = -1> : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @mask_negative(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{sliding_window extents must be >= 0, or -1 for unbounded; got left = -5, right = 0}}
  %0 = flash.mask %x <sliding_window, left = -5, right = 0> : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// A window wider than 32-bit device indices overflowed the kernels' position
// arithmetic (INT64_MAX crashed flashc's kernel builder).
func.func @mask_too_wide(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{sliding_window extents must be at most 1073741823 (use -1 for an unbounded side); got left = 9223372036854775807, right = 0}}
  %0 = flash.mask %x <sliding_window, left = 9223372036854775807, right = 0> : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @mask_kind(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{expected mask kind 'none', 'causal' or 'sliding_window', got 'diagonal'}}
  %0 = flash.mask %x <diagonal> : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @mask_window_missing(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{expected ','}}
  %0 = flash.mask %x <sliding_window> : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @softmax_rank0(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{input must have rank >= 1 [..., N], got 'tensor<f32>'}}
  %0 = flash.softmax %x : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @add_bias(%x: tensor<?x4096xbf16>, %b: tensor<1024xbf16>) -> tensor<?x4096xbf16> {
  // expected-error @+1 {{rhs has shape [1024], expected the shape of lhs [?, 4096] or of its trailing dimensions (a bias)}}
  %0 = flash.add %x, %b : tensor<?x4096xbf16>, tensor<1024xbf16>
  return %0 : tensor<?x4096xbf16>
}

// -----

func.func @add_dtype(%x: tensor<4x8xbf16>, %b: tensor<8xf32>) -> tensor<4x8xbf16> {
  // expected-error @+1 {{rhs has element type 'f32', expected 'bf16' (that of lhs)}}
  %0 = flash.add %x, %b : tensor<4x8xbf16>, tensor<8xf32>
  return %0 : tensor<4x8xbf16>
}

// -----

func.func @mul_types(%a: tensor<4x8xbf16>, %b: tensor<4x8xf16>) -> tensor<4x8xbf16> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "flash.mul"(%a, %b) : (tensor<4x8xbf16>, tensor<4x8xf16>) -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// -----

func.func @attention_query_rank(%q: tensor<4x8x64xf32>, %k: tensor<1x4x8x64xf32>, %v: tensor<1x4x8x64xf32>)
    -> (tensor<1x4x8x64xf32>, tensor<1x4x8xf32>) {
  // expected-error @+1 {{query must have rank 4 [B, Hq, Sq, D], got 'tensor<4x8x64xf32>'}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>) -> (tensor<1x4x8x64xf32>, tensor<1x4x8xf32>)
  return %o, %l : tensor<1x4x8x64xf32>, tensor<1x4x8xf32>
}

// -----

func.func @attention_head_dim(%q: tensor<?x4x?x64xf32>, %k: tensor<?x4x?x128xf32>, %v: tensor<?x4x?x64xf32>)
    -> (tensor<?x4x?x64xf32>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{key has shape [?, 4, ?, 128], expected [B, Hkv, Sk, D] = [?, *, *, 64]}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x?x64xf32>, tensor<?x4x?x128xf32>, tensor<?x4x?x64xf32>) -> (tensor<?x4x?x64xf32>, tensor<?x4x?xf32>)
  return %o, %l : tensor<?x4x?x64xf32>, tensor<?x4x?xf32>
}

// -----

func.func @attention_key_offset_type(%q: tensor<?x4x?x64xf32>, %k: tensor<?x4x?x64xf32>, %off: i64)
    -> (tensor<?x4x?x64xf32>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{operand #3 must be 32-bit signless integer, but got 'i64'}}
  %o, %l = flash.attention %q, %k, %k key_offset = %off scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, i64) -> (tensor<?x4x?x64xf32>, tensor<?x4x?xf32>)
  return %o, %l : tensor<?x4x?x64xf32>, tensor<?x4x?xf32>
}

// -----

func.func @attention_batch(%q: tensor<2x4x8x64xf32>, %k: tensor<3x4x8x64xf32>, %v: tensor<3x4x8x64xf32>)
    -> (tensor<2x4x8x64xf32>, tensor<2x4x8xf32>) {
  // expected-error @+1 {{key has shape [3, 4, 8, 64], expected [B, Hkv, Sk, D] = [2, *, *, 64]}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<2x4x8x64xf32>, tensor<3x4x8x64xf32>, tensor<3x4x8x64xf32>) -> (tensor<2x4x8x64xf32>, tensor<2x4x8xf32>)
  return %o, %l : tensor<2x4x8x64xf32>, tensor<2x4x8xf32>
}

// -----

func.func @attention_value_heads(%q: tensor<?x8x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x2x?x64xf32>)
    -> (tensor<?x8x?x64xf32>, tensor<?x8x?xf32>) {
  // expected-error @+1 {{value has shape [?, 2, ?, 64], expected [B, Hkv, Sk, Dv] = [?, 4, ?, *]}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x8x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x2x?x64xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?xf32>)
  return %o, %l : tensor<?x8x?x64xf32>, tensor<?x8x?xf32>
}

// -----

func.func @attention_value_seq(%q: tensor<1x4x8x64xf32>, %k: tensor<1x4x16x64xf32>, %v: tensor<1x4x15x64xf32>)
    -> (tensor<1x4x8x64xf32>, tensor<1x4x8xf32>) {
  // expected-error @+1 {{value has shape [1, 4, 15, 64], expected [B, Hkv, Sk, Dv] = [1, 4, 16, *]}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<1x4x8x64xf32>, tensor<1x4x16x64xf32>, tensor<1x4x15x64xf32>) -> (tensor<1x4x8x64xf32>, tensor<1x4x8xf32>)
  return %o, %l : tensor<1x4x8x64xf32>, tensor<1x4x8xf32>
}

// -----

func.func @attention_groups(%q: tensor<?x6x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x64xf32>)
    -> (tensor<?x6x?x64xf32>, tensor<?x6x?xf32>) {
  // expected-error @+1 {{query heads Hq = 6 must be a positive multiple of key/value heads Hkv = 4}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x6x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>) -> (tensor<?x6x?x64xf32>, tensor<?x6x?xf32>)
  return %o, %l : tensor<?x6x?x64xf32>, tensor<?x6x?xf32>
}

// -----

// Zero query heads: 0 is a multiple of every Hkv, but no kernel can run it.
func.func @attention_zero_heads(%q: tensor<?x0x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x64xf32>)
    -> (tensor<?x0x?x64xf32>, tensor<?x0x?xf32>) {
  // expected-error @+1 {{query heads Hq = 0 must be a positive multiple of key/value heads Hkv = 4}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x0x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>) -> (tensor<?x0x?x64xf32>, tensor<?x0x?xf32>)
  return %o, %l : tensor<?x0x?x64xf32>, tensor<?x0x?xf32>
}

// -----

// A zero head dim compiled to kernels NVRTC rejected (or, in the tile IR, to nothing).
func.func @attention_zero_head_dim(%q: tensor<?x4x?x0xbf16>, %k: tensor<?x4x?x0xbf16>, %v: tensor<?x4x?x0xbf16>)
    -> (tensor<?x4x?x0xbf16>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{head dims must be positive, got D = 0 (query, key) and Dv = 0 (value)}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x?x0xbf16>, tensor<?x4x?x0xbf16>, tensor<?x4x?x0xbf16>) -> (tensor<?x4x?x0xbf16>, tensor<?x4x?xf32>)
  return %o, %l : tensor<?x4x?x0xbf16>, tensor<?x4x?xf32>
}

// -----

// A negative num_kv_heads is printed as written, not as a 64-bit unsigned.
func.func @attention_negative_kv_heads(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{num_kv_heads = -4 does not match Hkv = 4 (dimension 1 of key)}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = -4
      : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o, %l : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}

// -----

func.func @attention_num_kv_heads(%q: tensor<?x8x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x64xf32>)
    -> (tensor<?x8x?x64xf32>, tensor<?x8x?xf32>) {
  // expected-error @+1 {{num_kv_heads = 2 does not match Hkv = 4 (dimension 1 of key)}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<?x8x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?xf32>)
  return %o, %l : tensor<?x8x?x64xf32>, tensor<?x8x?xf32>
}

// -----

func.func @attention_dynamic_heads(%q: tensor<?x?x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x64xf32>)
    -> (tensor<?x?x?x64xf32>, tensor<?x?x?xf32>) {
  // expected-error @+1 {{query must have static heads Hq and head dim D in [B, Hq, Sq, D], got 'tensor<?x?x?x64xf32>'}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x?x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>) -> (tensor<?x?x?x64xf32>, tensor<?x?x?xf32>)
  return %o, %l : tensor<?x?x?x64xf32>, tensor<?x?x?xf32>
}

// -----

func.func @attention_dynamic_kv_heads(%q: tensor<?x8x?x64xf32>, %k: tensor<?x?x?x64xf32>, %v: tensor<?x?x?x64xf32>)
    -> (tensor<?x8x?x64xf32>, tensor<?x8x?xf32>) {
  // expected-error @+1 {{key must have static heads Hkv and head dim D in [B, Hkv, Sk, D], got 'tensor<?x?x?x64xf32>'}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x8x?x64xf32>, tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?xf32>)
  return %o, %l : tensor<?x8x?x64xf32>, tensor<?x8x?xf32>
}

// -----

// A key whose head dim is dynamic (the query's is 64): the kernels need it static (it was accepted, and the kernel
// recipe failed later with an internal message).
func.func @attention_dynamic_key_head_dim(%q: tensor<1x2x8x64xbf16>, %k: tensor<1x2x8x?xbf16>, %v: tensor<1x2x8x64xbf16>)
    -> (tensor<1x2x8x64xbf16>, tensor<1x2x8xf32>) {
  // expected-error @+1 {{key must have static heads Hkv and head dim D in [B, Hkv, Sk, D], got 'tensor<1x2x8x?xbf16>'}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<1x2x8x64xbf16>, tensor<1x2x8x?xbf16>, tensor<1x2x8x64xbf16>) -> (tensor<1x2x8x64xbf16>, tensor<1x2x8xf32>)
  return %o, %l : tensor<1x2x8x64xbf16>, tensor<1x2x8xf32>
}

// -----

func.func @attention_dynamic_value_dim(%q: tensor<?x8x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x?xf32>)
    -> (tensor<?x8x?x?xf32>, tensor<?x8x?xf32>) {
  // expected-error @+1 {{value must have a static head dim Dv in [B, Hkv, Sk, Dv], got 'tensor<?x4x?x?xf32>'}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x8x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x?xf32>) -> (tensor<?x8x?x?xf32>, tensor<?x8x?xf32>)
  return %o, %l : tensor<?x8x?x?xf32>, tensor<?x8x?xf32>
}

// -----

func.func @attention_dtype(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x4x?x64xf16>, %v: tensor<?x4x?x64xbf16>)
    -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  // expected-error @+1 {{key has element type 'f16', expected 'bf16' (that of query)}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x8x?x64xbf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xbf16>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>)
  return %o, %l : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}

// -----

func.func @attention_output(%q: tensor<?x8x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x32xf32>)
    -> (tensor<?x8x?x64xf32>, tensor<?x8x?xf32>) {
  // expected-error @+1 {{output has shape [?, 8, ?, 64], expected [B, Hq, Sq, Dv] = [?, 8, ?, 32]}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x8x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x32xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?xf32>)
  return %o, %l : tensor<?x8x?x64xf32>, tensor<?x8x?xf32>
}

// -----

func.func @attention_lse_shape(%q: tensor<2x8x16x64xf32>, %k: tensor<2x4x16x64xf32>, %v: tensor<2x4x16x64xf32>)
    -> (tensor<2x8x16x64xf32>, tensor<2x8x17xf32>) {
  // expected-error @+1 {{lse has shape [2, 8, 17], expected [B, Hq, Sq] = [2, 8, 16]}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<2x8x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>) -> (tensor<2x8x16x64xf32>, tensor<2x8x17xf32>)
  return %o, %l : tensor<2x8x16x64xf32>, tensor<2x8x17xf32>
}

// -----

func.func @attention_lse_dtype(%q: tensor<2x8x16x64xbf16>, %k: tensor<2x4x16x64xbf16>, %v: tensor<2x4x16x64xbf16>)
    -> (tensor<2x8x16x64xbf16>, tensor<2x8x16xbf16>) {
  // expected-error @+1 {{result #1 must be ranked tensor of 32-bit float values}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<2x8x16x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x64xbf16>) -> (tensor<2x8x16x64xbf16>, tensor<2x8x16xbf16>)
  return %o, %l : tensor<2x8x16x64xbf16>, tensor<2x8x16xbf16>
}

// -----

func.func @attention_scale(%q: tensor<?x4x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x64xf32>)
    -> (tensor<?x4x?x64xf32>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{scale must be a finite positive number, got -1.250000e-01}}
  %o, %l = flash.attention %q, %k, %v scale = -0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>) -> (tensor<?x4x?x64xf32>, tensor<?x4x?xf32>)
  return %o, %l : tensor<?x4x?x64xf32>, tensor<?x4x?xf32>
}

// -----

// A finite scale whose product with log2(e) leaves the f32 range: the emitted
// CUDA held an out-of-range float constant NVRTC rejected. The bound is the
// tile dialect's for every scale-like attribute (TileLimits.h).
func.func @attention_scale_too_large(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{scale = 3.000000e+38 is too large: at most 1.000000e+30 (the kernels fold scale·log2(e) into one f32 constant)}}
  %o, %l = flash.attention %q, %k, %v scale = 3.0e+38 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o, %l : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}

// -----

// A softcap past the same bound: refused here, not by a tile verifier later.
func.func @attention_softcap_too_large(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{softcap = 1.000000e+35 is too large: at most 1.000000e+30}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> softcap = 1.0e+35 num_kv_heads = 4
      : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o, %l : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}

// -----

// Static zero sizes compiled to bundles that compute nothing; a `?` size may
// still be 0 at run time.
func.func @attention_zero_batch(%q: tensor<0x4x?x64xbf16>, %k: tensor<0x4x?x64xbf16>, %v: tensor<0x4x?x64xbf16>)
    -> (tensor<0x4x?x64xbf16>, tensor<0x4x?xf32>) {
  // expected-error @+1 {{query [B, Hq, Sq, D] has a static size of 0 (B) in 'tensor<0x4x?x64xbf16>': static sizes must be positive (use ? for a size that may be 0 at run time)}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<0x4x?x64xbf16>, tensor<0x4x?x64xbf16>, tensor<0x4x?x64xbf16>) -> (tensor<0x4x?x64xbf16>, tensor<0x4x?xf32>)
  return %o, %l : tensor<0x4x?x64xbf16>, tensor<0x4x?xf32>
}

// -----

func.func @attention_zero_query_length(%q: tensor<?x4x0x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>)
    -> (tensor<?x4x0x64xbf16>, tensor<?x4x0xf32>) {
  // expected-error @+1 {{query [B, Hq, Sq, D] has a static size of 0 (Sq)}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x0x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>) -> (tensor<?x4x0x64xbf16>, tensor<?x4x0xf32>)
  return %o, %l : tensor<?x4x0x64xbf16>, tensor<?x4x0xf32>
}

// -----

func.func @attention_zero_key_length(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x0x64xbf16>, %v: tensor<?x4x0x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{key [B, Hkv, Sk, D] has a static size of 0 (Sk)}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x?x64xbf16>, tensor<?x4x0x64xbf16>, tensor<?x4x0x64xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o, %l : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}

// -----

func.func @attention_softcap(%q: tensor<?x4x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x64xf32>)
    -> (tensor<?x4x?x64xf32>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{softcap must be 0 (none) or a finite positive number, got -3.000000e+01}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> softcap = -30.0 num_kv_heads = 4
      : (tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>) -> (tensor<?x4x?x64xf32>, tensor<?x4x?xf32>)
  return %o, %l : tensor<?x4x?x64xf32>, tensor<?x4x?xf32>
}

// -----

func.func @ffn_input_rank(%x: tensor<1024xbf16>, %w1: tensor<1024x4096xbf16>, %w2: tensor<4096x1024xbf16>) -> tensor<1024xbf16> {
  // expected-error @+1 {{input must have rank >= 2 [..., M, d], got 'tensor<1024xbf16>'}}
  %0 = flash.ffn relu %x, %w1, %w2 : (tensor<1024xbf16>, tensor<1024x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<1024xbf16>
  return %0 : tensor<1024xbf16>
}

// -----

func.func @ffn_w1(%x: tensor<?x1024xbf16>, %w1: tensor<512x4096xbf16>, %w2: tensor<4096x1024xbf16>) -> tensor<?x1024xbf16> {
  // expected-error @+1 {{w1 has shape [512, 4096], expected [d, h] = [1024, *]}}
  %0 = flash.ffn gelu_tanh %x, %w1, %w2 : (tensor<?x1024xbf16>, tensor<512x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<?x1024xbf16>
  return %0 : tensor<?x1024xbf16>
}

// -----

func.func @ffn_w1_dynamic(%x: tensor<?x1024xbf16>, %w1: tensor<1024x?xbf16>, %w2: tensor<4096x1024xbf16>) -> tensor<?x1024xbf16> {
  // expected-error @+1 {{w1 must have a static shape [d, h], got 'tensor<1024x?xbf16>'}}
  %0 = flash.ffn gelu_tanh %x, %w1, %w2 : (tensor<?x1024xbf16>, tensor<1024x?xbf16>, tensor<4096x1024xbf16>) -> tensor<?x1024xbf16>
  return %0 : tensor<?x1024xbf16>
}

// -----

func.func @ffn_b1(%x: tensor<?x1024xbf16>, %w1: tensor<1024x4096xbf16>, %b1: tensor<1024xbf16>, %w2: tensor<4096x1024xbf16>) -> tensor<?x1024xbf16> {
  // expected-error @+1 {{b1 has shape [1024], expected [h] = [4096]}}
  %0 = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 : (tensor<?x1024xbf16>, tensor<1024x4096xbf16>, tensor<1024xbf16>, tensor<4096x1024xbf16>) -> tensor<?x1024xbf16>
  return %0 : tensor<?x1024xbf16>
}

// -----

func.func @ffn_gated_b1(%x: tensor<?x1024xbf16>, %w1: tensor<1024x4096xbf16>, %b1: tensor<4096xbf16>, %w2: tensor<4096x1024xbf16>) -> tensor<?x1024xbf16> {
  // expected-error @+1 {{the gated form (with an up projection) takes no b1}}
  %0 = flash.ffn silu %x, %w1 bias %b1 up %w1, %w2 : (tensor<?x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096xbf16>, tensor<1024x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<?x1024xbf16>
  return %0 : tensor<?x1024xbf16>
}

// -----

func.func @ffn_up(%x: tensor<?x1024xbf16>, %w1: tensor<1024x4096xbf16>, %wu: tensor<1024x2048xbf16>, %w2: tensor<4096x1024xbf16>) -> tensor<?x1024xbf16> {
  // expected-error @+1 {{w_up has shape [1024, 2048], expected [d, h] = [1024, 4096]}}
  %0 = flash.ffn silu %x, %w1 up %wu, %w2 : (tensor<?x1024xbf16>, tensor<1024x4096xbf16>, tensor<1024x2048xbf16>, tensor<4096x1024xbf16>) -> tensor<?x1024xbf16>
  return %0 : tensor<?x1024xbf16>
}

// -----

func.func @ffn_w2(%x: tensor<?x1024xbf16>, %w1: tensor<1024x4096xbf16>, %w2: tensor<2048x1024xbf16>) -> tensor<?x1024xbf16> {
  // expected-error @+1 {{w2 has shape [2048, 1024], expected [h, d_out] = [4096, *]}}
  %0 = flash.ffn relu %x, %w1, %w2 : (tensor<?x1024xbf16>, tensor<1024x4096xbf16>, tensor<2048x1024xbf16>) -> tensor<?x1024xbf16>
  return %0 : tensor<?x1024xbf16>
}

// -----

func.func @ffn_w2_rank(%x: tensor<?x1024xbf16>, %w1: tensor<1024x4096xbf16>, %w2: tensor<1x4096x1024xbf16>) -> tensor<?x1024xbf16> {
  // expected-error @+1 {{w2 must have rank 2 [h, d_out], got 'tensor<1x4096x1024xbf16>'}}
  %0 = flash.ffn relu %x, %w1, %w2 : (tensor<?x1024xbf16>, tensor<1024x4096xbf16>, tensor<1x4096x1024xbf16>) -> tensor<?x1024xbf16>
  return %0 : tensor<?x1024xbf16>
}

// -----

func.func @ffn_b2(%x: tensor<?x1024xbf16>, %w1: tensor<1024x4096xbf16>, %w2: tensor<4096x1024xbf16>, %b2: tensor<4096xbf16>) -> tensor<?x1024xbf16> {
  // expected-error @+1 {{b2 has shape [4096], expected [d_out] = [1024]}}
  %0 = flash.ffn relu %x, %w1, %w2 bias %b2 : (tensor<?x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096x1024xbf16>, tensor<4096xbf16>) -> tensor<?x1024xbf16>
  return %0 : tensor<?x1024xbf16>
}

// -----

// h = 0 compiled silently to a bundle (y = b2, from kernels over empty tiles).
func.func @ffn_zero_hidden(%x: tensor<?x1024xbf16>, %w1: tensor<1024x0xbf16>, %w2: tensor<0x1024xbf16>) -> tensor<?x1024xbf16> {
  // expected-error @+1 {{FFN sizes must be positive, got d = 1024, h = 0, d_out = 1024}}
  %0 = flash.ffn relu %x, %w1, %w2 : (tensor<?x1024xbf16>, tensor<1024x0xbf16>, tensor<0x1024xbf16>) -> tensor<?x1024xbf16>
  return %0 : tensor<?x1024xbf16>
}

// -----

func.func @ffn_zero_rows(%x: tensor<0x1024xbf16>, %w1: tensor<1024x4096xbf16>, %w2: tensor<4096x1024xbf16>) -> tensor<0x1024xbf16> {
  // expected-error @+1 {{input [..., M, d] has a static size of 0 (M) in 'tensor<0x1024xbf16>': static sizes must be positive}}
  %0 = flash.ffn relu %x, %w1, %w2 : (tensor<0x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<0x1024xbf16>
  return %0 : tensor<0x1024xbf16>
}

// -----

func.func @ffn_zero_batch(%x: tensor<0x?x1024xbf16>, %w1: tensor<1024x4096xbf16>, %w2: tensor<4096x1024xbf16>) -> tensor<0x?x1024xbf16> {
  // expected-error @+1 {{input [..., M, d] has a static size of 0 (dimension 0) in 'tensor<0x?x1024xbf16>'}}
  %0 = flash.ffn relu %x, %w1, %w2 : (tensor<0x?x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<0x?x1024xbf16>
  return %0 : tensor<0x?x1024xbf16>
}

// -----

func.func @ffn_result(%x: tensor<?x7x1024xbf16>, %w1: tensor<1024x4096xbf16>, %w2: tensor<4096x512xbf16>) -> tensor<?x7x1024xbf16> {
  // expected-error @+1 {{result has shape [?, 7, 1024], expected [..., M, d_out] = [?, 7, 512]}}
  %0 = flash.ffn relu %x, %w1, %w2 : (tensor<?x7x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096x512xbf16>) -> tensor<?x7x1024xbf16>
  return %0 : tensor<?x7x1024xbf16>
}

// -----

func.func @ffn_dtype(%x: tensor<?x1024xbf16>, %w1: tensor<1024x4096xf16>, %w2: tensor<4096x1024xbf16>) -> tensor<?x1024xbf16> {
  // expected-error @+1 {{w1 has element type 'f16', expected 'bf16' (that of input)}}
  %0 = flash.ffn relu %x, %w1, %w2 : (tensor<?x1024xbf16>, tensor<1024x4096xf16>, tensor<4096x1024xbf16>) -> tensor<?x1024xbf16>
  return %0 : tensor<?x1024xbf16>
}

// -----

func.func @ffn_activation(%x: tensor<?x1024xbf16>, %w1: tensor<1024x4096xbf16>, %w2: tensor<4096x1024xbf16>) -> tensor<?x1024xbf16> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'activation' [gelu_tanh, gelu_erf, silu, relu]}}
  %0 = flash.ffn swish %x, %w1, %w2 : (tensor<?x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<?x1024xbf16>
  return %0 : tensor<?x1024xbf16>
}

// -----

// A region's ops are verified before its function is read: an op in generic form without its predicate (or a
// score region's select without operands) is reported by its own verifier, not read by the function's checks
// (which crashed on the missing attribute).
func.func @mask_mod_generic_cmpi(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%i: index, %j: index):
    // expected-error @+1 {{'arith.cmpi' op requires attribute 'predicate'}}
    %c = "arith.cmpi"(%j, %i) : (index, index) -> i1
    flash.yield %c : i1
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

func.func @score_mod_generic_select(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 score_mod {
  ^bb0(%s: f32, %i: index, %j: index):
    // expected-error @+1 {{'arith.select' op expected 3 operands, but found 0}}
    %r = "arith.select"() : () -> f32
    flash.yield %r : f32
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

// A mask_mod region is an index function: only integer arith on index and i1 (IndexFunction.h).
func.func @mask_mod_cast(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%i: index, %j: index):
    // expected-error @+1 {{'arith.index_cast' op is not allowed in mask_mod: arith.index_cast converts an element read by tensor.extract to index}}
    %x = arith.index_cast %i : index to i32
    %c = arith.cmpi sle, %j, %i : index
    flash.yield %c : i1
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

func.func @mask_mod_unsigned(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%i: index, %j: index):
    // expected-error @+1 {{'arith.cmpi' op is not allowed in mask_mod: comparisons are signed (eq, ne, slt, sle, sgt, sge)}}
    %c = arith.cmpi ule, %j, %i : index
    flash.yield %c : i1
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

func.func @mask_mod_bool_arithmetic(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%i: index, %j: index):
    %a = arith.cmpi sle, %j, %i : index
    // expected-error @+1 {{'arith.addi' op is not allowed in mask_mod: arithmetic and comparisons take index operands (andi, ori, xori combine i1)}}
    %b = arith.addi %a, %a : i1
    flash.yield %b : i1
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

func.func @mask_mod_arguments(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{mask_mod takes 2 index arguments (query, key) or 4 (batch, head, query, key), then one tensor per operand; got 3 index arguments}}
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%h: index, %i: index, %j: index):
    %c = arith.cmpi sle, %j, %i : index
    flash.yield %c : i1
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

func.func @mask_mod_key_offset(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %off: i32) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{mask_mod is not combined with key_offset (the modifier sees row indices, not key positions)}}
  %out, %lse = flash.attention %q, %k, %v key_offset = %off scale = 0.25 mask = #flash.mask<causal> num_kv_heads = 2 mask_mod {
  ^bb0(%i: index, %j: index):
    %c = arith.cmpi sle, %j, %i : index
    flash.yield %c : i1
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, i32) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

// (flash.yield's own verifier first: the region's ops are verified before its function.)
func.func @mask_mod_yield(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%i: index, %j: index):
    // expected-error @+1 {{'flash.yield' op operand #0 must be 1-bit signless integer or 32-bit float, but got 'index'}}
    flash.yield %i : index
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

func.func @mask_op_modifier(%s: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %m = flash.mask %s <none> mod {
  ^bb0(%i: index, %j: index):
    // expected-error @+1 {{'arith.cmpi' op is not allowed in mod: comparisons are signed}}
    %c = arith.cmpi ult, %j, %i : index
    flash.yield %c : i1
  } : tensor<1x2x8x8xf32>
  return %m : tensor<1x2x8x8xf32>
}

// -----

// A mask modifier's tensors: operands of the op, one tensor argument each after the indices.
func.func @mask_mod_operand_count(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %doc: tensor<8xi32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{mask_mod takes one tensor argument per operand after its indices: 1 operand(s), 0 argument(s) after the indices}}
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index):
    %c = arith.cmpi sle, %j, %i : index
    flash.yield %c : i1
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<8xi32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

func.func @mask_mod_operand_type(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %doc: tensor<8xi32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{mask_mod argument 2 has type 'tensor<?xi32>', but its operand is 'tensor<8xi32>'}}
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %t: tensor<?xi32>):
    %c = arith.cmpi sle, %j, %i : index
    flash.yield %c : i1
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<8xi32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

func.func @mask_mod_operand_element(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %doc: tensor<8xi64>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{operand #3 must be variadic of ranked tensor of 32-bit signless integer values}}
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %t: tensor<8xi64>):
    %c = arith.cmpi sle, %j, %i : index
    flash.yield %c : i1
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<8xi64>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

// An element read from a tensor is an i32: compared only after arith.index_cast.
func.func @mask_mod_read_uncast(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %doc: tensor<8xi32>) -> tensor<1x2x8x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %t: tensor<8xi32>):
    %a = tensor.extract %t[%i] : tensor<8xi32>
    %b = tensor.extract %t[%j] : tensor<8xi32>
    // expected-error @+1 {{'arith.cmpi' op is not allowed in mask_mod: operands must be index or i1 (an element read from an operand: arith.index_cast it first)}}
    %c = arith.cmpi eq, %a, %b : i32
    flash.yield %c : i1
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<8xi32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

func.func @mask_mod_operands_without_region(%s: tensor<1x2x8x8xf32>, %doc: tensor<8xi32>) -> tensor<1x2x8x8xf32> {
  // expected-error @+1 {{expected '{' to begin a region}}
  %m = flash.mask %s <none> mod(%doc : tensor<8xi32>) : tensor<1x2x8x8xf32>
  return %m : tensor<1x2x8x8xf32>
}

// -----

// Four indices (batch, head, query, key) on a flash.mask need its [B, H, Sq, Sk] input.
func.func @mask_four_indices_rank(%s: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{mod of four indices (batch, head, query, key) needs a [B, H, Sq, Sk] input, got 'tensor<8x8xf32>'}}
  %m = flash.mask %s <none> mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c = arith.cmpi sle, %j, %i : index
    flash.yield %c : i1
  } : tensor<8x8xf32>
  return %m : tensor<8x8xf32>
}

// -----

// A score_mod region takes the score (f32) first.
func.func @score_mod_no_score(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{'flash.attention' op score_mod takes the score (f32) first}}
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 score_mod {
  ^bb0(%i: index, %j: index):
    %c = arith.constant 1.0 : f32
    flash.yield %c : f32
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

// It yields the score the softmax sees: one f32.
func.func @score_mod_yields_i1(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{'flash.attention' op score_mod must end by yielding one f32 (the modified score)}}
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 score_mod {
  ^bb0(%s: f32, %i: index, %j: index):
    %c = arith.cmpi sle, %j, %i : index
    flash.yield %c : i1
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

// Only the f32 ops every consumer differentiates (no math.sin).
func.func @score_mod_sin(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 score_mod {
  ^bb0(%s: f32, %i: index, %j: index):
    // expected-error @+1 {{'math.sin' op is not allowed in score_mod}}
    %r = math.sin %s : f32
    flash.yield %r : f32
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

// An index becomes f32 through arith.index_cast to i32 / i64, then arith.sitofp.
func.func @score_mod_uitofp(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 score_mod {
  ^bb0(%s: f32, %i: index, %j: index):
    %d = arith.index_cast %j : index to i64
    // expected-error @+1 {{'arith.uitofp' op is not allowed in score_mod}}
    %f = arith.uitofp %d : i64 to f32
    %r = arith.addf %s, %f : f32
    flash.yield %r : f32
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

// Its operands are f32 or i32 tensors of rank 1 to 4 (the region's arguments have their types).
func.func @score_mod_operand_type(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %t: tensor<2xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{'flash.attention' op score_mod argument 3 has type 'tensor<3xf32>', but its operand is 'tensor<2xf32>'}}
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 score_mod(%t) {
  ^bb0(%s: f32, %i: index, %j: index, %x: tensor<3xf32>):
    flash.yield %s : f32
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<2xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

// The cap goes in the region: not both.
func.func @score_mod_and_softcap(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{'flash.attention' op score_mod is not combined with softcap}}
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> softcap = 5.0 num_kv_heads = 2 score_mod {
  ^bb0(%s: f32, %i: index, %j: index):
    flash.yield %s : f32
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

// A comparison is no number: sitofp takes an index (through index_cast) or an i32 element.
func.func @score_mod_cast_bool(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %t: tensor<8xi32>) -> tensor<1x2x8x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 score_mod(%t) {
  ^bb0(%s: f32, %i: index, %j: index, %x: tensor<8xi32>):
    %e = arith.cmpi slt, %i, %j : index
    // expected-error @+1 {{'arith.sitofp' op is not allowed in score_mod: arith.sitofp converts an index (through arith.index_cast to i32 / i64), or an i32 element read by tensor.extract, to f32}}
    %f = arith.sitofp %e : i1 to f32
    %r = arith.addf %s, %f : f32
    flash.yield %r : f32
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<8xi32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %out : tensor<1x2x8x16xf32>
}

// -----

// flash.score (the graph spelling): batch and head indices need a [B, H, Sq, Sk] input.
func.func @score_op_rank(%s: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'flash.score' op mod of four indices (batch, head, query, key) needs a [B, H, Sq, Sk] input, got 'tensor<8x8xf32>'}}
  %r = flash.score %s mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    flash.yield %x : f32
  } : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

func.func @score_op_yield(%s: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'flash.score' op mod must end by yielding one f32 (the modified score)}}
  %r = flash.score %s mod {
  ^bb0(%x: f32, %i: index, %j: index):
    %c = arith.cmpi slt, %i, %j : index
    flash.yield %c : i1
  } : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// A size static in one tensor and dynamic in another (K's batch 1 beside Q's dynamic B, the lse's 128 rows beside a
// dynamic Sq): each tensor is checked at launch on its own, so B = 2 would pass and the kernels read K past its end.
func.func @attention_batch_static_in_key_only(%q: tensor<?x4x?x64xbf16>, %k: tensor<1x4x?x64xbf16>,
                                              %v: tensor<?x4x?x64xbf16>) {
  // expected-error @+1 {{key has shape [1, 4, ?, 64], expected [B, Hkv, Sk, D] = [?, *, *, 64] (dimension 0 is 1 here and dynamic in another operand: a size must be static in every tensor that has it, or dynamic in all)}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x4x?x64xbf16>, tensor<1x4x?x64xbf16>, tensor<?x4x?x64xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return
}

// -----

func.func @attention_lse_static_where_queries_dynamic(%q: tensor<1x4x?x64xbf16>, %k: tensor<1x4x?x64xbf16>,
                                                     %v: tensor<1x4x?x64xbf16>) {
  // expected-error @+1 {{lse has shape [1, 4, 128], expected [B, Hq, Sq] = [1, 4, ?] (dimension 2 is 128 here and dynamic in another operand: a size must be static in every tensor that has it, or dynamic in all)}}
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<1x4x?x64xbf16>, tensor<1x4x?x64xbf16>, tensor<1x4x?x64xbf16>) -> (tensor<1x4x?x64xbf16>, tensor<1x4x128xf32>)
  return
}

// -----

// A modifier's table read at an index argument holds that index's range where both are static (the kernels read a
// shorter one's missing entries as 0: a silent bias). 2 slopes for 4 query heads:
func.func @score_mod_slopes_short(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>,
                                  %slopes: tensor<2xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      score_mod(%slopes) {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %m: tensor<2xf32>):
    // expected-error @+1 {{'tensor.extract' op reads score_mod operand #0 ('tensor<2xf32>') at the query head h along dimension 0: it holds 2 entries, the query head h ranges over 4}}
    %slope = tensor.extract %m[%h] : tensor<2xf32>
    %r = arith.addf %s, %slope : f32
    flash.yield %r : f32
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<2xf32>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return
}

// -----

// The graph spelling: document ids of 8 tokens for 16 query rows.
func.func @mask_ids_short(%s: tensor<2x4x16x16xbf16>, %ids: tensor<8xi32>) {
  %0 = flash.mask %s <none> mod(%ids : tensor<8xi32>) {
  ^bb0(%i: index, %j: index, %t: tensor<8xi32>):
    // expected-error @+1 {{'tensor.extract' op reads mod operand #0 ('tensor<8xi32>') at the query index q along dimension 0: it holds 8 entries, the query index q ranges over 16}}
    %a = tensor.extract %t[%i] : tensor<8xi32>
    %ai = arith.index_cast %a : i32 to index
    %same = arith.cmpi sge, %ai, %j : index
    flash.yield %same : i1
  } : tensor<2x4x16x16xbf16>
  return
}
