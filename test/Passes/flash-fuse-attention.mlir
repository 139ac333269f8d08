// RUN: flash-opt %s --flash-fuse-attention --split-input-file -verify-diagnostics | FileCheck %s
//
// O = softmax(mask(c · Q·Kᵀ))·V  ==>  flash.attention(Q, K, V, scale = c, mask).
// Every accepted spelling below must give the same op; the second half lists
// graphs that must stay as they are.

// The textbook form: Kᵀ through transpose_b, scale then mask on the scores.
// CHECK-LABEL: func.func @causal_mha
// CHECK-SAME: (%[[Q:.+]]: tensor<?x16x?x128xbf16>, %[[K:.+]]: tensor<?x16x?x128xbf16>, %[[V:.+]]: tensor<?x16x?x128xbf16>)
// CHECK-NEXT: %[[OUT:.+]], %{{.+}} = flash.attention %[[Q]], %[[K]], %[[V]] scale = 0.0883883461 mask = #flash.mask<causal> num_kv_heads = 16 : (tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>) -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>)
// CHECK-NEXT: return %[[OUT]]
func.func @causal_mha(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x16x?x128xbf16>, %v: tensor<?x16x?x128xbf16>) -> tensor<?x16x?x128xbf16> {
  %s = flash.matmul %q, %k transpose_b : tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16> -> tensor<?x16x?x?xbf16>
  %t = flash.scale %s by 0.088388347648318447 : tensor<?x16x?x?xbf16>
  %m = flash.mask %t <causal> : tensor<?x16x?x?xbf16>
  %p = flash.softmax %m : tensor<?x16x?x?xbf16>
  %o = flash.matmul %p, %v : tensor<?x16x?x?xbf16>, tensor<?x16x?x128xbf16> -> tensor<?x16x?x128xbf16>
  return %o : tensor<?x16x?x128xbf16>
}

// -----

// Mask before scale: c · (-inf) = -inf for c > 0, so the order does not matter.
// CHECK-LABEL: func.func @mask_then_scale
// CHECK-NEXT: flash.attention %{{.+}} scale = 1.250000e-01 mask = #flash.mask<causal> num_kv_heads = 4
// CHECK-NOT: flash.softmax
func.func @mask_then_scale(%q: tensor<2x4x64x64xf32>, %k: tensor<2x4x64x64xf32>, %v: tensor<2x4x64x32xf32>) -> tensor<2x4x64x32xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<2x4x64x64xf32>, tensor<2x4x64x64xf32> -> tensor<2x4x64x64xf32>
  %m = flash.mask %s <causal> : tensor<2x4x64x64xf32>
  %t = flash.scale %m by 0.125 : tensor<2x4x64x64xf32>
  %p = flash.softmax %t : tensor<2x4x64x64xf32>
  %o = flash.matmul %p, %v : tensor<2x4x64x64xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x32xf32>
  return %o : tensor<2x4x64x32xf32>
}

// -----

// Scale on Q: (c·Q)·Kᵀ = c·(Q·Kᵀ); no mask gives #flash.mask<none>.
// CHECK-LABEL: func.func @scale_on_query
// CHECK-SAME: (%[[Q:.+]]: tensor<{{.+}}>, %[[K:.+]]: tensor<{{.+}}>, %[[V:.+]]: tensor<{{.+}}>)
// CHECK-NEXT: flash.attention %[[Q]], %[[K]], %[[V]] scale = 1.250000e-01 mask = #flash.mask<none> num_kv_heads = 4
// CHECK-NOT: flash.scale
func.func @scale_on_query(%q: tensor<?x4x?x64xf16>, %k: tensor<?x4x?x64xf16>, %v: tensor<?x4x?x64xf16>) -> tensor<?x4x?x64xf16> {
  %qs = flash.scale %q by 0.125 : tensor<?x4x?x64xf16>
  %s = flash.matmul %qs, %k transpose_b : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16> -> tensor<?x4x?x?xf16>
  %p = flash.softmax %s : tensor<?x4x?x?xf16>
  %o = flash.matmul %p, %v : tensor<?x4x?x?xf16>, tensor<?x4x?x64xf16> -> tensor<?x4x?x64xf16>
  return %o : tensor<?x4x?x64xf16>
}

// -----

