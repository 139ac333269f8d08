// Which score modifiers are separable: s + A(b, h, q) + B(b, h, k) by their form, A and B finite (kSeparable in the
// printed struct). The warp-specialised kernels then add the key part B once a key column (forward) or key row
// (backward) and leave the query part A out of the scores, adding it to lse (forward) or taking it from the lse the
// producer stages (backward): with a reference row q' and key k', T(q, k) = T(q', k) + (T(q, k') - T(q', k')), T =
// score(0, q, k). Sums, differences, negations, products with a factor free of q and k and conversions keep the parts
// apart; an op of both q and k that is none of those (a min, a product of two distances, a read at both) joins them,
// and so does any use of s but s + T. A part that may be infinite (an f32 bias read and added: its -inf masks, and
// -inf - -inf is NaN) keeps the element-wise form.
//
// RUN: flashc %s --emit=cuda -o - | FileCheck %s
// The forward's tuning space takes the wide key block (192) under a separable modifier only (its softmax holds
// nothing more than the plain one's; #tile.attention score_separable).
// RUN: flashc %s --print-tuning-space | FileCheck %s --check-prefix=SPACE
// RUN: flashc %s --emit=cubin --arch=sm_90a --ptxas-report -o %t.cubin 2>&1 \
// RUN:   | grep -a -A1 -E "properties for flashc_(alibi|positions|negated)_attention_(fwd|bwd)$" \
// RUN:   | FileCheck %s --check-prefix=PTXAS

