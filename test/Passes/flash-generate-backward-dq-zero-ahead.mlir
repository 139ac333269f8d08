// flash-generate-backward where the main kernel's tuning entry says dq_fill=zero_ahead (#tile.attention
// dq_zero_ahead): dq_accum is not zero-filled by the preprocess; the three kernels share its tile flags.
// RUN: flash-opt %s --flash-generate-backward="tuning-table=%S/Inputs/tuning-dq-zero-ahead.txt" | FileCheck %s
// The rows form's main kernel at D = 64 is not warp-specialised: the entry leaves it the preprocess's zero fill (only
// kernels that take the form take it); the deterministic backward (no dq_accum) keeps its kernels.
// RUN: flash-opt %s --flash-generate-backward="form=rows tuning-table=%S/Inputs/tuning-dq-zero-ahead.txt" | FileCheck %s --check-prefix=ROWS
// RUN: flash-opt %s --flash-generate-backward="deterministic=true tuning-table=%S/Inputs/tuning-dq-zero-ahead.txt" | FileCheck %s --check-prefix=DET
// Without the entry: the preprocess zeroes dq_accum.
// RUN: flash-opt %s --flash-generate-backward | FileCheck %s --check-prefix=HAND

// Preprocess: D = rowsum(dO ∘ O); its rows' tile flags cleared (flags[b, h, tiles of rows row0..row0 + 64) = 0),
// no zeros stored into dq_accum.
// CHECK-LABEL: tile.kernel @attn_attention_bwd_preprocess(
// CHECK-SAME: %arg3: !tile.tensor<?x8x?x1xi32>
// CHECK-SAME: dq_zero_ahead = true>
// CHECK: tile.row_dot
// CHECK: tile.clear_tile_flags %arg3[%{{.*}}, %{{.*}}] rows %[[ROW0:.*]], %c64
// CHECK-NOT: tile.store
// CHECK: tile.return
//
// Main kernel: the flags after dv; before each step adds its dQ = dS·K into dq_accum's rows row0..row0 + 128, the
// tiles under them zeroed once (the first block to reach a tile zeroes it).
// CHECK-LABEL: tile.kernel @attn_attention_bwd(
// CHECK-SAME: %arg9: !tile.tensor<?x8x?x1xi32>
// CHECK-SAME: role = attention_backward_transposed
// CHECK-SAME: dq_zero_ahead = true>
// CHECK: %[[DQ:.*]] = tile.matmul %{{.*}}, %{{.*}}, %{{.*}} transpose_a : <128x128xbf16, shared>
// CHECK-NEXT: tile.zero_tiles_once %arg6, %arg9[%{{.*}}, %[[HEAD:.*]]] rows %[[STEPROW:.*]], %c128
// CHECK-NEXT: tile.atomic_add %[[DQ]], %arg6[%{{.*}}, %[[HEAD]], %[[STEPROW]], %c0]
//
// Postprocess: dQ = dq_accum where a block reached its tile, 0 where none did (zeroed here: its flags still 0).
// CHECK-LABEL: tile.kernel @attn_attention_bwd_postprocess(
// CHECK-SAME: %arg2: !tile.tensor<?x8x?x1xi32>
// CHECK-SAME: dq_zero_ahead = true>
// CHECK: tile.zero_tiles_once %arg0, %arg2[%{{.*}}, %{{.*}}] rows %{{.*}}, %c64
// CHECK-NEXT: tile.load %arg0
//
// The program: the flags [B, Hq, ceil(Sq / 64), ceil(D / 64)] i32, not zero-filled (the preprocess clears them);
// dq_accum zeroed in the program (no scratch zero fill either).
// CHECK-LABEL: func.func @attn_backward(
// CHECK: %[[ACCUM:.*]] = tile.alloc_tensor(%{{.*}}, %{{.*}}) {tile.name = "dq_accum", tile.zeroed_in_program} : <?x8x?x64xf32>
// CHECK: %[[SQ:.*]] = tile.dim %arg0, 2
// CHECK: %[[TILES:.*]] = arith.ceildivsi %[[SQ]], %c64
// CHECK: %[[FLAGS:.*]] = tile.alloc_tensor(%{{.*}}, %[[TILES]]) {tile.name = "dq_flags"} : <?x8x?x1xi32>
// CHECK: tile.launch @attn_attention_bwd_preprocess(%{{.*}}, %{{.*}}, %{{.*}}, %[[FLAGS]])
// CHECK: tile.launch @attn_attention_bwd(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ACCUM]], %{{.*}}, %{{.*}}, %[[FLAGS]])
// CHECK: tile.launch @attn_attention_bwd_postprocess(%[[ACCUM]], %{{.*}}, %[[FLAGS]])

// ROWS-NOT: dq_zero_ahead
// ROWS-NOT: zero_tiles_once
// ROWS: tile.kernel @attn_attention_bwd_preprocess(
// ROWS: tile.store %{{.*}}, %arg3
// ROWS: tile.kernel @attn_attention_bwd(
// ROWS-SAME: role = attention_backward,

// DET-NOT: dq_zero_ahead
// DET-NOT: dq_flags
// DET: tile.kernel @attn_attention_bwd_dq(

// HAND-NOT: dq_zero_ahead
// HAND-NOT: zero_tiles_once
// HAND: tile.kernel @attn_attention_bwd_preprocess(
// HAND: tile.store %{{.*}}, %arg3

func.func @attn(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>)
  return %out : tensor<?x8x?x64xbf16>
}
