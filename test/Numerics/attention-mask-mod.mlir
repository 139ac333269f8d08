// Mask modifiers (flash.attention's mask_mod region): the tile programs on the
// CPU against the float64 reference, forward and backward, in both backward
// forms and the deterministic one. The modifier sees row indices (query q, key
// k); a key is visible when the mask attribute and the modifier both allow it.
// Rows that see no key (@empty_rows: every fifth query) give output 0, lse
// -inf and zero gradients. Bound: f32, max |tile - ref| / max |ref| < 1e-5.
//
// RUN: flash-run-tile %s --backward --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --deterministic --block-m=16 --block-n=32 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --backward-form=transposed --block-m=32 --block-n=32 --warps=2 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --target=sm_80 --tolerance=1e-5 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @prefix_lm forward result 0: {{.*}} ok
// CHECK: @prefix_lm backward d_v: {{.*}} ok
// CHECK: @chunked_local backward d_q: {{.*}} ok
// CHECK: @strided_or_diagonal backward d_k: {{.*}} ok
// CHECK: @mod_and_window backward d_v: {{.*}} ok
// CHECK: @empty_rows forward lse: {{.*}} ok
// CHECK: @empty_rows backward d_q: {{.*}} ok
// CHECK: @select_and_divisions backward d_v: {{.*}} ok
// CHECK: @gqa_sq_ne_sk backward d_k: {{.*}} ok

// Prefix-LM: the first 20 keys are visible to every query, causal after them.
func.func @prefix_lm(%q: tensor<1x2x70x32xf32>, %k: tensor<1x2x70x32xf32>, %v: tensor<1x2x70x32xf32>) -> tensor<1x2x70x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%i: index, %j: index):
    %prefix = arith.constant 20 : index
    %in_prefix = arith.cmpi slt, %j, %prefix : index   // j < 20
    %causal = arith.cmpi sle, %j, %i : index           // j <= i
    %visible = arith.ori %in_prefix, %causal : i1
    flash.yield %visible : i1
  } : (tensor<1x2x70x32xf32>, tensor<1x2x70x32xf32>, tensor<1x2x70x32xf32>) -> (tensor<1x2x70x32xf32>, tensor<1x2x70xf32>)
  return %out : tensor<1x2x70x32xf32>
}

// Chunked local attention: chunks of 24 rows attend within themselves (q / 24 == k / 24).
func.func @chunked_local(%q: tensor<2x1x61x32xf32>, %k: tensor<2x1x61x32xf32>, %v: tensor<2x1x61x32xf32>) -> tensor<2x1x61x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 1 mask_mod {
  ^bb0(%i: index, %j: index):
    %c = arith.constant 24 : index
    %qi = arith.divsi %i, %c : index
    %kj = arith.divsi %j, %c : index
    %same = arith.cmpi eq, %qi, %kj : index
    flash.yield %same : i1
  } : (tensor<2x1x61x32xf32>, tensor<2x1x61x32xf32>, tensor<2x1x61x32xf32>) -> (tensor<2x1x61x32xf32>, tensor<2x1x61xf32>)
  return %out : tensor<2x1x61x32xf32>
}

// Every third key, and the diagonal: blocks hidden in part everywhere (interior gaps).
func.func @strided_or_diagonal(%q: tensor<1x2x45x32xf32>, %k: tensor<1x2x45x32xf32>, %v: tensor<1x2x45x32xf32>) -> tensor<1x2x45x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%i: index, %j: index):
    %c3 = arith.constant 3 : index
    %c0 = arith.constant 0 : index
    %r = arith.remsi %j, %c3 : index
    %strided = arith.cmpi eq, %r, %c0 : index
    %diagonal = arith.cmpi eq, %i, %j : index
    %visible = arith.ori %strided, %diagonal : i1
    flash.yield %visible : i1
  } : (tensor<1x2x45x32xf32>, tensor<1x2x45x32xf32>, tensor<1x2x45x32xf32>) -> (tensor<1x2x45x32xf32>, tensor<1x2x45xf32>)
  return %out : tensor<1x2x45x32xf32>
}