// Scale on K, and a second scale on the scores: Q·(a·K)ᵀ·b = (a·b)·Q·Kᵀ with
// a·b = 0.5 · 0.25 = 0.125.
// CHECK-LABEL: func.func @scale_on_key_and_scores
// CHECK-SAME: (%[[Q:.+]]: tensor<{{.+}}>, %[[K:.+]]: tensor<{{.+}}>, %[[V:.+]]: tensor<{{.+}}>)
// CHECK-NEXT: flash.attention %[[Q]], %[[K]], %[[V]] scale = 1.250000e-01 mask = #flash.mask<none>
func.func @scale_on_key_and_scores(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %ks = flash.scale %k by 0.5 : tensor<1x2x8x16xf32>
  %s = flash.matmul %q, %ks transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %t = flash.scale %s by 0.25 : tensor<1x2x8x8xf32>
  %p = flash.softmax %t : tensor<1x2x8x8xf32>
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// A scale on Q that is also used elsewhere stays for that use; the attention
// reads the unscaled Q and carries the factor.
// CHECK-LABEL: func.func @shared_query_scale
// CHECK-SAME: (%[[Q:.+]]: tensor<{{.+}}>, %[[K:.+]]: tensor<{{.+}}>, %[[V:.+]]: tensor<{{.+}}>)
// CHECK: %[[QS:.+]] = flash.scale %[[Q]] by 5.000000e-01
// CHECK: %[[OUT:.+]], %{{.+}} = flash.attention %[[Q]], %[[K]], %[[V]] scale = 5.000000e-01
// CHECK: return %[[OUT]], %[[QS]]
func.func @shared_query_scale(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {
  %qs = flash.scale %q by 0.5 : tensor<1x2x8x16xf32>
  %s = flash.matmul %qs, %k transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %p = flash.softmax %s : tensor<1x2x8x8xf32>
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o, %qs : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
}

// -----

// Self-attention on one scaled tensor: (c·X)·(c·X)ᵀ = c²·X·Xᵀ, c² = 0.25.
// CHECK-LABEL: func.func @self_attention_shared_scale
// CHECK-SAME: (%[[X:.+]]: tensor<{{.+}}>, %[[V:.+]]: tensor<{{.+}}>)
// CHECK-NEXT: flash.attention %[[X]], %[[X]], %[[V]] scale = 2.500000e-01
// CHECK-NOT: flash.scale
func.func @self_attention_shared_scale(%x: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %xs = flash.scale %x by 0.5 : tensor<1x2x8x16xf32>
  %s = flash.matmul %xs, %xs transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %p = flash.softmax %s : tensor<1x2x8x8xf32>
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Grouped-query attention: 32 query heads share 8 kv heads through grouped
// matmul broadcasting (query head h reads kv head h / 4).
// CHECK-LABEL: func.func @gqa
// CHECK-NEXT: flash.attention %{{.+}} scale = 0.0883883461 mask = #flash.mask<causal> num_kv_heads = 8 : (tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>) -> (tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>)
func.func @gqa(%q: tensor<?x32x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>) -> tensor<?x32x?x128xbf16> {
  %s = flash.matmul %q, %k transpose_b : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x?xbf16>
  %t = flash.scale %s by 0.088388347648318447 : tensor<?x32x?x?xbf16>
  %m = flash.mask %t <causal> : tensor<?x32x?x?xbf16>
  %p = flash.softmax %m : tensor<?x32x?x?xbf16>
  %o = flash.matmul %p, %v : tensor<?x32x?x?xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x128xbf16>
  return %o : tensor<?x32x?x128xbf16>
}

// -----

// Sliding window, Sq = 100 queries against Sk = 37 keys (bottom-right aligned).
// CHECK-LABEL: func.func @window_ragged
// CHECK-NEXT: flash.attention %{{.+}} scale = 1.250000e-01 mask = #flash.mask<sliding_window, left = 16, right = 0> num_kv_heads = 2 : (tensor<3x2x100x64xf32>, tensor<3x2x37x64xf32>, tensor<3x2x37x48xf32>) -> (tensor<3x2x100x48xf32>, tensor<3x2x100xf32>)
func.func @window_ragged(%q: tensor<3x2x100x64xf32>, %k: tensor<3x2x37x64xf32>, %v: tensor<3x2x37x48xf32>) -> tensor<3x2x100x48xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<3x2x100x64xf32>, tensor<3x2x37x64xf32> -> tensor<3x2x100x37xf32>
  %t = flash.scale %s by 0.125 : tensor<3x2x100x37xf32>
  %m = flash.mask %t <sliding_window, left = 16, right = 0> : tensor<3x2x100x37xf32>
  %p = flash.softmax %m : tensor<3x2x100x37xf32>
  %o = flash.matmul %p, %v : tensor<3x2x100x37xf32>, tensor<3x2x37x48xf32> -> tensor<3x2x100x48xf32>
  return %o : tensor<3x2x100x48xf32>
}

// -----

// A mask with a modifier (prefix-LM over 20 keys, on top of a window): the
// modifier's region moves into the attention's mask_mod, the window stays
// its mask attribute.
// CHECK-LABEL: func.func @mask_with_modifier
// CHECK-NEXT: flash.attention %{{.+}} scale = 1.250000e-01 mask = #flash.mask<sliding_window, left = 30, right = 0> num_kv_heads = 2 mask_mod {
// CHECK-NEXT: ^bb0(%[[Q:.+]]: index, %[[K:.+]]: index):
// CHECK-NEXT:   %[[C:.+]] = arith.constant 20 : index
// CHECK:        %[[IN:.+]] = arith.cmpi slt, %[[K]], %[[C]] : index
// CHECK-NEXT:   %[[R:.+]] = arith.remsi %[[Q]], %{{.+}} : index
// CHECK:        flash.yield %{{.+}} : i1
// CHECK-NEXT: } : (tensor<2x2x45x64xf32>
// CHECK-NOT: flash.mask
func.func @mask_with_modifier(%q: tensor<2x2x45x64xf32>, %k: tensor<2x2x45x64xf32>, %v: tensor<2x2x45x32xf32>) -> tensor<2x2x45x32xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<2x2x45x64xf32>, tensor<2x2x45x64xf32> -> tensor<2x2x45x45xf32>
  %t = flash.scale %s by 0.125 : tensor<2x2x45x45xf32>
  %m = flash.mask %t <sliding_window, left = 30, right = 0> mod {
  ^bb0(%i: index, %j: index):
    %c20 = arith.constant 20 : index
    %c2 = arith.constant 2 : index
    %c0 = arith.constant 0 : index
    %in_prefix = arith.cmpi slt, %j, %c20 : index   // key in the first 20, or
    %r = arith.remsi %i, %c2 : index
    %even_row = arith.cmpi eq, %r, %c0 : index      // an even query row
    %visible = arith.ori %in_prefix, %even_row : i1
    flash.yield %visible : i1
  } : tensor<2x2x45x45xf32>
  %p = flash.softmax %m : tensor<2x2x45x45xf32>
  %o = flash.matmul %p, %v : tensor<2x2x45x45xf32>, tensor<2x2x45x32xf32> -> tensor<2x2x45x32xf32>
  return %o : tensor<2x2x45x32xf32>
}

// -----

// Kᵀ written explicitly as a matmul result: Kᵀ = Aᵀ·B, so K = Bᵀ·A is
// re-emitted (operands swapped, flags flipped) and fed to the attention.
// CHECK-LABEL: func.func @key_transposed_by_matmul
// CHECK-SAME: (%[[Q:.+]]: tensor<{{.+}}>, %[[A:.+]]: tensor<{{.+}}>, %[[B:.+]]: tensor<{{.+}}>, %[[V:.+]]: tensor<{{.+}}>)
// CHECK-NEXT: %[[K:.+]] = flash.matmul %[[B]], %[[A]] transpose_a : tensor<2x4x16x10xf32>, tensor<2x4x16x64xf32> -> tensor<2x4x10x64xf32>
// CHECK-NEXT: flash.attention %[[Q]], %[[K]], %[[V]] scale = 1.250000e-01 mask = #flash.mask<none> num_kv_heads = 4
// CHECK-NOT: flash.matmul
func.func @key_transposed_by_matmul(%q: tensor<2x4x8x64xf32>, %a: tensor<2x4x16x64xf32>, %b: tensor<2x4x16x10xf32>, %v: tensor<2x4x10x64xf32>) -> tensor<2x4x8x64xf32> {
  %kt = flash.matmul %a, %b transpose_a : tensor<2x4x16x64xf32>, tensor<2x4x16x10xf32> -> tensor<2x4x64x10xf32>
  %s = flash.matmul %q, %kt : tensor<2x4x8x64xf32>, tensor<2x4x64x10xf32> -> tensor<2x4x8x10xf32>
  %t = flash.scale %s by 0.125 : tensor<2x4x8x10xf32>
  %p = flash.softmax %t : tensor<2x4x8x10xf32>
  %o = flash.matmul %p, %v : tensor<2x4x8x10xf32>, tensor<2x4x10x64xf32> -> tensor<2x4x8x64xf32>
  return %o : tensor<2x4x8x64xf32>
}

// -----

// Two attention chains in one function both fuse; the graph between them is kept.
// CHECK-LABEL: func.func @two_layers
// CHECK: %[[O1:.+]], %{{.+}} = flash.attention
// CHECK: %[[X:.+]] = flash.add %[[O1]], %{{.+}}
// CHECK: flash.attention %[[X]]
func.func @two_layers(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %p = flash.softmax %s : tensor<1x2x8x8xf32>
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  %x = flash.add %o, %q : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  %s2 = flash.matmul %x, %k transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %p2 = flash.softmax %s2 : tensor<1x2x8x8xf32>
  %o2 = flash.matmul %p2, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o2 : tensor<1x2x8x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Graphs that must not fuse.
//===----------------------------------------------------------------------===//

// The scores are also returned: fusing would have to keep the N×N matrix.
// CHECK-LABEL: func.func @scores_used_twice
// CHECK-NOT: flash.attention
// CHECK: flash.softmax
func.func @scores_used_twice(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>) {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %p = flash.softmax %s : tensor<1x2x8x8xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: 'flash.matmul' in the score chain has other users}}
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o, %s : tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>
}

