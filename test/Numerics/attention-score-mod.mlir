// Score modifiers (flash.attention's score_mod): the tile programs on the CPU against the float64 reference, forward
// and backward (the backward differentiates the region: dS · d mod / ds), in both backward forms, the deterministic
// one and sm_80's plans. flash-run-tile gives f32 tensor arguments values in [-2, 2] (slopes, a bias table) and i32
// ones runs of equal values in [0, 4). Bound: f32, max |tile - ref| / max |ref| < 1e-5.
//
// RUN: flash-run-tile %s --backward --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 --input-range=2 | FileCheck %s
// RUN: flash-run-tile %s --backward --deterministic --block-m=16 --block-n=32 --warps=1 --tolerance=1e-5 --input-range=2 | FileCheck %s
// RUN: flash-run-tile %s --backward --backward-form=transposed --block-m=32 --block-n=32 --warps=2 --tolerance=1e-5 --input-range=2 | FileCheck %s
// RUN: flash-run-tile %s --backward --target=sm_80 --tolerance=1e-5 --input-range=2 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @alibi_gqa forward result 0: {{.*}} ok
// CHECK: @alibi_gqa backward d_q: {{.*}} ok
// CHECK: @alibi_gqa backward d_k: {{.*}} ok
// CHECK: @alibi_gqa backward d_v: {{.*}} ok
// CHECK: @softcap_region forward lse: {{.*}} ok
// CHECK: @softcap_region backward d_k: {{.*}} ok
// CHECK: @bias_table backward d_q: {{.*}} ok
// CHECK: @bias_table backward d_v: {{.*}} ok
// CHECK: @documents_and_distance backward d_k: {{.*}} ok
// CHECK: @clipped backward d_q: {{.*}} ok
// CHECK: @graph_alibi forward result 0: {{.*}} ok
// CHECK: @graph_alibi backward d_k: {{.*}} ok
// CHECK: @element_through_index backward d_k: {{.*}} ok
// CHECK: @shared_slopes backward d_q: {{.*}} ok
// CHECK: @shared_slopes backward d_q2: {{.*}} ok
// CHECK: @shared_slopes backward d_v2: {{.*}} ok

// ALiBi: s + slope[h] · (k - q), causal, GQA (4 query heads on 2), Sq != Sk (ragged against the 16 / 32 blocks).
func.func @alibi_gqa(%q: tensor<1x4x37x32xf32>, %k: tensor<1x2x53x32xf32>, %v: tensor<1x2x53x32xf32>, %slopes: tensor<4xf32>) -> tensor<1x4x37x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<causal> num_kv_heads = 2 score_mod(%slopes) {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %m: tensor<4xf32>):
    %slope = tensor.extract %m[%h] : tensor<4xf32>
    %d = arith.subi %j, %i : index               // k - q (<= Sk - Sq under the causal mask)
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %bias = arith.mulf %slope, %df : f32
    %r = arith.addf %s, %bias : f32              // d/ds = 1
    flash.yield %r : f32
  } : (tensor<1x4x37x32xf32>, tensor<1x2x53x32xf32>, tensor<1x2x53x32xf32>, tensor<4xf32>) -> (tensor<1x4x37x32xf32>, tensor<1x4x37xf32>)
  return %out : tensor<1x4x37x32xf32>
}

// The softcap written as a region: 2 · tanh(s / 2) (d/ds = 1 - tanh²), with a sliding window.
func.func @softcap_region(%q: tensor<2x2x45x16xf32>, %k: tensor<2x2x45x16xf32>, %v: tensor<2x2x45x16xf32>) -> tensor<2x2x45x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<sliding_window, left = 9, right = 3> num_kv_heads = 2 score_mod {
  ^bb0(%s: f32, %i: index, %j: index):
    %cap = arith.constant 2.0 : f32
    %x = arith.divf %s, %cap : f32
    %t = math.tanh %x : f32
    %r = arith.mulf %cap, %t : f32
    flash.yield %r : f32
  } : (tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>) -> (tensor<2x2x45x16xf32>, tensor<2x2x45xf32>)
  return %out : tensor<2x2x45x16xf32>
}

