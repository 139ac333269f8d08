// dq_accum zeroed tile by tile (a tuning entry's dq_fill=zero_ahead, #tile.attention dq_zero_ahead): the preprocess
// clears the flags of dq_accum's 64 x 64 tiles instead of zeroing it, the main kernel zeroes each tile before its
// first add (tile.zero_tiles_once), the postprocess reads zeros where no block reached a tile. The executor starts
// dq_accum at NaN (it is no zeroed workspace now), so a tile added into before its zeros, or read unreached, shows as
// a NaN gradient. Bound: f32, max |tile - ref| / max |ref| < 1e-5, against float64.
//
// RUN: flash-run-tile %s --backward --tuning-table=%S/Inputs/tuning-dq-zero-ahead.txt --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --tuning-table=%S/Inputs/tuning-dq-zero-ahead.txt --backward-form=transposed --block-m=32 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --tuning-table=%S/Inputs/tuning-dq-zero-ahead.txt --tolerance=1e-5 | FileCheck %s
// The deterministic backward has no dq_accum: the entry leaves it as it is.
// RUN: flash-run-tile %s --backward --deterministic --tuning-table=%S/Inputs/tuning-dq-zero-ahead.txt --tolerance=1e-5 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @rows_before_keys backward d_q: {{.*}} ok
// CHECK: @rows_before_keys backward d_k: {{.*}} ok
// CHECK: @window_gqa_two_parts backward d_q: {{.*}} ok
// CHECK: @window_gqa_two_parts backward d_v: {{.*}} ok
// CHECK: @ragged_unmasked backward d_q: {{.*}} ok
// CHECK: @ragged_unmasked backward d_k: {{.*}} ok

// Sq = 200 > Sk = 70, causal (bottom-right): rows 0-129 see no key, so no key block walks dq_accum's tiles 0 and 1;
// their dQ is 0 through the postprocess's zeros. Tile 3 (rows 192-199) is a partial tile.
func.func @rows_before_keys(%q: tensor<1x2x200x32xf32>, %k: tensor<1x2x70x32xf32>, %v: tensor<1x2x70x32xf32>) -> tensor<1x2x200x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x2x200x32xf32>, tensor<1x2x70x32xf32>, tensor<1x2x70x32xf32>) -> (tensor<1x2x200x32xf32>, tensor<1x2x200xf32>)
  return %out : tensor<1x2x200x32xf32>
}

// A sliding window over GQA 4:2 at D = 96: two 64-column parts a tile (one flag each), many key blocks adding into
// each query tile, each kv head's blocks walking two query heads.
func.func @window_gqa_two_parts(%q: tensor<1x4x150x96xf32>, %k: tensor<1x2x150x96xf32>, %v: tensor<1x2x150x96xf32>) -> tensor<1x4x150x96xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.10206207261596575 mask = #flash.mask<sliding_window, left = 20, right = 0> num_kv_heads = 2
      : (tensor<1x4x150x96xf32>, tensor<1x2x150x96xf32>, tensor<1x2x150x96xf32>) -> (tensor<1x4x150x96xf32>, tensor<1x4x150xf32>)
  return %out : tensor<1x4x150x96xf32>
}

// Unmasked, two batches, Sq = 77 (a partial second tile), Sk = 45: every key block reaches every query tile.
func.func @ragged_unmasked(%q: tensor<2x2x77x64xf32>, %k: tensor<2x2x45x64xf32>, %v: tensor<2x2x45x64xf32>) -> tensor<2x2x77x64xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<2x2x77x64xf32>, tensor<2x2x45x64xf32>, tensor<2x2x45x64xf32>) -> (tensor<2x2x77x64xf32>, tensor<2x2x77xf32>)
  return %out : tensor<2x2x77x64xf32>
}
