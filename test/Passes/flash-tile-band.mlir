// flash-tile on mask modifiers that are, or are not, a band of diagonals (DiagonalBand.h: lo <= q - k <= hi with
// lo <= 0 <= hi runs as the window [hi left, -lo right] on the modifier's row positions, #tile.attention top_left):
// what the analysis reads off a modifier's form and what it leaves a modifier. Numerics of the bands:
// test/Numerics/attention-mask-mod-band.mlir.
//
// RUN: flash-opt %s --flash-tile | FileCheck %s
// And each against float64 on the CPU (rows that see no key: output 0, lse -inf):
// RUN: flash-run-tile %s --backward --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s --check-prefix=NUM
// NUM-NOT: FAIL
// NUM: @reads_head backward d_v: {{.*}} ok

// 2q == 2k: the diagonal alone (eq, divisible).
// CHECK-LABEL: tile.kernel @diagonal_only_attention_fwd(
// CHECK-SAME: window_left = 0, window_right = 0, element_type = f32, top_left = true>

// 2q == 2k + 1 holds nowhere (eq, not divisible): not a band, the modifier stays.
// CHECK-LABEL: tile.kernel @odd_diagonal_attention_fwd(
// CHECK-SAME: window_left = -1, window_right = -1, element_type = f32, mask_mod = @mask_mod_

// a compare of constants that holds, and q >= k: causal.
// CHECK-LABEL: tile.kernel @constant_true_and_causal_attention_fwd(
// CHECK-SAME: window_left = -1, window_right = 0, element_type = f32, top_left = true>

// a compare of constants that fails, and q >= k: every key hidden, the modifier stays.
// CHECK-LABEL: tile.kernel @constant_false_and_causal_attention_fwd(
// CHECK-SAME: window_left = -1, window_right = -1, element_type = f32, mask_mod = @mask_mod_

// q != k: two bands, the modifier stays.
// CHECK-LABEL: tile.kernel @not_diagonal_attention_fwd(
// CHECK-SAME: window_left = -1, window_right = -1, element_type = f32, mask_mod = @mask_mod_

// q - k <= 2^31: wider than the kernels' window sides (TileLimits.h), the modifier stays.
// CHECK-LABEL: tile.kernel @too_wide_attention_fwd(
// CHECK-SAME: window_left = -1, window_right = -1, element_type = f32, mask_mod = @mask_mod_

// k - q > -5: q - k <= 4, no bound to the right.
// CHECK-LABEL: tile.kernel @right_open_attention_fwd(
// CHECK-SAME: window_left = 4, window_right = -1, element_type = f32, top_left = true>

func.func @diagonal_only(%q: tensor<1x1x40x16xf32>, %k: tensor<1x1x40x16xf32>, %v: tensor<1x1x40x16xf32>) -> tensor<1x1x40x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 1 mask_mod {
  ^bb0(%i: index, %j: index):
    %c2 = arith.constant 2 : index
    %a = arith.muli %i, %c2 : index
    %b = arith.muli %j, %c2 : index
    %vis = arith.cmpi eq, %a, %b : index
    flash.yield %vis : i1
  } : (tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>) -> (tensor<1x1x40x16xf32>, tensor<1x1x40xf32>)
  return %out : tensor<1x1x40x16xf32>
}

func.func @odd_diagonal(%q: tensor<1x1x40x16xf32>, %k: tensor<1x1x40x16xf32>, %v: tensor<1x1x40x16xf32>) -> tensor<1x1x40x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 1 mask_mod {
  ^bb0(%i: index, %j: index):
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %a = arith.muli %i, %c2 : index
    %b = arith.muli %j, %c2 : index
    %b1 = arith.addi %b, %c1 : index
    %vis = arith.cmpi eq, %a, %b1 : index
    flash.yield %vis : i1
  } : (tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>) -> (tensor<1x1x40x16xf32>, tensor<1x1x40xf32>)
  return %out : tensor<1x1x40x16xf32>
}

func.func @constant_true_and_causal(%q: tensor<1x1x40x16xf32>, %k: tensor<1x1x40x16xf32>, %v: tensor<1x1x40x16xf32>) -> tensor<1x1x40x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 1 mask_mod {
  ^bb0(%i: index, %j: index):
    %c3 = arith.constant 3 : index
    %c5 = arith.constant 5 : index
    %t = arith.cmpi slt, %c3, %c5 : index
    %c = arith.cmpi sge, %i, %j : index
    %vis = arith.andi %t, %c : i1
    flash.yield %vis : i1
  } : (tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>) -> (tensor<1x1x40x16xf32>, tensor<1x1x40xf32>)
  return %out : tensor<1x1x40x16xf32>
}

