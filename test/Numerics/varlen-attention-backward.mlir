// The backward of flash.varlen_attention through flash-generate-backward and the CPU executor (delta and a zeroed
// dQ accumulator, the plan of key tiles, one main-kernel block a (key tile, kv head), dQ's conversion) against
// float64 gradients sequence by sequence. flash-run-tile splits the packed rows at random cut points (a length-0 and
// a length-1 sequence among them), query and key lengths differing.
// RUN: flash-run-tile %s --tolerance=2e-2 --backward | FileCheck %s
// RUN: flash-run-tile %s --tolerance=2e-2 --backward --seed=11 | FileCheck %s

// Causal, GQA 2, D = 128: 128-key tiles (the key split).
// CHECK: @causal backward d_q: max relative error {{.*}} ok
// CHECK: @causal backward d_k: max relative error {{.*}} ok
// CHECK: @causal backward d_v: max relative error {{.*}} ok
func.func @causal(%q: tensor<400x4x128xbf16>, %k: tensor<520x2x128xbf16>, %v: tensor<520x2x128xbf16>,
                  %cu_q: tensor<7xi32>, %cu_k: tensor<7xi32>) -> (tensor<400x4x128xbf16>, tensor<4x400xf32>) {
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.088 mask = #flash.mask<causal>
      num_kv_heads = 2
      : (tensor<400x4x128xbf16>, tensor<520x2x128xbf16>, tensor<520x2x128xbf16>, tensor<7xi32>, tensor<7xi32>)
      -> (tensor<400x4x128xbf16>, tensor<4x400xf32>)
  return %out, %lse : tensor<400x4x128xbf16>, tensor<4x400xf32>
}

// A window, f16, D = 256 (64-key tiles: the role split), MQA.
// CHECK: @windowed backward d_q: max relative error {{.*}} ok
// CHECK: @windowed backward d_k: max relative error {{.*}} ok
// CHECK: @windowed backward d_v: max relative error {{.*}} ok
func.func @windowed(%q: tensor<300x3x256xf16>, %k: tensor<250x1x256xf16>, %v: tensor<250x1x256xf16>,
                    %cu_q: tensor<5xi32>, %cu_k: tensor<5xi32>) -> (tensor<300x3x256xf16>, tensor<3x300xf32>) {
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.0625
      mask = #flash.mask<sliding_window, left = 37, right = 5> num_kv_heads = 1
      : (tensor<300x3x256xf16>, tensor<250x1x256xf16>, tensor<250x1x256xf16>, tensor<5xi32>, tensor<5xi32>)
      -> (tensor<300x3x256xf16>, tensor<3x300xf32>)
  return %out, %lse : tensor<300x3x256xf16>, tensor<3x300xf32>
}
