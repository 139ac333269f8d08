// A gated FFN (SwiGLU): its backward hidden kernel carries three f32
// accumulators (gate, up, and dy·W2ᵀ). At 128 columns that spills (≈860 bytes
// on sm_90a); --experiment=narrow-hidden plans it 64 columns wide: no spills.
// RUN: flashc %s --emit=tile -o - | FileCheck %s --check-prefix=DEFAULT
// RUN: flashc %s --experiment=narrow-hidden --emit=tile -o - | FileCheck %s --check-prefix=NARROW
// RUN: flashc %s --experiment=narrow-hidden --emit=cubin --arch=sm_90a --ptxas-report -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

func.func @ffn(%x: tensor<?x64xbf16>, %w_gate: tensor<64x256xbf16>, %w_up: tensor<64x256xbf16>,
               %w2: tensor<256x64xbf16>) -> tensor<?x64xbf16> {
  %y = flash.ffn silu %x, %w_gate up %w_up, %w2
      : (tensor<?x64xbf16>, tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// DEFAULT-LABEL: tile.kernel @ffn_ffn_bwd_hidden
// DEFAULT-SAME: block_n = 128
// NARROW-LABEL: tile.kernel @ffn_ffn_bwd_hidden
// NARROW-SAME: block_m = 128 : i64, block_n = 64 : i64
// NARROW-SAME: strategy = #tile.strategy<wgmma_sm90>
// PTXAS-NOT: serialized
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS: Compiling entry function 'flashc_ffn_ffn_bwd_hidden'
// PTXAS-NOT: serialized
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill stores