// A learned relative-position bias: s + table[h, clamp(k - q + 8, 0, 16)], and s · exp(table[h, 0]) (a per-head
// temperature: d/ds = exp(...)), no mask.
func.func @bias_table(%q: tensor<1x2x29x32xf32>, %k: tensor<1x2x31x32xf32>, %v: tensor<1x2x31x32xf32>, %table: tensor<2x17xf32>) -> tensor<1x2x29x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 2 score_mod(%table) {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %t: tensor<2x17xf32>):
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %rel = arith.subi %j, %i : index
    %shifted = arith.addi %rel, %c8 : index
    %low = arith.maxsi %shifted, %c0 : index
    %bucket = arith.minsi %low, %c16 : index
    %bias = tensor.extract %t[%h, %bucket] : tensor<2x17xf32>
    %log_temp = tensor.extract %t[%h, %c0] : tensor<2x17xf32>
    %temp = math.exp %log_temp : f32
    %scaled = arith.mulf %s, %temp : f32
    %r = arith.addf %scaled, %bias : f32
    flash.yield %r : f32
  } : (tensor<1x2x29x32xf32>, tensor<1x2x31x32xf32>, tensor<1x2x31x32xf32>, tensor<2x17xf32>) -> (tensor<1x2x29x32xf32>, tensor<1x2x29xf32>)
  return %out : tensor<1x2x29x32xf32>
}

// A mask modifier and a score modifier together: causal within documents (i32 ids), a distance penalty that
// reads the ids too (-0.5 · |doc[k] - doc[q]| is 0 here: the mask hides other documents) plus -0.1 · (q - k).
func.func @documents_and_distance(%q: tensor<1x2x50x16xf32>, %k: tensor<1x2x50x16xf32>, %v: tensor<1x2x50x16xf32>, %doc: tensor<50xi32>, %ids: tensor<50xi32>) -> tensor<1x2x50x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<causal> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %d: tensor<50xi32>):
    %a = tensor.extract %d[%i] : tensor<50xi32>
    %c = tensor.extract %d[%j] : tensor<50xi32>
    %x = arith.index_cast %a : i32 to index
    %y = arith.index_cast %c : i32 to index
    %same = arith.cmpi eq, %x, %y : index
    flash.yield %same : i1
  } score_mod(%ids) {
  ^bb0(%s: f32, %i: index, %j: index, %d: tensor<50xi32>):
    %a = tensor.extract %d[%i] : tensor<50xi32>
    %c = tensor.extract %d[%j] : tensor<50xi32>
    %x = arith.index_cast %a : i32 to index
    %y = arith.index_cast %c : i32 to index
    %gap = arith.subi %y, %x : index
    %gap32 = arith.index_cast %gap : index to i32
    %gapf = arith.sitofp %gap32 : i32 to f32
    %neg = arith.negf %gapf : f32
    %abs = arith.maximumf %gapf, %neg : f32
    %half = arith.constant -0.5 : f32
    %p1 = arith.mulf %abs, %half : f32
    %dist = arith.subi %i, %j : index
    %dist64 = arith.index_cast %dist : index to i64
    %distf = arith.sitofp %dist64 : i64 to f32
    %tenth = arith.constant -0.1 : f32
    %p2 = arith.mulf %distf, %tenth : f32
    %sum = arith.addf %p1, %p2 : f32
    %r = arith.addf %s, %sum : f32
    flash.yield %r : f32
  } : (tensor<1x2x50x16xf32>, tensor<1x2x50x16xf32>, tensor<1x2x50x16xf32>, tensor<50xi32>, tensor<50xi32>) -> (tensor<1x2x50x16xf32>, tensor<1x2x50xf32>)
  return %out : tensor<1x2x50x16xf32>
}

// Branches of the score: min(s, 0.5) where s > 0 (its derivative 0 past the clip), else s · 2; and -inf (a key the
// modifier hides: no gradient) on the diagonal's right neighbour.
func.func @clipped(%q: tensor<1x1x33x16xf32>, %k: tensor<1x1x33x16xf32>, %v: tensor<1x1x33x16xf32>) -> tensor<1x1x33x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 1 score_mod {
  ^bb0(%s: f32, %i: index, %j: index):
    %zero = arith.constant 0.0 : f32
    %half = arith.constant 0.5 : f32
    %two = arith.constant 2.0 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %one = arith.constant 1 : index
    %positive = arith.cmpf ogt, %s, %zero : f32
    %clip = arith.minimumf %s, %half : f32
    %double = arith.mulf %s, %two : f32
    %v1 = arith.select %positive, %clip, %double : f32
    %next = arith.addi %i, %one : index
    %hide = arith.cmpi eq, %j, %next : index
    %r = arith.select %hide, %ninf, %v1 : f32
    flash.yield %r : f32
  } : (tensor<1x1x33x16xf32>, tensor<1x1x33x16xf32>, tensor<1x1x33x16xf32>) -> (tensor<1x1x33x16xf32>, tensor<1x1x33xf32>)
  return %out : tensor<1x1x33x16xf32>
}

