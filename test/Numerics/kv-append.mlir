// flash.kv_append through flash-tile and the CPU executor (#tile.decode roles kv_append_check and kv_append;
// the caches written in place) against the float64 graph evaluator, alone and before a decode that reads the
// appended caches (the decode then has no check kernel of its own: the append's covers it). flash-run-tile gives
// the sequences lengths T (every row new), the capacity and ragged ones between, and the pages a shuffle of the
// cache's (no two sequences write one row).
// RUN: flash-run-tile %s --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %s --tolerance=2e-2 --dynamic-size=1 | FileCheck %s
// RUN: flash-run-tile %s --tolerance=2e-2 --dynamic-size=5 --seed=7 | FileCheck %s

// Three new tokens a sequence into a cache of 16-row pages (40 pages, two a sequence: at most 34 in use at the
// default 17 sequences).
// The caches are the program's arguments 2 and 3, written in place:
//   k_cache'(b, h, L_b - 3 + t) = k_new[b, h, t], every other row unchanged.
// CHECK: @paged forward result 0 (argument 2, written in place): max relative error 0.000e+00 {{.*}} ok
// CHECK: @paged forward result 1 (argument 3, written in place): max relative error 0.000e+00 {{.*}} ok
func.func @paged(%k_new: tensor<?x2x3x64xbf16>, %v_new: tensor<?x2x3x128xbf16>, %k: tensor<40x16x2x64xbf16>,
                 %v: tensor<40x16x2x128xbf16>, %lens: tensor<?xi32>, %table: tensor<?x2xi32>)
    -> (tensor<40x16x2x64xbf16>, tensor<40x16x2x128xbf16>) {
  %kc, %vc = flash.kv_append %k_new, %v_new into %k, %v, %lens page_size = 16 block_table %table
      : (tensor<?x2x3x64xbf16>, tensor<?x2x3x128xbf16>, tensor<40x16x2x64xbf16>, tensor<40x16x2x128xbf16>,
         tensor<?xi32>, tensor<?x2xi32>) -> (tensor<40x16x2x64xbf16>, tensor<40x16x2x128xbf16>)
  return %kc, %vc : tensor<40x16x2x64xbf16>, tensor<40x16x2x128xbf16>
}

// A contiguous cache [B, Hkv, S, D] and a dynamic number of new tokens (blocks of 4 tokens: T = 5 takes two).
// CHECK: @contiguous forward result 0 (argument 2, written in place): max relative error 0.000e+00 {{.*}} ok
// CHECK: @contiguous forward result 1 (argument 3, written in place): max relative error 0.000e+00 {{.*}} ok
func.func @contiguous(%k_new: tensor<?x1x?x32xf16>, %v_new: tensor<?x1x?x32xf16>, %k: tensor<?x1x?x32xf16>,
                      %v: tensor<?x1x?x32xf16>, %lens: tensor<?xi32>)
    -> (tensor<?x1x?x32xf16>, tensor<?x1x?x32xf16>) {
  %kc, %vc = flash.kv_append %k_new, %v_new into %k, %v, %lens
      : (tensor<?x1x?x32xf16>, tensor<?x1x?x32xf16>, tensor<?x1x?x32xf16>, tensor<?x1x?x32xf16>, tensor<?xi32>)
      -> (tensor<?x1x?x32xf16>, tensor<?x1x?x32xf16>)
  return %kc, %vc : tensor<?x1x?x32xf16>, tensor<?x1x?x32xf16>
}

// The decode step: two new tokens appended, then attended with GQA 4 over the appended cache. Results 0 and 1 are
// out and lse; 2 and 3 the caches.
// CHECK: @append_then_decode forward result 0: max relative error {{.*}} ok
// CHECK: @append_then_decode forward result 1: max relative error {{.*}} ok
// CHECK: @append_then_decode forward result 2 (argument 3, written in place): max relative error 0.000e+00 {{.*}} ok
// CHECK: @append_then_decode forward result 3 (argument 4, written in place): max relative error 0.000e+00 {{.*}} ok
func.func @append_then_decode(%q: tensor<?x8x2x64xbf16>, %k_new: tensor<?x2x2x64xbf16>,
                              %v_new: tensor<?x2x2x64xbf16>, %k: tensor<40x16x2x64xbf16>,
                              %v: tensor<40x16x2x64xbf16>, %lens: tensor<?xi32>, %table: tensor<?x2xi32>)
    -> (tensor<?x8x2x64xbf16>, tensor<?x8x2xf32>, tensor<40x16x2x64xbf16>, tensor<40x16x2x64xbf16>) {
  %kc, %vc = flash.kv_append %k_new, %v_new into %k, %v, %lens page_size = 16 block_table %table
      : (tensor<?x2x2x64xbf16>, tensor<?x2x2x64xbf16>, tensor<40x16x2x64xbf16>, tensor<40x16x2x64xbf16>,
         tensor<?xi32>, tensor<?x2xi32>) -> (tensor<40x16x2x64xbf16>, tensor<40x16x2x64xbf16>)
  %out, %lse = flash.decode_attention %q, %kc, %vc, %lens block_table %table scale = 0.125 causal page_size = 16
      num_kv_heads = 2
      : (tensor<?x8x2x64xbf16>, tensor<40x16x2x64xbf16>, tensor<40x16x2x64xbf16>, tensor<?xi32>, tensor<?x2xi32>)
      -> (tensor<?x8x2x64xbf16>, tensor<?x8x2xf32>)
  return %out, %lse, %kc, %vc
      : tensor<?x8x2x64xbf16>, tensor<?x8x2xf32>, tensor<40x16x2x64xbf16>, tensor<40x16x2x64xbf16>
}

// An append beside a decode on other caches (its own names and size symbols; a capacity of 8 rows, so that
// three new tokens fit at every --dynamic-size): out, then the appended caches.
// CHECK: @beside_a_decode forward result 0: max relative error {{.*}} ok
// CHECK: @beside_a_decode forward result 1 (argument 6, written in place): max relative error 0.000e+00 {{.*}} ok
// CHECK: @beside_a_decode forward result 2 (argument 7, written in place): max relative error 0.000e+00 {{.*}} ok
func.func @beside_a_decode(%q: tensor<?x8x1x64xbf16>, %ka: tensor<?x2x?x64xbf16>, %va: tensor<?x2x?x64xbf16>, %la: tensor<?xi32>,
               %kn: tensor<?x2x3x64xbf16>, %vn: tensor<?x2x3x64xbf16>, %kb: tensor<?x2x8x64xbf16>,
               %vb: tensor<?x2x8x64xbf16>, %lb: tensor<?xi32>)
    -> (tensor<?x8x1x64xbf16>, tensor<?x2x8x64xbf16>, tensor<?x2x8x64xbf16>) {
  %out, %lse = flash.decode_attention %q, %ka, %va, %la scale = 0.125 num_kv_heads = 2
      : (tensor<?x8x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?xi32>)
      -> (tensor<?x8x1x64xbf16>, tensor<?x8x1xf32>)
  %k2, %v2 = flash.kv_append %kn, %vn into %kb, %vb, %lb
      : (tensor<?x2x3x64xbf16>, tensor<?x2x3x64xbf16>, tensor<?x2x8x64xbf16>, tensor<?x2x8x64xbf16>, tensor<?xi32>)
      -> (tensor<?x2x8x64xbf16>, tensor<?x2x8x64xbf16>)
  return %out, %k2, %v2 : tensor<?x8x1x64xbf16>, tensor<?x2x8x64xbf16>, tensor<?x2x8x64xbf16>
}