// -----

// The probabilities are also returned.
// CHECK-LABEL: func.func @probabilities_used_twice
// CHECK-NOT: flash.attention
// CHECK: flash.softmax
func.func @probabilities_used_twice(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>) {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %p = flash.softmax %s : tensor<1x2x8x8xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: the softmax result has other users}}
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o, %p : tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>
}

// -----

// A masked intermediate with a second use.
// CHECK-LABEL: func.func @masked_scores_used_twice
// CHECK-NOT: flash.attention
func.func @masked_scores_used_twice(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>) {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %m = flash.mask %s <causal> : tensor<1x2x8x8xf32>
  %p = flash.softmax %m : tensor<1x2x8x8xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: 'flash.mask' in the score chain has other users}}
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o, %m : tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>
}

// -----

// Two masks are not one attention mask.
// CHECK-LABEL: func.func @two_masks
// CHECK-NOT: flash.attention
func.func @two_masks(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %m = flash.mask %s <causal> : tensor<1x2x8x8xf32>
  %m2 = flash.mask %m <sliding_window, left = 2, right = 0> : tensor<1x2x8x8xf32>
  %p = flash.softmax %m2 : tensor<1x2x8x8xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: two flash.mask ops on the scores (one attention mask only)}}
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Kᵀ passed pre-transposed as an argument [B, H, D, Sk]: flash.attention
// needs K as [B, H, Sk, D] and the dialect has no transpose, so no fusion.
// CHECK-LABEL: func.func @key_transposed_argument
// CHECK-NOT: flash.attention
func.func @key_transposed_argument(%q: tensor<1x2x8x16xf32>, %kt: tensor<1x2x16x8xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = flash.matmul %q, %kt : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x8x8xf32>
  %p = flash.softmax %s : tensor<1x2x8x8xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: K enters as Kᵀ [B, H, D, Sk]: write the scores as flash.matmul %q, %k transpose_b with K [B, H, Sk, D]}}
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// A negative scale after a mask turns -inf into +inf: not an attention.
// CHECK-LABEL: func.func @negative_scale
// CHECK-NOT: flash.attention
func.func @negative_scale(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %m = flash.mask %s <causal> : tensor<1x2x8x8xf32>
  %t = flash.scale %m by -1.0 : tensor<1x2x8x8xf32>
  %p = flash.softmax %t : tensor<1x2x8x8xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: a flash.scale by -1.000000e+00 after the flash.mask turns its -inf into +inf or NaN (the attention masks after scaling: a positive total scale after the mask fuses)}}
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// The same with the total scale positive (Q negated first): the scale after the mask still turns -inf into +inf,
// so the graph's rows are NaN; fused (scale 0.25, it was) they were finite.
// CHECK-LABEL: func.func @negative_scale_after_mask_positive_total
// CHECK-NOT: flash.attention
func.func @negative_scale_after_mask_positive_total(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %qn = flash.scale %q by -1.0 : tensor<1x2x8x16xf32>
  %s = flash.matmul %qn, %k transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %m = flash.mask %s <causal> : tensor<1x2x8x8xf32>
  %t = flash.scale %m by -0.25 : tensor<1x2x8x8xf32>
  %p = flash.softmax %t : tensor<1x2x8x8xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: a flash.scale by -2.500000e-01 after the flash.mask turns its -inf into +inf or NaN}}
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// A total scale of 1e-60 has no positive f32 value: not fused.
// CHECK-LABEL: func.func @scale_underflows_f32
// CHECK-NOT: flash.attention
func.func @scale_underflows_f32(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %t = flash.scale %s by 1.0e-60 : tensor<1x2x8x8xf32>
  %p = flash.softmax %t : tensor<1x2x8x8xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: the total score scale 1.000000e-60 is not a positive, finite f32}}
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// A total scale above flash.attention's bound (1e30, the tile kernels'): not fused.
// CHECK-LABEL: func.func @scale_above_limit
// CHECK-NOT: flash.attention
func.func @scale_above_limit(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %t = flash.scale %s by 1.0e+35 : tensor<1x2x8x8xf32>
  %p = flash.softmax %t : tensor<1x2x8x8xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: the total score scale 1.000000e+35 is above flash.attention's limit 1.000000e+30}}
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// No softmax between the matmuls: plain linear attention, not fused.
// CHECK-LABEL: func.func @no_softmax
// CHECK-NOT: flash.attention
func.func @no_softmax(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %t = flash.scale %s by 0.25 : tensor<1x2x8x8xf32>
  %o = flash.matmul %t, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// V transposed in the second matmul ([B, H, Dv, Sk]): not fused.
// CHECK-LABEL: func.func @value_transposed
// CHECK-NOT: flash.attention
func.func @value_transposed(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %vt: tensor<1x2x16x8xf32>) -> tensor<1x2x8x16xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %p = flash.softmax %s : tensor<1x2x8x8xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: the P·V matmul transposes an operand (V must be [B, H, Sk, Dv])}}
  %o = flash.matmul %p, %vt transpose_b : tensor<1x2x8x8xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Q given transposed ([B, H, D, Sq] with transpose_a): not fused.
