// flash.varlen_attention through flash-tile and the CPU executor (the plan kernel's offset check and tile map, then
// one forward block a (query tile, head)) against the float64 graph evaluator. flash-run-tile splits the packed rows
// into the offsets' sequences at random cut points (a length-0 and a length-1 sequence among them), query and key
// lengths differing, so the masks align each sequence's own bottom-right corner.
// RUN: flash-run-tile %s --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %s --tolerance=2e-2 --seed=7 | FileCheck %s

// Causal, GQA 2, D = 128 (128-row tiles): sequences of up to a few tiles.
// CHECK: @causal forward result 0: max relative error {{.*}} ok
// CHECK: @causal forward result 1: max relative error {{.*}} ok
func.func @causal(%q: tensor<400x4x128xbf16>, %k: tensor<520x2x128xbf16>, %v: tensor<520x2x128xbf16>,
                  %cu_q: tensor<7xi32>, %cu_k: tensor<7xi32>) -> (tensor<400x4x128xbf16>, tensor<4x400xf32>) {
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.088 mask = #flash.mask<causal>
      num_kv_heads = 2
      : (tensor<400x4x128xbf16>, tensor<520x2x128xbf16>, tensor<520x2x128xbf16>, tensor<7xi32>, tensor<7xi32>)
      -> (tensor<400x4x128xbf16>, tensor<4x400xf32>)
  return %out, %lse : tensor<400x4x128xbf16>, tensor<4x400xf32>
}

// A window and a softcap, f16, D = 64 with Dv = 128 (192-row tiles), MQA; the lse not returned.
// CHECK: @windowed forward result 0: max relative error {{.*}} ok
func.func @windowed(%q: tensor<300x3x64xf16>, %k: tensor<250x1x64xf16>, %v: tensor<250x1x128xf16>,
                    %cu_q: tensor<5xi32>, %cu_k: tensor<5xi32>) -> tensor<300x3x128xf16> {
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.125
      mask = #flash.mask<sliding_window, left = 37, right = 5> softcap = 20.0 num_kv_heads = 1
      : (tensor<300x3x64xf16>, tensor<250x1x64xf16>, tensor<250x1x128xf16>, tensor<5xi32>, tensor<5xi32>)
      -> (tensor<300x3x128xf16>, tensor<3x300xf32>)
  return %out : tensor<300x3x128xf16>
}
