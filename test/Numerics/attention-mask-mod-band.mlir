// Mask modifiers that are a band of diagonals (lo <= q - k <= hi: DiagonalBand.h) run as the window's kernels on the
// modifier's own row positions (#tile.attention top_left: query row q at key position q, whatever Sq and Sk). The tile
// programs on the CPU against the float64 reference, which evaluates the modifier itself, forward and backward, in
// both backward forms, at Sq < Sk, Sq > Sk (rows past the keys see the band's far side only, or nothing) and Sq = Sk.
// Bound: f32, max |tile - ref| / max |ref| < 1e-5.
//
// RUN: flash-run-tile %s --backward --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --backward-form=transposed --block-m=32 --block-n=32 --warps=2 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --deterministic --block-m=16 --block-n=32 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --target=sm_80 --tolerance=1e-5 | FileCheck %s
// The tile IR: the band's window, top-left, and no modifier.
// RUN: flash-opt %s --flash-fuse-attention --flash-tile | FileCheck %s --check-prefix=TILE

// CHECK-NOT: FAIL
// CHECK: @causal_as_modifier forward result 0: {{.*}} ok
// CHECK: @causal_as_modifier backward d_q: {{.*}} ok
// CHECK: @sliding_window forward result 0: {{.*}} ok
// CHECK: @sliding_window backward d_k: {{.*}} ok
// CHECK: @two_sided_band forward result 0: {{.*}} ok
// CHECK: @two_sided_band backward d_v: {{.*}} ok
// CHECK: @scaled_terms backward d_q: {{.*}} ok
// CHECK: @off_diagonal backward d_k: {{.*}} ok
// CHECK: @local_abs forward result 0: {{.*}} ok
// CHECK: @local_abs backward d_q: {{.*}} ok
// CHECK: @far_abs backward d_v: {{.*}} ok

// TILE-LABEL: tile.kernel @causal_as_modifier_attention_fwd(
// TILE-SAME: window_left = -1, window_right = 0, element_type = f32, top_left = true>
// TILE-NOT: mask_mod =
// TILE-LABEL: tile.kernel @sliding_window_attention_fwd(
// TILE-SAME: window_left = 24, window_right = 0, element_type = f32, top_left = true>
// TILE-LABEL: tile.kernel @two_sided_band_attention_fwd(
// TILE-SAME: window_left = 6, window_right = 3, element_type = f32, top_left = true>
// TILE-LABEL: tile.kernel @scaled_terms_attention_fwd(
// TILE-SAME: window_left = 9, window_right = 1, element_type = f32, top_left = true>
// A band off the diagonal (no query sees its own position) stays a modifier.
// TILE-LABEL: tile.kernel @off_diagonal_attention_fwd(
// TILE-SAME: window_left = -1, window_right = -1, element_type = f32, mask_mod = @mask_mod_
// |q - k| <= 6 as a traced abs() spells it (a select): a window of 6 keys either side.
// TILE-LABEL: tile.kernel @local_abs_attention_fwd(
// TILE-SAME: window_left = 6, window_right = 6, element_type = f32, top_left = true>
// |q - k| >= 3 is two bands: a modifier.
// TILE-LABEL: tile.kernel @far_abs_attention_fwd(
// TILE-SAME: window_left = -1, window_right = -1, element_type = f32, mask_mod = @mask_mod_

// FlexAttention's causal mask as a modifier (q >= k), at Sq < Sk: top-left, so the last 30 keys are seen by no row.
func.func @causal_as_modifier(%q: tensor<1x2x37x32xf32>, %k: tensor<1x2x67x32xf32>, %v: tensor<1x2x67x32xf32>) -> tensor<1x2x37x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%i: index, %j: index):
    %causal = arith.cmpi sge, %i, %j : index     // 0 <= q - k
    flash.yield %causal : i1
  } : (tensor<1x2x37x32xf32>, tensor<1x2x67x32xf32>, tensor<1x2x67x32xf32>) -> (tensor<1x2x37x32xf32>, tensor<1x2x37xf32>)
  return %out : tensor<1x2x37x32xf32>
}

// A causal sliding window of 25 keys (q - k in [0, 24]), at Sq > Sk: rows past the last key + 24 see nothing (output 0,
// lse -inf, no gradient).
func.func @sliding_window(%q: tensor<2x2x90x32xf32>, %k: tensor<2x2x50x32xf32>, %v: tensor<2x2x50x32xf32>) -> tensor<2x2x90x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%i: index, %j: index):
    %c24 = arith.constant 24 : index
    %causal = arith.cmpi sge, %i, %j : index
    %d = arith.subi %i, %j : index
    %near = arith.cmpi sle, %d, %c24 : index     // q - k <= 24
    %visible = arith.andi %causal, %near : i1
    flash.yield %visible : i1
  } : (tensor<2x2x90x32xf32>, tensor<2x2x50x32xf32>, tensor<2x2x50x32xf32>) -> (tensor<2x2x90x32xf32>, tensor<2x2x90xf32>)
  return %out : tensor<2x2x90x32xf32>
}