// CHECK-LABEL: func.func @query_transposed
// CHECK-NOT: flash.attention
func.func @query_transposed(%qt: tensor<1x2x16x8xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = flash.matmul %qt, %k transpose_a transpose_b : tensor<1x2x16x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %p = flash.softmax %s : tensor<1x2x8x8xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: the scores matmul transposes Q (Q must be [B, H, Sq, D])}}
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Rank-3 [B·H, S, D] operands: flash.attention is rank 4 only.
// CHECK-LABEL: func.func @rank3
// CHECK-NOT: flash.attention
func.func @rank3(%q: tensor<8x8x16xf32>, %k: tensor<8x8x16xf32>, %v: tensor<8x8x16xf32>) -> tensor<8x8x16xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<8x8x16xf32>, tensor<8x8x16xf32> -> tensor<8x8x8xf32>
  %p = flash.softmax %s : tensor<8x8x8xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: Q, K and V must be rank 4 [B, H, S, D]}}
  %o = flash.matmul %p, %v : tensor<8x8x8xf32>, tensor<8x8x16xf32> -> tensor<8x8x16xf32>
  return %o : tensor<8x8x16xf32>
}

// -----

// A batch broadcast (4 query batches against 2 key batches) is not a GQA head
// grouping: not fused.
// CHECK-LABEL: func.func @grouped_batch
// CHECK-NOT: flash.attention
func.func @grouped_batch(%q: tensor<4x2x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>) -> tensor<4x2x8x16xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<4x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<4x2x8x8xf32>
  %p = flash.softmax %s : tensor<4x2x8x8xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: Q, K and V have different batch sizes (a broadcast batch is not an attention batch)}}
  %o = flash.matmul %p, %v : tensor<4x2x8x8xf32>, tensor<2x2x8x16xf32> -> tensor<4x2x8x16xf32>
  return %o : tensor<4x2x8x16xf32>
}

// -----