// The graph spelling (flash.score between the scale and the mask, fused by flash-fuse-attention): the reference
// evaluates the unfused graph op by op.
func.func @graph_alibi(%q: tensor<1x2x41x32xf32>, %k: tensor<1x2x41x32xf32>, %v: tensor<1x2x41x32xf32>, %slopes: tensor<2xf32>) -> tensor<1x2x41x32xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x41x32xf32>, tensor<1x2x41x32xf32> -> tensor<1x2x41x41xf32>
  %t = flash.scale %s by 0.17677669529663687 : tensor<1x2x41x41xf32>
  %b = flash.score %t mod(%slopes : tensor<2xf32>) {
  ^bb0(%x: f32, %bb: index, %h: index, %i: index, %j: index, %m: tensor<2xf32>):
    %slope = tensor.extract %m[%h] : tensor<2xf32>
    %d = arith.subi %j, %i : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %bias = arith.mulf %slope, %df : f32
    %r = arith.addf %x, %bias : f32
    flash.yield %r : f32
  } : tensor<1x2x41x41xf32>
  %m = flash.mask %b <causal> : tensor<1x2x41x41xf32>
  %p = flash.softmax %m : tensor<1x2x41x41xf32>
  %o = flash.matmul %p, %v : tensor<1x2x41x41xf32>, tensor<1x2x41x32xf32> -> tensor<1x2x41x32xf32>
  return %o : tensor<1x2x41x32xf32>
}

// An i32 element through index and back to i32 for sitofp: the pipeline's canonicalizer folds the two casts to the
// element itself (sitofp of an i32 read), which the region's rules refused after the fold ("not allowed in score_mod").
func.func @element_through_index(%q: tensor<1x1x29x16xf32>, %k: tensor<1x1x29x16xf32>, %v: tensor<1x1x29x16xf32>, %ids: tensor<29xi32>) -> tensor<1x1x29x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 1 score_mod(%ids) {
  ^bb0(%s: f32, %i: index, %j: index, %t: tensor<29xi32>):
    %e = tensor.extract %t[%j] : tensor<29xi32>
    %x = arith.index_cast %e : i32 to index
    %x32 = arith.index_cast %x : index to i32   // folds with the cast above: sitofp(%e)
    %f = arith.sitofp %x32 : i32 to f32
    %r = arith.addf %s, %f : f32                // s + ids[k]
    flash.yield %r : f32
  } : (tensor<1x1x29x16xf32>, tensor<1x1x29x16xf32>, tensor<1x1x29x16xf32>, tensor<29xi32>) -> (tensor<1x1x29x16xf32>, tensor<1x1x29xf32>)
  return %out : tensor<1x1x29x16xf32>
}

// Two independent attentions reading one slopes tensor: the slopes get no gradient, so nothing is summed and the
// backward is generated (it was dropped with "summing their gradients is not supported yet").
func.func @shared_slopes(%q: tensor<1x2x23x16xf32>, %k: tensor<1x2x31x16xf32>, %v: tensor<1x2x31x16xf32>,
                         %q2: tensor<1x2x23x16xf32>, %k2: tensor<1x2x31x16xf32>, %v2: tensor<1x2x31x16xf32>,
                         %slopes: tensor<2xf32>) -> (tensor<1x2x23x16xf32>, tensor<1x2x23x16xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<causal> num_kv_heads = 2 score_mod(%slopes) {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %m: tensor<2xf32>):
    %sl = tensor.extract %m[%h] : tensor<2xf32>
    %d = arith.subi %j, %i : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %bias = arith.mulf %sl, %df : f32
    %r = arith.addf %s, %bias : f32             // s + slope[h] · (k - q)
    flash.yield %r : f32
  } : (tensor<1x2x23x16xf32>, tensor<1x2x31x16xf32>, tensor<1x2x31x16xf32>, tensor<2xf32>) -> (tensor<1x2x23x16xf32>, tensor<1x2x23xf32>)
  %o2, %lse2 = flash.attention %q2, %k2, %v2 scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 score_mod(%slopes) {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %m: tensor<2xf32>):
    %sl = tensor.extract %m[%h] : tensor<2xf32>
    %r = arith.mulf %s, %sl : f32               // s · slope[h]
    flash.yield %r : f32
  } : (tensor<1x2x23x16xf32>, tensor<1x2x31x16xf32>, tensor<1x2x31x16xf32>, tensor<2xf32>) -> (tensor<1x2x23x16xf32>, tensor<1x2x23xf32>)
  return %o, %o2 : tensor<1x2x23x16xf32>, tensor<1x2x23x16xf32>
}