// ALiBi: s + slope[h] · (k - q). A(q) = -slope[h] · q, B(k) = slope[h] · k.
// CHECK-LABEL: // ---- alibi_attention_bwd ----
// CHECK: static constexpr bool kSeparable = true;
func.func @alibi(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>,
                 %slopes: tensor<4xf32>) -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      score_mod(%slopes) {
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %ki: index, %m: tensor<4xf32>):
    %slope = tensor.extract %m[%h] : tensor<4xf32>
    %d = arith.subi %ki, %qi : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %bias = arith.mulf %slope, %df : f32
    %r = arith.addf %s, %bias : f32
    flash.yield %r : f32
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<4xf32>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// A key bias and a query bias from f32 tables, added one after the other: (s + kb[h, k]) + qb[h, q]. Apart, but a
// table may hold -inf (a masked key or query): not separable.
// CHECK-LABEL: // ---- two_tables_attention_bwd ----
// CHECK: static constexpr bool kSeparable = false;
func.func @two_tables(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>,
                      %kb: tensor<4x33xf32>, %qb: tensor<4x33xf32>) -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      score_mod(%kb, %qb) {
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %ki: index, %tk: tensor<4x33xf32>, %tq: tensor<4x33xf32>):
    %c33 = arith.constant 33 : index
    %kr = arith.remsi %ki, %c33 : index
    %qr = arith.remsi %qi, %c33 : index
    %x = tensor.extract %tk[%h, %kr] : tensor<4x33xf32>
    %y = tensor.extract %tq[%h, %qr] : tensor<4x33xf32>
    %s1 = arith.addf %s, %x : f32
    %r = arith.addf %s1, %y : f32
    flash.yield %r : f32
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<4x33xf32>, tensor<4x33xf32>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// s - 0.5 · (q - k) · 2 in the two-index form, subtracted: still apart (constants times a difference).
// CHECK-LABEL: // ---- negated_attention_bwd ----
// CHECK: static constexpr bool kSeparable = true;
func.func @negated(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>)
    -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      score_mod {
  ^bb0(%s: f32, %qi: index, %ki: index):
    %c2 = arith.constant 2 : index
    %d = arith.subi %qi, %ki : index
    %d2 = arith.muli %d, %c2 : index
    %d64 = arith.index_cast %d2 : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %half = arith.constant 0.5 : f32
    %bias = arith.mulf %df, %half : f32
    %r = arith.subf %s, %bias : f32
    flash.yield %r : f32
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// ALiBi over positions read from an i32 table (packed or padded sequences): s + slope[h] · (pos[k] - pos[q]). The
// reads are integers (finite), the slope a factor: separable.
// CHECK-LABEL: // ---- positions_attention_bwd ----
// CHECK: static constexpr bool kSeparable = true;
func.func @positions(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>,
                     %slopes: tensor<4xf32>, %pos: tensor<4096xi32>) -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      score_mod(%slopes, %pos) {
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %ki: index, %m: tensor<4xf32>, %p: tensor<4096xi32>):
    %slope = tensor.extract %m[%h] : tensor<4xf32>
    %pk = tensor.extract %p[%ki] : tensor<4096xi32>
    %pq = tensor.extract %p[%qi] : tensor<4096xi32>
    %pki = arith.index_cast %pk : i32 to index
    %pqi = arith.index_cast %pq : i32 to index
    %d = arith.subi %pki, %pqi : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %bias = arith.mulf %slope, %df : f32
    %r = arith.addf %s, %bias : f32
    flash.yield %r : f32
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<4xf32>, tensor<4096xi32>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// Apart, but with parts that may be infinite: s + log(k + 1) - log(q + 1) (a log may give -inf, as exp, a division or
// a square root may give inf): the element-wise form.
// CHECK-LABEL: // ---- logs_attention_bwd ----
// CHECK: static constexpr bool kSeparable = false;
func.func @logs(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>)
    -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      score_mod {
  ^bb0(%s: f32, %qi: index, %ki: index):
    %c1 = arith.constant 1 : index
    %k1 = arith.addi %ki, %c1 : index
    %q1 = arith.addi %qi, %c1 : index
    %k64 = arith.index_cast %k1 : index to i64
    %q64 = arith.index_cast %q1 : index to i64
    %kf = arith.sitofp %k64 : i64 to f32
    %qf = arith.sitofp %q64 : i64 to f32
    %lk = math.log %kf : f32
    %lq = math.log %qf : f32
    %s1 = arith.addf %s, %lk : f32
    %r = arith.subf %s1, %lq : f32
    flash.yield %r : f32
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// The same form with finite parts is separable: s + 0.5 · (k + 1) - 0.5 · (q + 1) through the same conversions.
// CHECK-LABEL: // ---- halves_attention_bwd ----
// CHECK: static constexpr bool kSeparable = true;
func.func @halves(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>)
    -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      score_mod {
  ^bb0(%s: f32, %qi: index, %ki: index):
    %c1 = arith.constant 1 : index
    %half = arith.constant 0.5 : f32
    %k1 = arith.addi %ki, %c1 : index
    %q1 = arith.addi %qi, %c1 : index
    %k64 = arith.index_cast %k1 : index to i64
    %q64 = arith.index_cast %q1 : index to i64
    %kf = arith.sitofp %k64 : i64 to f32
    %qf = arith.sitofp %q64 : i64 to f32
    %lk = arith.mulf %kf, %half : f32
    %lq = arith.mulf %half, %qf : f32
    %s1 = arith.addf %s, %lk : f32
    %r = arith.subf %s1, %lq : f32
    flash.yield %r : f32
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// A clamped distance joins q and k (min / max of both): a relative-position bias table, not separable.
// CHECK-LABEL: // ---- clamped_attention_bwd ----
// CHECK: static constexpr bool kSeparable = false;
func.func @clamped(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>,
                   %t: tensor<4x33xf32>) -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      score_mod(%t) {
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %ki: index, %m: tensor<4x33xf32>):
    %lo = arith.constant -16 : index
    %hi = arith.constant 16 : index
    %d = arith.subi %ki, %qi : index
    %d1 = arith.maxsi %d, %lo : index
    %d2 = arith.minsi %d1, %hi : index
    %i = arith.addi %d2, %hi : index
    %x = tensor.extract %m[%h, %i] : tensor<4x33xf32>
    %r = arith.addf %s, %x : f32
    flash.yield %r : f32
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<4x33xf32>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// A product of two distances joins them: s + (k - q) · (k - q) · 0.01, not separable.
// CHECK-LABEL: // ---- squared_attention_bwd ----
// CHECK: static constexpr bool kSeparable = false;
func.func @squared(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>)
    -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      score_mod {
  ^bb0(%s: f32, %qi: index, %ki: index):
    %d = arith.subi %ki, %qi : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %sq = arith.mulf %df, %df : f32
    %c = arith.constant 0.01 : f32
    %bias = arith.mulf %sq, %c : f32
    %r = arith.addf %s, %bias : f32
    flash.yield %r : f32
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// A factor on s (2 s + slope · (k - q)): the softmax would see 2 s, not s + T; not separable.
// CHECK-LABEL: // ---- doubled_attention_bwd ----
// CHECK: static constexpr bool kSeparable = false;
func.func @doubled(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>)
    -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      score_mod {
  ^bb0(%s: f32, %qi: index, %ki: index):
    %d = arith.subi %ki, %qi : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %s2 = arith.addf %s, %s : f32
    %r = arith.addf %s2, %df : f32
    flash.yield %r : f32
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// A sum whose integer arithmetic may wrap is not a sum: (k - q) · 2^20 narrowed to i32 truncates past |k - q| =
// 2048, and the split would then add a different bias than the element-wise form (+21.5 against -21.5 at q = 1,
// k = 2048).
// CHECK-LABEL: // ---- truncated_attention_bwd ----
// CHECK: static constexpr bool kSeparable = false;
func.func @truncated(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>)
    -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      score_mod {
  ^bb0(%s: f32, %qi: index, %ki: index):
    %c = arith.constant 1048576 : index
    %d = arith.subi %ki, %qi : index
    %m = arith.muli %d, %c : index
    %t = arith.index_cast %m : index to i32
    %f = arith.sitofp %t : i32 to f32
    %e = arith.constant 1.0e-8 : f32
    %b = arith.mulf %f, %e : f32
    %r = arith.addf %s, %b : f32
    flash.yield %r : f32
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// An i32 read is below 2^31, not 1: t[k] · 2^40 may pass 2^63 and wrap, so t[k] · 2^40 - q is not a sum of parts.
// CHECK-LABEL: // ---- wrapped_read_attention_bwd ----
// CHECK: static constexpr bool kSeparable = false;
func.func @wrapped_read(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>,
                        %ids: tensor<?xi32>) -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      score_mod(%ids) {
  ^bb0(%s: f32, %qi: index, %ki: index, %t: tensor<?xi32>):
    %r = tensor.extract %t[%ki] : tensor<?xi32>
    %ri = arith.index_cast %r : i32 to index
    %c = arith.constant 1099511627776 : index
    %m = arith.muli %ri, %c : index
    %d = arith.subi %m, %qi : index
    %d64 = arith.index_cast %d : index to i64
    %f = arith.sitofp %d64 : i64 to f32
    %e = arith.constant 1.0e-20 : f32
    %b = arith.mulf %f, %e : f32
    %res = arith.addf %s, %b : f32
    flash.yield %res : f32
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?xi32>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// A finite factor can still overflow f32: -1e38 · q is -inf past q = 3, which the split's differences turn into NaN.
// CHECK-LABEL: // ---- overflowing_attention_bwd ----
// CHECK: static constexpr bool kSeparable = false;
func.func @overflowing(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>)
    -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      score_mod {
  ^bb0(%s: f32, %qi: index, %ki: index):
    %q64 = arith.index_cast %qi : index to i64
    %qf = arith.sitofp %q64 : i64 to f32
    %c = arith.constant -1.0e38 : f32
    %b = arith.mulf %c, %qf : f32
    %r = arith.addf %s, %b : f32
    flash.yield %r : f32
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// The separable modifiers' forwards and backwards compile without spills.
// PTXAS-COUNT-6: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: spill

// SPACE-LABEL: "kernel": "alibi_attention_fwd",
// SPACE: block_n=192
// SPACE-LABEL: "kernel": "two_tables_attention_bwd",
// SPACE-NOT: block_n=192
// SPACE-LABEL: "kernel": "negated_attention_bwd",
// SPACE-LABEL: "kernel": "clamped_attention_fwd",
// SPACE-NOT: block_n=192
// SPACE-LABEL: "kernel": "squared_attention_bwd",