// A modifier on top of a sliding window (left 30, causal): keys at even distance only.
func.func @mod_and_window(%q: tensor<1x2x66x32xf32>, %k: tensor<1x2x66x32xf32>, %v: tensor<1x2x66x32xf32>) -> tensor<1x2x66x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<sliding_window, left = 30, right = 0> num_kv_heads = 2 mask_mod {
  ^bb0(%i: index, %j: index):
    %c2 = arith.constant 2 : index
    %c0 = arith.constant 0 : index
    %d = arith.subi %i, %j : index
    %r = arith.remsi %d, %c2 : index
    %even = arith.cmpi eq, %r, %c0 : index
    flash.yield %even : i1
  } : (tensor<1x2x66x32xf32>, tensor<1x2x66x32xf32>, tensor<1x2x66x32xf32>) -> (tensor<1x2x66x32xf32>, tensor<1x2x66xf32>)
  return %out : tensor<1x2x66x32xf32>
}

// Every fifth query sees no key at all; the others see keys within 9 of them.
func.func @empty_rows(%q: tensor<1x2x50x32xf32>, %k: tensor<1x2x50x32xf32>, %v: tensor<1x2x50x32xf32>) -> tensor<1x2x50x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%i: index, %j: index):
    %c5 = arith.constant 5 : index
    %c0 = arith.constant 0 : index
    %c9 = arith.constant 9 : index
    %r = arith.remsi %i, %c5 : index
    %keep_row = arith.cmpi ne, %r, %c0 : index
    %lo = arith.subi %i, %c9 : index
    %hi = arith.addi %i, %c9 : index
    %after = arith.cmpi sge, %j, %lo : index
    %before = arith.cmpi sle, %j, %hi : index
    %near = arith.andi %after, %before : i1
    %visible = arith.andi %keep_row, %near : i1
    flash.yield %visible : i1
  } : (tensor<1x2x50x32xf32>, tensor<1x2x50x32xf32>, tensor<1x2x50x32xf32>) -> (tensor<1x2x50x32xf32>, tensor<1x2x50xf32>)
  return %out : tensor<1x2x50x32xf32>
}

// select, floor / ceil division, min and max: the first 10 queries are causal; later ones see
// keys in [floor(i / 4), ceil(i / 3) + min(i, 7)] but never past max(i, 30).
func.func @select_and_divisions(%q: tensor<1x1x57x32xf32>, %k: tensor<1x1x57x32xf32>, %v: tensor<1x1x57x32xf32>) -> tensor<1x1x57x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 1 mask_mod {
  ^bb0(%i: index, %j: index):
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c7 = arith.constant 7 : index
    %c10 = arith.constant 10 : index
    %c30 = arith.constant 30 : index
    %early = arith.cmpi slt, %i, %c10 : index
    %causal = arith.cmpi sle, %j, %i : index
    %lo = arith.floordivsi %i, %c4 : index
    %up = arith.ceildivsi %i, %c3 : index
    %m = arith.minsi %i, %c7 : index
    %hi0 = arith.addi %up, %m : index
    %cap = arith.maxsi %i, %c30 : index
    %hi = arith.minsi %hi0, %cap : index
    %ge = arith.cmpi sge, %j, %lo : index
    %le = arith.cmpi sle, %j, %hi : index
    %band = arith.andi %ge, %le : i1
    %visible = arith.select %early, %causal, %band : i1
    flash.yield %visible : i1
  } : (tensor<1x1x57x32xf32>, tensor<1x1x57x32xf32>, tensor<1x1x57x32xf32>) -> (tensor<1x1x57x32xf32>, tensor<1x1x57xf32>)
  return %out : tensor<1x1x57x32xf32>
}

// Grouped-query heads and Sq != Sk, with a causal mask attribute (bottom-right aligned) and a
// modifier hiding the keys 10..19 from every query.
func.func @gqa_sq_ne_sk(%q: tensor<1x4x23x32xf32>, %k: tensor<1x2x48x32xf32>, %v: tensor<1x2x48x32xf32>) -> tensor<1x4x23x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<causal> num_kv_heads = 2 mask_mod {
  ^bb0(%i: index, %j: index):
    %c10 = arith.constant 10 : index
    %c20 = arith.constant 20 : index
    %before = arith.cmpi slt, %j, %c10 : index
    %after = arith.cmpi sge, %j, %c20 : index
    %visible = arith.ori %before, %after : i1
    flash.yield %visible : i1
  } : (tensor<1x4x23x32xf32>, tensor<1x2x48x32xf32>, tensor<1x2x48x32xf32>) -> (tensor<1x4x23x32xf32>, tensor<1x4x23xf32>)
  return %out : tensor<1x4x23x32xf32>
}
