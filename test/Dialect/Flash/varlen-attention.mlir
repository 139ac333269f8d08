// flash.varlen_attention: packed sequences parse and print back; every verifier error names the operand, the rule
// and the sizes.
// RUN: flash-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @causal_gqa
// CHECK: flash.varlen_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scale = 8.838830e-02 mask = <causal> num_kv_heads = 8
func.func @causal_gqa(%q: tensor<?x32x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>,
                      %cu_q: tensor<?xi32>, %cu_k: tensor<?xi32>) -> tensor<?x32x128xbf16> {
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.0883883 mask = #flash.mask<causal>
      num_kv_heads = 8
      : (tensor<?x32x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x32x128xbf16>, tensor<32x?xf32>)
  return %out : tensor<?x32x128xbf16>
}

// -----

// A window, a softcap and Dv != D; static sizes.
// CHECK-LABEL: func.func @window_softcap
// CHECK: mask = <sliding_window, left = 37, right = 5> softcap = 3.000000e+01 num_kv_heads = 2
func.func @window_softcap(%q: tensor<100x4x64xf16>, %k: tensor<300x2x64xf16>, %v: tensor<300x2x128xf16>,
                          %cu_q: tensor<5xi32>, %cu_k: tensor<5xi32>) -> tensor<100x4x128xf16> {
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.125
      mask = #flash.mask<sliding_window, left = 37, right = 5> softcap = 30.0 num_kv_heads = 2
      : (tensor<100x4x64xf16>, tensor<300x2x64xf16>, tensor<300x2x128xf16>, tensor<5xi32>, tensor<5xi32>)
      -> (tensor<100x4x128xf16>, tensor<4x100xf32>)
  return %out : tensor<100x4x128xf16>
}

// -----

func.func @not_packed(%q: tensor<2x?x32x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>,
                      %cu_q: tensor<?xi32>, %cu_k: tensor<?xi32>) {
  // expected-error @+1 {{query must have rank 3 [Tq, Hq, D]}}
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.125 mask = #flash.mask<none> num_kv_heads = 8
      : (tensor<2x?x32x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x32x128xbf16>, tensor<32x?xf32>)
  return
}

// -----

func.func @f32(%q: tensor<?x4x128xf32>, %k: tensor<?x4x128xf32>, %v: tensor<?x4x128xf32>,
               %cu_q: tensor<?xi32>, %cu_k: tensor<?xi32>) {
  // expected-error @+1 {{query must be bf16 or f16 (the packed kernels are Hopper's 16-bit forward), got 'tensor<?x4x128xf32>'}}
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x4x128xf32>, tensor<?x4x128xf32>, tensor<?x4x128xf32>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x4x128xf32>, tensor<4x?xf32>)
  return
}

// -----

func.func @head_dim(%q: tensor<?x4x32xbf16>, %k: tensor<?x4x32xbf16>, %v: tensor<?x4x32xbf16>,
                    %cu_q: tensor<?xi32>, %cu_k: tensor<?xi32>) {
  // expected-error @+1 {{head dim D = 32 is not supported by the packed kernels (above 32)}}
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x4x32xbf16>, tensor<?x4x32xbf16>, tensor<?x4x32xbf16>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x4x32xbf16>, tensor<4x?xf32>)
  return
}

// -----

func.func @offsets_differ(%q: tensor<?x4x64xbf16>, %k: tensor<?x4x64xbf16>, %v: tensor<?x4x64xbf16>,
                          %cu_q: tensor<5xi32>, %cu_k: tensor<4xi32>) {
  // expected-error @+1 {{cu_seqlens_k has shape [4], expected [B + 1], the length of cu_seqlens_q = [5]}}
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<5xi32>, tensor<4xi32>)
      -> (tensor<?x4x64xbf16>, tensor<4x?xf32>)
  return
}

// -----

func.func @no_sequences(%q: tensor<?x4x64xbf16>, %k: tensor<?x4x64xbf16>, %v: tensor<?x4x64xbf16>,
                        %cu_q: tensor<0xi32>, %cu_k: tensor<0xi32>) {
  // expected-error @+1 {{cu_seqlens_q must have B + 1 >= 1 entries, got 0}}
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<0xi32>, tensor<0xi32>)
      -> (tensor<?x4x64xbf16>, tensor<4x?xf32>)
  return
}

// -----

func.func @lse_layout(%q: tensor<100x4x64xbf16>, %k: tensor<?x4x64xbf16>, %v: tensor<?x4x64xbf16>,
                      %cu_q: tensor<?xi32>, %cu_k: tensor<?xi32>) {
  // expected-error @+1 {{lse has shape [100, 4], expected [Hq, Tq] = [4, 100]}}
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<100x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<100x4x64xbf16>, tensor<100x4xf32>)
  return
}

// -----

func.func @kv_heads(%q: tensor<?x6x64xbf16>, %k: tensor<?x4x64xbf16>, %v: tensor<?x4x64xbf16>,
                    %cu_q: tensor<?xi32>, %cu_k: tensor<?xi32>) {
  // expected-error @+1 {{query heads Hq = 6 must be a positive multiple of num_kv_heads = 4}}
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x6x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x6x64xbf16>, tensor<6x?xf32>)
  return
}

// -----

func.func @softcap(%q: tensor<?x4x64xbf16>, %k: tensor<?x4x64xbf16>, %v: tensor<?x4x64xbf16>,
                   %cu_q: tensor<?xi32>, %cu_k: tensor<?xi32>) {
  // expected-error @+1 {{softcap must be 0 (none) or positive and finite}}
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.125 mask = #flash.mask<none> softcap = -1.0
      num_kv_heads = 4
      : (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x4x64xbf16>, tensor<4x?xf32>)
  return
}
