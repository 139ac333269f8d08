// A gated FFN (SwiGLU): its backward hidden kernel carries three f32
// accumulators (gate, up, and dy·W2ᵀ) and stays 128 columns wide on sm_90a.
// (A 64-wide plan removed its ≈860 bytes of spills but measured 0.89x the
// backward at M 16384, d 4096, h 11008 on the H200: docs/device-library.md.)
// RUN: flashc %s --emit=tile -o - | FileCheck %s

func.func @ffn(%x: tensor<?x64xbf16>, %w_gate: tensor<64x256xbf16>, %w_up: tensor<64x256xbf16>,
               %w2: tensor<256x64xbf16>) -> tensor<?x64xbf16> {
  %y = flash.ffn silu %x, %w_gate up %w_up, %w2
      : (tensor<?x64xbf16>, tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_hidden
// CHECK-SAME: block_m = 128 : i64, block_n = 128 : i64
// CHECK-SAME: strategy = #tile.strategy<wgmma_sm90>
