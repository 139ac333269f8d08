// dq_accum zeroed tile by tile (a tuning entry's dq_fill=zero_ahead, #tile.attention dq_zero_ahead): the preprocess
// clears the flags of dq_accum's 64 x 64 tiles instead of zeroing it, the main kernel zeroes each tile before its
// first add (tile.zero_tiles_once), the postprocess reads zeros where no block reached a tile. The executor starts
// dq_accum at NaN (it is no zeroed workspace now), so a tile added into before its zeros, or read unreached, shows as
// a NaN gradient (checked: without the postprocess's zeroing @rows_before_keys' d_q is NaN). The form is the
// warp-specialised backward's, 16-bit: bf16-sized bound, max |tile - ref| / max |ref| < 2e-2, against float64.
//
// RUN: flash-run-tile %s --backward --tuning-table=%S/Inputs/tuning-dq-zero-ahead.txt --tolerance=2e-2 | FileCheck %s
// The role split (the rows form at D = 192 / Dv = 128: the D = 64-128 functions' rows form is not warp-specialised
// and keeps the preprocess's fill).
// RUN: flash-run-tile %s --backward --backward-form=rows --tuning-table=%S/Inputs/tuning-dq-zero-ahead.txt --tolerance=2e-2 | FileCheck %s
// The deterministic backward has no dq_accum: the entries leave it as it is.
// RUN: flash-run-tile %s --backward --deterministic --tuning-table=%S/Inputs/tuning-dq-zero-ahead.txt --tolerance=2e-2 | FileCheck %s
// dq_fill=convert (the main kernel also takes dq; on the CPU the postprocess converts every part):
// RUN: flash-run-tile %s --backward --tuning-table=%S/Inputs/tuning-dq-convert.txt --tolerance=2e-2 | FileCheck %s
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-dq-convert.txt --emit=tile -o - | FileCheck %s --check-prefix=CONVERT
// Which kernels take the form (what the runs above exercise):
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-dq-zero-ahead.txt --emit=tile -o - | FileCheck %s --check-prefix=TILE
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-dq-zero-ahead.txt --backward-form=rows --emit=tile -o - | FileCheck %s --check-prefix=ROWS

// CHECK-NOT: FAIL
// CHECK: @rows_before_keys backward d_q: {{.*}} ok
// CHECK: @rows_before_keys backward d_k: {{.*}} ok
// CHECK: @window_gqa_two_parts backward d_q: {{.*}} ok
// CHECK: @window_gqa_two_parts backward d_v: {{.*}} ok
// CHECK: @ragged_unmasked backward d_q: {{.*}} ok
// CHECK: @ragged_unmasked backward d_k: {{.*}} ok
// CHECK: @mla_role_split backward d_q: {{.*}} ok
// CHECK: @wide_role_split backward d_q: {{.*}} ok

// TILE: tile.kernel @rows_before_keys_attention_bwd({{.*}}dq_zero_ahead = true>
// TILE: tile.kernel @window_gqa_two_parts_attention_bwd({{.*}}dq_zero_ahead = true>
// TILE: tile.kernel @ragged_unmasked_attention_bwd({{.*}}dq_zero_ahead = true>
// TILE: tile.kernel @wide_role_split_attention_bwd({{.*}}role_split = true{{.*}}dq_zero_ahead = true>
// ROWS: tile.kernel @mla_role_split_attention_bwd({{.*}}role_split = true{{.*}}dq_zero_ahead = true>
// CONVERT: tile.kernel @rows_before_keys_attention_bwd({{.*}}dq_zero_ahead = true>
// CONVERT: tile.kernel @window_gqa_two_parts_attention_bwd({{.*}}dq_zero_ahead = true, dq_convert = true>
// CONVERT: tile.kernel @ragged_unmasked_attention_bwd({{.*}}dq_zero_ahead = true, dq_convert = true>
// CONVERT: tile.kernel @wide_role_split_attention_bwd({{.*}}role_split = true{{.*}}dq_zero_ahead = true>

// Sq = 200 > Sk = 70, causal (bottom-right): rows 0-129 see no key, so no key block walks dq_accum's tiles 0 and 1;
// their dQ is 0 through the postprocess's zeros. D = 64: 128 query rows a step (two tiles a step), a partial last tile.
func.func @rows_before_keys(%q: tensor<1x2x200x64xbf16>, %k: tensor<1x2x70x64xbf16>, %v: tensor<1x2x70x64xbf16>) -> tensor<1x2x200x64xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x2x200x64xbf16>, tensor<1x2x70x64xbf16>, tensor<1x2x70x64xbf16>) -> (tensor<1x2x200x64xbf16>, tensor<1x2x200xf32>)
  return %out : tensor<1x2x200x64xbf16>
}

// A sliding window over GQA 4:2 at D = 96: two 64-column parts a tile (one flag each), several key blocks adding into
// each query tile, each kv head's blocks walking two query heads.
func.func @window_gqa_two_parts(%q: tensor<1x4x300x96xbf16>, %k: tensor<1x2x300x96xbf16>, %v: tensor<1x2x300x96xbf16>) -> tensor<1x4x300x96xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.10206207261596575 mask = #flash.mask<sliding_window, left = 100, right = 0> num_kv_heads = 2
      : (tensor<1x4x300x96xbf16>, tensor<1x2x300x96xbf16>, tensor<1x2x300x96xbf16>) -> (tensor<1x4x300x96xbf16>, tensor<1x4x300xf32>)
  return %out : tensor<1x4x300x96xbf16>
}

// Unmasked f16, two batches, Sq = 77 (a partial second tile), Sk = 145: every key block reaches every query tile.
func.func @ragged_unmasked(%q: tensor<2x2x77x128xf16>, %k: tensor<2x2x145x128xf16>, %v: tensor<2x2x145x128xf16>) -> tensor<2x2x77x128xf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.08838834764831845 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<2x2x77x128xf16>, tensor<2x2x145x128xf16>, tensor<2x2x145x128xf16>) -> (tensor<2x2x77x128xf16>, tensor<2x2x77xf32>)
  return %out : tensor<2x2x77x128xf16>
}

// D = 192 / Dv = 128, causal: the role split in the rows form (its dQ boxes fit; the key split at D = 192 keeps the
// fill), three 64-column parts a tile.
func.func @mla_role_split(%q: tensor<1x2x150x192xbf16>, %k: tensor<1x2x150x192xbf16>, %v: tensor<1x2x150x128xbf16>) -> tensor<1x2x150x128xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.07216878364870323 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x2x150x192xbf16>, tensor<1x2x150x192xbf16>, tensor<1x2x150x128xbf16>) -> (tensor<1x2x150x128xbf16>, tensor<1x2x150xf32>)
  return %out : tensor<1x2x150x128xbf16>
}

// D = 256 at one stage (the entry's): the role split, four parts a tile, Sq = 100 < Sk = 140.
func.func @wide_role_split(%q: tensor<1x2x100x256xbf16>, %k: tensor<1x2x140x256xbf16>, %v: tensor<1x2x140x256xbf16>) -> tensor<1x2x100x256xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.0625 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x2x100x256xbf16>, tensor<1x2x140x256xbf16>, tensor<1x2x140x256xbf16>) -> (tensor<1x2x100x256xbf16>, tensor<1x2x100xf32>)
  return %out : tensor<1x2x100x256xbf16>
}