// Dynamic head count: flash.attention needs static heads.
// CHECK-LABEL: func.func @dynamic_heads
// CHECK-NOT: flash.attention
func.func @dynamic_heads(%q: tensor<1x?x8x16xf32>, %k: tensor<1x?x8x16xf32>, %v: tensor<1x?x8x16xf32>) -> tensor<1x?x8x16xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x?x8x16xf32>, tensor<1x?x8x16xf32> -> tensor<1x?x8x8xf32>
  %p = flash.softmax %s : tensor<1x?x8x8xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: head counts and head dims must be static}}
  %o = flash.matmul %p, %v : tensor<1x?x8x8xf32>, tensor<1x?x8x16xf32> -> tensor<1x?x8x16xf32>
  return %o : tensor<1x?x8x16xf32>
}

// -----

// An unrelated graph (an FFN, and a dead softmax) is left exactly as written.
// CHECK-LABEL: func.func @unrelated
// CHECK-NEXT: %[[H:.+]] = flash.matmul
// CHECK-NEXT: %[[G:.+]] = flash.gelu tanh %[[H]]
// CHECK-NEXT: %[[Y:.+]] = flash.matmul %[[G]]
// CHECK-NEXT: %{{.+}} = flash.softmax %[[Y]]
// CHECK-NEXT: return %[[Y]]
func.func @unrelated(%x: tensor<?x64xf32>, %w1: tensor<64x256xf32>, %w2: tensor<256x64xf32>) -> tensor<?x64xf32> {
  %h = flash.matmul %x, %w1 : tensor<?x64xf32>, tensor<64x256xf32> -> tensor<?x256xf32>
  %g = flash.gelu tanh %h : tensor<?x256xf32>
  %y = flash.matmul %g, %w2 : tensor<?x256xf32>, tensor<256x64xf32> -> tensor<?x64xf32>
  %dead = flash.softmax %y : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// A rank-2 softmax(X·W)·E is not attention: left as written, and the warning
// names the shape rule (not the Kᵀ spelling).
// CHECK-LABEL: func.func @rank2_softmax_chain
// CHECK-NOT: flash.attention
func.func @rank2_softmax_chain(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %e: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %s = flash.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %p = flash.softmax %s : tensor<8x32xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: Q, K and V must be rank 4 [B, H, S, D]}}
  %o = flash.matmul %p, %e : tensor<8x32xf32>, tensor<32x16xf32> -> tensor<8x16xf32>
  return %o : tensor<8x16xf32>
}

// -----

// The graph spelling of a score modifier: a flash.score between the scale and
// the mask (ALiBi reading per-head slopes) moves into the attention's
// score_mod with its operand; the scale stays the attention's (the region sees
// scale · q·k, as the scale came first in the graph).
// CHECK-LABEL: func.func @score_alibi
// CHECK-SAME: %[[SLOPES:[a-z0-9]+]]: tensor<2xf32>
// CHECK-NEXT: flash.attention %{{.+}} scale = 1.250000e-01 mask = #flash.mask<causal> num_kv_heads = 2 score_mod(%[[SLOPES]]) {
// CHECK-NEXT: ^bb0(%[[S:.+]]: f32, %{{.+}}: index, %[[H:.+]]: index, %{{.+}}: index, %{{.+}}: index, %[[M:.+]]: tensor<2xf32>):
// CHECK-NEXT:   tensor.extract %[[M]][%[[H]]]
// CHECK:        flash.yield %{{.+}} : f32
// CHECK-NEXT: } : (tensor<1x2x40x64xf32>, tensor<1x2x40x64xf32>, tensor<1x2x40x32xf32>, tensor<2xf32>)
// CHECK-NEXT: return
func.func @score_alibi(%q: tensor<1x2x40x64xf32>, %k: tensor<1x2x40x64xf32>, %v: tensor<1x2x40x32xf32>, %slopes: tensor<2xf32>) -> tensor<1x2x40x32xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x40x64xf32>, tensor<1x2x40x64xf32> -> tensor<1x2x40x40xf32>
  %t = flash.scale %s by 0.125 : tensor<1x2x40x40xf32>
  %b = flash.score %t mod(%slopes : tensor<2xf32>) {
  ^bb0(%x: f32, %bb: index, %h: index, %i: index, %j: index, %m: tensor<2xf32>):
    %slope = tensor.extract %m[%h] : tensor<2xf32>
    %d = arith.subi %j, %i : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %bias = arith.mulf %slope, %df : f32
    %r = arith.addf %x, %bias : f32
    flash.yield %r : f32
  } : tensor<1x2x40x40xf32>
  %m = flash.mask %b <causal> : tensor<1x2x40x40xf32>
  %p = flash.softmax %m : tensor<1x2x40x40xf32>
  %o = flash.matmul %p, %v : tensor<1x2x40x40xf32>, tensor<1x2x40x32xf32> -> tensor<1x2x40x32xf32>
  return %o : tensor<1x2x40x32xf32>
}

// -----

// A scale after the flash.score would change what the region sees: not fused.
func.func @score_then_scale(%q: tensor<1x2x40x64xf32>, %k: tensor<1x2x40x64xf32>, %v: tensor<1x2x40x32xf32>) -> tensor<1x2x40x32xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x40x64xf32>, tensor<1x2x40x64xf32> -> tensor<1x2x40x40xf32>
  %c = flash.score %s mod {
  ^bb0(%x: f32, %i: index, %j: index):
    %cap = arith.constant 2.0 : f32
    %y = arith.divf %x, %cap : f32
    %t = math.tanh %y : f32
    %r = arith.mulf %cap, %t : f32
    flash.yield %r : f32
  } : tensor<1x2x40x40xf32>
  %t = flash.scale %c by 0.125 : tensor<1x2x40x40xf32>
  %p = flash.softmax %t : tensor<1x2x40x40xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: a flash.scale after the flash.score (the attention's score modifier sees the scaled scores: scale before flash.score)}}
  %o = flash.matmul %p, %v : tensor<1x2x40x40xf32>, tensor<1x2x40x32xf32> -> tensor<1x2x40x32xf32>
  return %o : tensor<1x2x40x32xf32>
}

