// A mask modifier that only bounds q - k (here FlexAttention's causal window of 1024 keys: 0 <= q - k <= 1024) runs as
// the window's kernels (DiagonalBand.h), on the modifier's own positions: query row i at key position i, not
// i + Sk - Sq. The warp-specialised forward and backward are given 0 as the key position of row 0 (without it the
// forward's call would place rows bottom-right and the backward top-left: every row past Sq != Sk wrong); the
// op-by-op kernels (sm_80) compute their offset as 0 in the tile body. No modifier struct, no table.
//
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: flashc %s --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefix=SM80
// RUN: rm -rf %t.bundle && flashc %s --emit=bundle -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc

// CUDA-NOT: struct mask_mod_
// CUDA: //   window_band_attention_bwd: {{.*}}window 1024 left / 0 right (top-left: a band mask modifier's)
// CUDA: //   window_band_attention_fwd: O = softmax(Q·Kᵀ·{{[0-9.]+}}, window 1024 left / 0 right (top-left: a band mask modifier's))·V
// CUDA: static constexpr int kWindowLeft = 1024, kWindowRight = 0;
// CUDA: flashc::device::attention_bwd_ws<{{.*}}, dk, dv, 0 /* top-left: the mask modifier's row positions */, &dq_accum_map);
// CUDA: flashc::device::attention_fwd_ws<{{.*}}(q_map, k_map, v_map, q, k, out, lse, 0 /* top-left: the mask modifier's row positions */);
// SM80-NOT: mask_mod
// SM80: top_left = true
// MANIFEST-NOT: mask_blocks
// MANIFEST: program window_band{{$}}
// (meta lines print sorted: a leftover mask_mod would sit between key_offset_fixed and window_left)
// MANIFEST: meta key_offset_fixed 0
// MANIFEST-NOT: meta mask_mod
// MANIFEST: meta window_left 1024
// MANIFEST-NEXT: meta window_right 0

func.func @window_band(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.088388346 mask = #flash.mask<none> num_kv_heads = 8 mask_mod {
  ^bb0(%i: index, %j: index):
    %w = arith.constant 1024 : index
    %causal = arith.cmpi sge, %i, %j : index
    %d = arith.subi %i, %j : index
    %near = arith.cmpi sle, %d, %w : index
    %visible = arith.andi %causal, %near : i1
    flash.yield %visible : i1
  } : (tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>) -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>)
  return %o, %lse : tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
}