func.func @constant_false_and_causal(%q: tensor<1x1x40x16xf32>, %k: tensor<1x1x40x16xf32>, %v: tensor<1x1x40x16xf32>) -> tensor<1x1x40x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 1 mask_mod {
  ^bb0(%i: index, %j: index):
    %c3 = arith.constant 3 : index
    %c5 = arith.constant 5 : index
    %f = arith.cmpi sgt, %c3, %c5 : index
    %c = arith.cmpi sge, %i, %j : index
    %vis = arith.andi %f, %c : i1
    flash.yield %vis : i1
  } : (tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>) -> (tensor<1x1x40x16xf32>, tensor<1x1x40xf32>)
  return %out : tensor<1x1x40x16xf32>
}

func.func @not_diagonal(%q: tensor<1x1x40x16xf32>, %k: tensor<1x1x40x16xf32>, %v: tensor<1x1x40x16xf32>) -> tensor<1x1x40x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 1 mask_mod {
  ^bb0(%i: index, %j: index):
    %vis = arith.cmpi ne, %i, %j : index
    flash.yield %vis : i1
  } : (tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>) -> (tensor<1x1x40x16xf32>, tensor<1x1x40xf32>)
  return %out : tensor<1x1x40x16xf32>
}

func.func @too_wide(%q: tensor<1x1x40x16xf32>, %k: tensor<1x1x40x16xf32>, %v: tensor<1x1x40x16xf32>) -> tensor<1x1x40x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 1 mask_mod {
  ^bb0(%i: index, %j: index):
    %w = arith.constant 2147483648 : index
    %d = arith.subi %i, %j : index
    %n = arith.cmpi sle, %d, %w : index
    %c = arith.cmpi sge, %i, %j : index
    %vis = arith.andi %n, %c : i1
    flash.yield %vis : i1
  } : (tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>) -> (tensor<1x1x40x16xf32>, tensor<1x1x40xf32>)
  return %out : tensor<1x1x40x16xf32>
}

func.func @right_open(%q: tensor<1x1x40x16xf32>, %k: tensor<1x1x40x16xf32>, %v: tensor<1x1x40x16xf32>) -> tensor<1x1x40x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 1 mask_mod {
  ^bb0(%i: index, %j: index):
    %m5 = arith.constant -5 : index
    %d = arith.subi %j, %i : index
    %vis = arith.cmpi sgt, %d, %m5 : index
    flash.yield %vis : i1
  } : (tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>) -> (tensor<1x1x40x16xf32>, tensor<1x1x40xf32>)
  return %out : tensor<1x1x40x16xf32>
}

// Over a causal mask attribute (bottom-right aligned where Sq != Sk) the band does not merge: the modifier stays.
// CHECK-LABEL: tile.kernel @over_causal_attention_fwd(
// CHECK-SAME: window_left = -1, window_right = 0, element_type = f32, mask_mod = @mask_mod_
func.func @over_causal(%q: tensor<1x1x40x16xf32>, %k: tensor<1x1x40x16xf32>, %v: tensor<1x1x40x16xf32>) -> tensor<1x1x40x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<causal> num_kv_heads = 1 mask_mod {
  ^bb0(%i: index, %j: index):
    %w = arith.constant 8 : index
    %d = arith.subi %i, %j : index
    %vis = arith.cmpi sle, %d, %w : index
    flash.yield %vis : i1
  } : (tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>, tensor<1x1x40x16xf32>) -> (tensor<1x1x40x16xf32>, tensor<1x1x40xf32>)
  return %out : tensor<1x1x40x16xf32>
}

// A modifier that reads the head (even heads see a band, odd ones the same band: still a function of h): stays.
// CHECK-LABEL: tile.kernel @reads_head_attention_fwd(
// CHECK-SAME: window_left = -1, window_right = -1, element_type = f32, mask_mod = @mask_mod_
func.func @reads_head(%q: tensor<1x2x40x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>) -> tensor<1x2x40x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c0 = arith.constant 0 : index
    %any = arith.cmpi sge, %h, %c0 : index
    %c = arith.cmpi sge, %i, %j : index
    %vis = arith.andi %any, %c : i1
    flash.yield %vis : i1
  } : (tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>) -> (tensor<1x2x40x16xf32>, tensor<1x2x40xf32>)
  return %out : tensor<1x2x40x16xf32>
}