// -----

// A mask before the flash.score: the attention masks the modified scores (a
// cap would turn -inf into -cap), so this order is not fused.
func.func @mask_then_score(%q: tensor<1x2x40x64xf32>, %k: tensor<1x2x40x64xf32>, %v: tensor<1x2x40x32xf32>) -> tensor<1x2x40x32xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x40x64xf32>, tensor<1x2x40x64xf32> -> tensor<1x2x40x40xf32>
  %m = flash.mask %s <causal> : tensor<1x2x40x40xf32>
  %c = flash.score %m mod {
  ^bb0(%x: f32, %i: index, %j: index):
    %cap = arith.constant 2.0 : f32
    %y = arith.divf %x, %cap : f32
    %t = math.tanh %y : f32
    %r = arith.mulf %cap, %t : f32
    flash.yield %r : f32
  } : tensor<1x2x40x40xf32>
  %p = flash.softmax %c : tensor<1x2x40x40xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: a flash.mask before the flash.score (the attention masks the modified scores: mask after flash.score)}}
  %o = flash.matmul %p, %v : tensor<1x2x40x40xf32>, tensor<1x2x40x32xf32> -> tensor<1x2x40x32xf32>
  return %o : tensor<1x2x40x32xf32>
}

// -----

// The elementwise graph spelling of a mask: index tensors by tensor.generate (iota over the element's
// (b, h, q, k)), compared, and select(visible, s, -inf). select(c, s, -inf) with c free of the scores is a
// mask: lifted into a flash.mask region (c at one element), then fused into the attention's mask_mod, whose
// blocks the compiler classifies. The tensor.dim sizes of the generates and the splat go with them.
// CHECK-LABEL: func.func @causal_by_iota
// CHECK-NEXT: flash.attention %{{.+}} scale = 1.250000e-01 mask = #flash.mask<none> num_kv_heads = 4 mask_mod {
// CHECK-NEXT: ^bb0(%[[B:.+]]: index, %[[H:.+]]: index, %[[QI:.+]]: index, %[[KI:.+]]: index):
// CHECK-NEXT: %[[VIS:.+]] = arith.cmpi sge, %[[QI]], %[[KI]] : index
// CHECK-NEXT: flash.yield %[[VIS]] : i1
// CHECK-NOT: tensor.
// CHECK-NOT: arith.select
func.func @causal_by_iota(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>) -> tensor<?x4x?x64xbf16> {
  %s = flash.matmul %q, %k transpose_b : tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16> -> tensor<?x4x?x?xbf16>
  %t = flash.scale %s by 0.125 : tensor<?x4x?x?xbf16>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %b = tensor.dim %t, %c0 : tensor<?x4x?x?xbf16>
  %sq = tensor.dim %t, %c2 : tensor<?x4x?x?xbf16>
  %sk = tensor.dim %t, %c3 : tensor<?x4x?x?xbf16>
  // q_idx and kv_idx of every score
  %qi = tensor.generate %b, %sq, %sk {
  ^bb0(%i0: index, %i1: index, %i: index, %j: index):
    tensor.yield %i : index
  } : tensor<?x4x?x?xindex>
  %ki = tensor.generate %b, %sq, %sk {
  ^bb0(%i0: index, %i1: index, %i: index, %j: index):
    tensor.yield %j : index
  } : tensor<?x4x?x?xindex>
  // visible = q_idx >= kv_idx; s' = visible ? s : -inf
  %visible = arith.cmpi sge, %qi, %ki : tensor<?x4x?x?xindex>
  %ninf = arith.constant 0xFF80 : bf16
  %minus = tensor.splat %ninf[%b, %sq, %sk] : tensor<?x4x?x?xbf16>
  %m = arith.select %visible, %t, %minus : tensor<?x4x?x?xi1>, tensor<?x4x?x?xbf16>
  %p = flash.softmax %m : tensor<?x4x?x?xbf16>
  %o = flash.matmul %p, %v : tensor<?x4x?x?xbf16>, tensor<?x4x?x64xbf16> -> tensor<?x4x?x64xbf16>
  return %o : tensor<?x4x?x64xbf16>
}

// -----