// Two-sided, written with k - q and strict compares, four indices (batch and head unused): -3 <= q - k <= 6.
func.func @two_sided_band(%q: tensor<1x4x61x32xf32>, %k: tensor<1x2x61x32xf32>, %v: tensor<1x2x61x32xf32>) -> tensor<1x4x61x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c4 = arith.constant 4 : index
    %c7 = arith.constant 7 : index
    %ahead = arith.subi %j, %i : index           // k - q
    %lt = arith.cmpi slt, %ahead, %c4 : index    // k - q < 4: q - k >= -3
    %back = arith.subi %i, %j : index
    %within = arith.cmpi slt, %back, %c7 : index // q - k < 7: q - k <= 6
    %visible = arith.andi %lt, %within : i1
    flash.yield %visible : i1
  } : (tensor<1x4x61x32xf32>, tensor<1x2x61x32xf32>, tensor<1x2x61x32xf32>) -> (tensor<1x4x61x32xf32>, tensor<1x4x61xf32>)
  return %out : tensor<1x4x61x32xf32>
}

// Terms with a multiplication by a constant and offsets on both sides: 2q + 3 >= 2k (q - k >= ceil(-3 / 2) = -1) and
// q + 1 <= k + 10 (q - k <= 9), causal not asked: one key past the diagonal is seen.
func.func @scaled_terms(%q: tensor<1x1x45x32xf32>, %k: tensor<1x1x40x32xf32>, %v: tensor<1x1x40x32xf32>) -> tensor<1x1x45x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 1 mask_mod {
  ^bb0(%i: index, %j: index):
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c10 = arith.constant 10 : index
    %q2 = arith.muli %c2, %i : index
    %k2 = arith.muli %j, %c2 : index
    %lhs = arith.addi %q2, %c3 : index
    %ge = arith.cmpi sge, %lhs, %k2 : index      // 2q + 3 >= 2k: q - k >= -1
    %q1 = arith.addi %i, %c1 : index
    %k10 = arith.addi %j, %c10 : index
    %le = arith.cmpi sle, %q1, %k10 : index      // q - k <= 9
    %visible = arith.andi %le, %ge : i1
    flash.yield %visible : i1
  } : (tensor<1x1x45x32xf32>, tensor<1x1x40x32xf32>, tensor<1x1x40x32xf32>) -> (tensor<1x1x45x32xf32>, tensor<1x1x45xf32>)
  return %out : tensor<1x1x45x32xf32>
}

// Strictly earlier keys (1 <= q - k <= 8): no query sees its own position; a window cannot say that, the modifier stays.
func.func @off_diagonal(%q: tensor<1x2x40x32xf32>, %k: tensor<1x2x40x32xf32>, %v: tensor<1x2x40x32xf32>) -> tensor<1x2x40x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%i: index, %j: index):
    %c8 = arith.constant 8 : index
    %earlier = arith.cmpi sgt, %i, %j : index
    %d = arith.subi %i, %j : index
    %near = arith.cmpi sle, %d, %c8 : index
    %visible = arith.andi %earlier, %near : i1
    flash.yield %visible : i1
  } : (tensor<1x2x40x32xf32>, tensor<1x2x40x32xf32>, tensor<1x2x40x32xf32>) -> (tensor<1x2x40x32xf32>, tensor<1x2x40xf32>)
  return %out : tensor<1x2x40x32xf32>
}

// Bidirectional local attention, |q - k| <= 6, at Sq > Sk (flashc.mask_mod traces abs(q - k) so).
func.func @local_abs(%q: tensor<1x2x53x32xf32>, %k: tensor<1x2x41x32xf32>, %v: tensor<1x2x41x32xf32>) -> tensor<1x2x53x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%i: index, %j: index):
    %c0 = arith.constant 0 : index
    %c6 = arith.constant 6 : index
    %d = arith.subi %i, %j : index
    %neg = arith.cmpi slt, %d, %c0 : index
    %minus = arith.subi %c0, %d : index
    %abs = arith.select %neg, %minus, %d : index
    %near = arith.cmpi sle, %abs, %c6 : index
    flash.yield %near : i1
  } : (tensor<1x2x53x32xf32>, tensor<1x2x41x32xf32>, tensor<1x2x41x32xf32>) -> (tensor<1x2x53x32xf32>, tensor<1x2x53xf32>)
  return %out : tensor<1x2x53x32xf32>
}

// Keys at least 3 away (either side): not one band, the modifier stays (and every row still sees keys).
func.func @far_abs(%q: tensor<1x1x30x32xf32>, %k: tensor<1x1x30x32xf32>, %v: tensor<1x1x30x32xf32>) -> tensor<1x1x30x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 1 mask_mod {
  ^bb0(%i: index, %j: index):
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %d = arith.subi %j, %i : index
    %pos = arith.cmpi sge, %d, %c0 : index
    %minus = arith.subi %c0, %d : index
    %abs = arith.select %pos, %d, %minus : index
    %far = arith.cmpi sge, %abs, %c3 : index
    flash.yield %far : i1
  } : (tensor<1x1x30x32xf32>, tensor<1x1x30x32xf32>, tensor<1x1x30x32xf32>) -> (tensor<1x1x30x32xf32>, tensor<1x1x30xf32>)
  return %out : tensor<1x1x30x32xf32>
}