// A document mask as a gather: each token's document id read by index in the generate's body (the outer
// tensor becomes the region's operand), compared for equality; with the causal flash.mask before it. (50 ids: the
// fused op's region reads them at q and k, which range over 50 rows each.)
// CHECK-LABEL: func.func @documents_by_gather
// CHECK-SAME: %[[DOC:[a-z0-9]+]]: tensor<50xi32>
// CHECK-NEXT: flash.attention %{{.+}} mask = #flash.mask<causal> num_kv_heads = 2 mask_mod(%[[DOC]]) {
// CHECK-NEXT: ^bb0(%{{.+}}: index, %{{.+}}: index, %[[QI:.+]]: index, %[[KI:.+]]: index, %[[IDS:.+]]: tensor<50xi32>):
// CHECK-NEXT: %[[DQ:.+]] = tensor.extract %[[IDS]][%[[QI]]] : tensor<50xi32>
// CHECK-NEXT: %[[DQI:.+]] = arith.index_cast %[[DQ]] : i32 to index
// CHECK-NEXT: %[[DK:.+]] = tensor.extract %[[IDS]][%[[KI]]] : tensor<50xi32>
// CHECK-NEXT: %[[DKI:.+]] = arith.index_cast %[[DK]] : i32 to index
// CHECK-NEXT: %[[SAME:.+]] = arith.cmpi eq, %[[DQI]], %[[DKI]] : index
// CHECK-NEXT: flash.yield %[[SAME]] : i1
func.func @documents_by_gather(%q: tensor<1x2x50x32xf32>, %k: tensor<1x2x50x32xf32>, %v: tensor<1x2x50x32xf32>, %doc: tensor<50xi32>) -> tensor<1x2x50x32xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x50x32xf32>, tensor<1x2x50x32xf32> -> tensor<1x2x50x50xf32>
  %t = flash.scale %s by 0.17677669529663687 : tensor<1x2x50x50xf32>
  %c = flash.mask %t <causal> : tensor<1x2x50x50xf32>
  // doc[q_idx] and doc[kv_idx] of every score
  %dq = tensor.generate {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %d = tensor.extract %doc[%i] : tensor<50xi32>
    %x = arith.index_cast %d : i32 to index
    tensor.yield %x : index
  } : tensor<1x2x50x50xindex>
  %dk = tensor.generate {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %d = tensor.extract %doc[%j] : tensor<50xi32>
    %x = arith.index_cast %d : i32 to index
    tensor.yield %x : index
  } : tensor<1x2x50x50xindex>
  %same = arith.cmpi eq, %dq, %dk : tensor<1x2x50x50xindex>
  %minus = arith.constant dense<0xFF800000> : tensor<1x2x50x50xf32>
  %m = arith.select %same, %c, %minus : tensor<1x2x50x50xi1>, tensor<1x2x50x50xf32>
  %p = flash.softmax %m : tensor<1x2x50x50xf32>
  %o = flash.matmul %p, %v : tensor<1x2x50x50xf32>, tensor<1x2x50x32xf32> -> tensor<1x2x50x32xf32>
  return %o : tensor<1x2x50x32xf32>
}

// -----

// A score modifier in the graph spelling: ALiBi's bias slopes[h] · (kv_idx - q_idx) as a generate reading the
// slopes, added to the scaled scores, then a tanh cap 30 · tanh(s / 30) by splat constants. Any expression of
// the scores is a flash.score region (s: the scaled score in f32), fused into the attention's score_mod.
// CHECK-LABEL: func.func @alibi_capped_by_ops
// CHECK-SAME: %[[SLOPES:[a-z0-9]+]]: tensor<2xf32>
// CHECK-NEXT: flash.attention %{{.+}} scale = 0.176776692 mask = #flash.mask<none> num_kv_heads = 2 score_mod(%[[SLOPES]]) {
// CHECK-NEXT: ^bb0(%[[S:.+]]: f32, %{{.+}}: index, %[[H:.+]]: index, %[[QI:.+]]: index, %[[KI:.+]]: index, %[[M:.+]]: tensor<2xf32>):
// CHECK-NEXT: %[[CAP:.+]] = arith.constant 3.000000e+01 : f32
// CHECK-NEXT: %[[SLOPE:.+]] = tensor.extract %[[M]][%[[H]]] : tensor<2xf32>
// CHECK-NEXT: %[[D:.+]] = arith.subi %[[KI]], %[[QI]] : index
// CHECK-NEXT: %[[D64:.+]] = arith.index_cast %[[D]] : index to i64
// CHECK-NEXT: %[[DF:.+]] = arith.sitofp %[[D64]] : i64 to f32
// CHECK-NEXT: %[[BIAS:.+]] = arith.mulf %[[SLOPE]], %[[DF]] : f32
// CHECK-NEXT: %[[X:.+]] = arith.addf %[[S]], %[[BIAS]] : f32
// CHECK-NEXT: %[[Y:.+]] = arith.divf %[[X]], %[[CAP]] : f32
// CHECK-NEXT: %[[T:.+]] = math.tanh %[[Y]] : f32
// CHECK-NEXT: %[[R:.+]] = arith.mulf %[[CAP]], %[[T]] : f32
// CHECK-NEXT: flash.yield %[[R]] : f32
func.func @alibi_capped_by_ops(%q: tensor<1x2x41x32xf32>, %k: tensor<1x2x41x32xf32>, %v: tensor<1x2x41x32xf32>, %slopes: tensor<2xf32>) -> tensor<1x2x41x32xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x41x32xf32>, tensor<1x2x41x32xf32> -> tensor<1x2x41x41xf32>
  %t = flash.scale %s by 0.17677669529663687 : tensor<1x2x41x41xf32>
  // bias[b, h, q, k] = slopes[h] · (k - q)
  %bias = tensor.generate {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %slope = tensor.extract %slopes[%h] : tensor<2xf32>
    %d = arith.subi %j, %i : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %r = arith.mulf %slope, %df : f32
    tensor.yield %r : f32
  } : tensor<1x2x41x41xf32>
  %biased = arith.addf %t, %bias : tensor<1x2x41x41xf32>
  // 30 · tanh(s / 30)
  %cap = arith.constant dense<30.0> : tensor<1x2x41x41xf32>
  %x = arith.divf %biased, %cap : tensor<1x2x41x41xf32>
  %th = math.tanh %x : tensor<1x2x41x41xf32>
  %capped = arith.mulf %cap, %th : tensor<1x2x41x41xf32>
  %p = flash.softmax %capped : tensor<1x2x41x41xf32>
  %o = flash.matmul %p, %v : tensor<1x2x41x41xf32>, tensor<1x2x41x32xf32> -> tensor<1x2x41x32xf32>
  return %o : tensor<1x2x41x32xf32>
}

// -----

// A full-size tensor added to the scores is not a modifier (it would be read per score from memory, as a
// [B, H, Sq, Sk] operand): the warning says to read it by index in a tensor.generate; nothing is fused.
// CHECK-LABEL: func.func @full_bias
// CHECK: arith.addf
// CHECK: flash.softmax
func.func @full_bias(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %bias: tensor<1x2x8x8xf32>) -> tensor<1x2x8x16xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %b = arith.addf %s, %bias : tensor<1x2x8x8xf32>
  // expected-warning @+1 {{elementwise ops on the scores not lifted into attention modifiers: a tensor argument meets the scores elementwise (read it by index in a tensor.generate: a full-size operand is not a modifier)}}
  %p = flash.softmax %b : tensor<1x2x8x8xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: 'arith.addf' between the scores matmul and the softmax (only flash.scale, one flash.score and one flash.mask may sit there)}}
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// An op the regions do not take (math.sin) is named by the region's verifier; the graph stays as written.
// CHECK-LABEL: func.func @unsupported_op
// CHECK: math.sin
func.func @unsupported_op(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %w = math.sin %s : tensor<1x2x8x8xf32>
  // expected-warning @+1 {{elementwise ops on the scores not lifted into attention modifiers: 'math.sin'}}
  %p = flash.softmax %w : tensor<1x2x8x8xf32>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: 'math.sin' between the scores matmul and the softmax}}
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// A static query length of 0: flash.attention's static sizes are positive, so the graph stays.
// CHECK-LABEL: func.func @zero_queries
// CHECK-NOT: flash.attention
func.func @zero_queries(%q: tensor<1x2x0x64xbf16>, %k: tensor<1x2x5x64xbf16>, %v: tensor<1x2x5x64xbf16>) -> tensor<1x2x0x64xbf16> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x0x64xbf16>, tensor<1x2x5x64xbf16> -> tensor<1x2x0x5xbf16>
  %p = flash.softmax %s : tensor<1x2x0x5xbf16>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: a static size of 0 in Q, K or V (flash.attention's sizes are positive; a size that may be 0 at run time is ?)}}
  %o = flash.matmul %p, %v : tensor<1x2x0x5xbf16>, tensor<1x2x5x64xbf16> -> tensor<1x2x0x64xbf16>
  return %o : tensor<1x2x0x64xbf16>
}

// -----

// V's key length static where K's is dynamic: the graph's matmuls accept it (the sizes agree unless both are known),
// flash.attention does not (each tensor is checked at launch on its own: Sk = 100 in K would read V past its 5 rows;
// 5 because fusion-numerics.test evaluates the graph at that size). The op the pass built fails its verifier, so it
// is dropped and the graph stays, with the verifier's reason.
// CHECK-LABEL: func.func @key_length_static_in_v_only
// CHECK-NOT: flash.attention
// CHECK: flash.softmax
func.func @key_length_static_in_v_only(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
                                       %v: tensor<?x2x5x64xbf16>) -> tensor<?x2x?x64xbf16> {
  %s = flash.matmul %q, %k transpose_b : tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x2x?x?xbf16>
  %p = flash.softmax %s : tensor<?x2x?x?xbf16>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: value has shape [?, 2, 5, 64], expected [B, Hkv, Sk, Dv] = [?, 2, ?, *] (dimension 2 is 5 here and dynamic in another operand: a size must be static in every tensor that has it, or dynamic in all)}}
  %o = flash.matmul %p, %v : tensor<?x2x?x?xbf16>, tensor<?x2x5x64xbf16> -> tensor<?x2x?x64xbf16>
  return %o : tensor<?x2x?x64xbf16>
}

// -----

// A batch static in Q and V, dynamic in K: not a broadcast; flash.attention's verifier refuses the spelling (static in
// all or dynamic in all) and the fusion quotes it.
// CHECK-LABEL: func.func @batch_dynamic_in_k_only
// CHECK-NOT: flash.attention
func.func @batch_dynamic_in_k_only(%q: tensor<5x2x8x64xbf16>, %k: tensor<?x2x8x64xbf16>, %v: tensor<5x2x8x64xbf16>)
    -> tensor<5x2x8x64xbf16> {
  %s = flash.matmul %q, %k transpose_b : tensor<5x2x8x64xbf16>, tensor<?x2x8x64xbf16> -> tensor<5x2x8x8xbf16>
  %p = flash.softmax %s : tensor<5x2x8x8xbf16>
  // expected-warning @+1 {{softmax(...)·V not fused into flash.attention: key has shape [?, 2, 8, 64], expected [B, Hkv, Sk, D] = [5, *, *, 64] (dimension 0 is dynamic here and 5 in another operand: a size must be static in every tensor that has it, or dynamic in all)}}
  %o = flash.matmul %p, %v : tensor<5x2x8x8xbf16>, tensor<5x2x8x64xbf16> -> tensor<5x2x8x64xbf16>
  return %o : tensor<5x2x8x64xbf16>
}
