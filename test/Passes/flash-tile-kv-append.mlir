// flash-tile on flash.kv_append: two #tile.decode kernels (the check: lengths in [T, capacity] and the pages they
// use; the copy: 4 new tokens of a sequence a block), the caches written in place. The append's results stand for
// the cache arguments: a returned one adds no program argument, a decode reading them reads the arguments, and a
// decode over the append's caches, lengths and table takes the append's verdict instead of checking again.
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-tile | FileCheck %s

// CHECK: tile.kernel @append_kv_append_check(%{{.*}}: !tile.tensor<?x8x?x128xbf16>, %{{.*}}: !tile.tensor<?x64x8x128xbf16>, %{{.*}}: !tile.tensor<?xi32>, %{{.*}}: !tile.tensor<?x?xi32>, %{{.*}}: !tile.tensor<4xi32>)
// (grid x: one block a sequence, the lengths' size)
// CHECK-SAME: grid = [#tile.grid<arg2[0]>, #tile.grid<1>, #tile.grid<1>]
// CHECK-SAME: spec = #tile.decode<role = kv_append_check, head_dim = 128, value_dim = 128, queries = 0, group = 1, page_size = 64, causal = false
// CHECK: tile.kernel @append_kv_append(
// (grid x: ceil(T / 4) blocks of new tokens; y: the sequences)
// CHECK-SAME: grid = [#tile.grid<ceildiv(arg0[2], 4)>, #tile.grid<arg0[0]>, #tile.grid<1>]
// CHECK-SAME: role = kv_append,
// No output arguments: the caches are written where they are.
// CHECK: func.func @append(%[[K:.*]]: !tile.tensor<?x8x?x128xbf16> {tile.dims = ["B", "", "T", ""], tile.name = "k_new"}, %[[V:.*]]: !tile.tensor<?x8x?x128xbf16> {tile.dims = ["B", "", "T", ""], tile.name = "v_new"}, %[[KC:.*]]: !tile.tensor<?x64x8x128xbf16> {tile.dims = ["pages", "", "", ""], tile.name = "k_cache"}, %[[VC:.*]]: !tile.tensor<?x64x8x128xbf16> {tile.dims = ["pages", "", "", ""], tile.name = "v_cache"}, %[[LENS:.*]]: !tile.tensor<?xi32> {tile.dims = ["B"], tile.name = "cache_seqlens"}, %[[TABLE:.*]]: !tile.tensor<?x?xi32> {tile.dims = ["B", "W"], tile.name = "block_table"}) attributes {tile.program}
// CHECK: %[[STATUS:.*]] = tile.alloc_tensor() {tile.name = "status_append", tile.zero_fill} : <4xi32>
// CHECK: tile.launch @append_kv_append_check(%[[K]], %[[KC]], %[[LENS]], %[[TABLE]], %[[STATUS]])
// CHECK: tile.launch @append_kv_append(%[[K]], %[[V]], %[[KC]], %[[VC]], %[[LENS]], %[[TABLE]], %[[STATUS]])
// CHECK-NEXT: return
func.func @append(%k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>, %kc: tensor<?x64x8x128xbf16>,
                  %vc: tensor<?x64x8x128xbf16>, %lens: tensor<?xi32>, %table: tensor<?x?xi32>)
    -> (tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>) {
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens page_size = 64 block_table %table
      : (tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>,
         tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>)
  return %k2, %v2 : tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>
}

// -----

// Append, then decode over the appended caches: four kernels, the decode's split and combine reading the append's
// verdict (no decode_check).
// CHECK-NOT: @step_decode_check
// CHECK: func.func @step(%[[Q:.*]]: !tile.tensor<?x32x1x128xbf16> {{.*}}, %[[K:.*]]: !tile.tensor<?x8x1x128xbf16> {{.*}}, %[[V:.*]]: !tile.tensor<?x8x1x128xbf16> {{.*}}, %[[KC:.*]]: !tile.tensor<?x8x?x128xbf16> {{.*}}, %[[VC:.*]]: !tile.tensor<?x8x?x128xbf16> {{.*}}, %[[LENS:.*]]: !tile.tensor<?xi32> {{.*}}, %[[OUT:.*]]: !tile.tensor<?x32x1x128xbf16> {{.*}}tile.name = "out"}, %{{.*}}: !tile.tensor<?x32x1xf32> {{.*}}tile.name = "lse"})
// CHECK: %[[STATUS:.*]] = tile.alloc_tensor() {tile.name = "status_append", tile.zero_fill}
// CHECK: tile.launch @step_kv_append_check(%[[K]], %[[KC]], %[[LENS]], %[[STATUS]])
// CHECK: tile.launch @step_kv_append(%[[K]], %[[V]], %[[KC]], %[[VC]], %[[LENS]], %[[STATUS]])
// CHECK-NOT: tile.launch @step_decode_check
// CHECK: tile.launch @step_decode_split(%[[Q]], %[[KC]], %[[VC]], %[[LENS]], %[[OUT]], {{.*}}, %[[STATUS]])
// CHECK: tile.launch @step_decode_combine({{.*}}, %[[STATUS]])
func.func @step(%q: tensor<?x32x1x128xbf16>, %k: tensor<?x8x1x128xbf16>, %v: tensor<?x8x1x128xbf16>,
                %kc: tensor<?x8x?x128xbf16>, %vc: tensor<?x8x?x128xbf16>, %lens: tensor<?xi32>)
    -> tensor<?x32x1x128xbf16> {
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens
      : (tensor<?x8x1x128xbf16>, tensor<?x8x1x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>,
         tensor<?xi32>) -> (tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>)
  %out, %lse = flash.decode_attention %q, %k2, %v2, %lens scale = 0.0883883 causal num_kv_heads = 8
      : (tensor<?x32x1x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?xi32>)
      -> (tensor<?x32x1x128xbf16>, tensor<?x32x1xf32>)
  return %out : tensor<?x32x1x128xbf16>
}

// -----

// The decode reads other lengths than the append wrote with: it checks them itself.
// CHECK: tile.launch @own_lengths_kv_append_check
// CHECK: tile.launch @own_lengths_decode_check
func.func @own_lengths(%q: tensor<?x8x1x64xbf16>, %k: tensor<?x2x1x64xbf16>, %v: tensor<?x2x1x64xbf16>,
                       %kc: tensor<?x2x?x64xbf16>, %vc: tensor<?x2x?x64xbf16>, %lens: tensor<?xi32>,
                       %lens2: tensor<?xi32>) -> tensor<?x8x1x64xbf16> {
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens
      : (tensor<?x2x1x64xbf16>, tensor<?x2x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>,
         tensor<?xi32>) -> (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>)
  %out, %lse = flash.decode_attention %q, %k2, %v2, %lens2 scale = 0.125 num_kv_heads = 2
      : (tensor<?x8x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?xi32>)
      -> (tensor<?x8x1x64xbf16>, tensor<?x8x1xf32>)
  return %out : tensor<?x8x1x64xbf16>
}

// -----

// In place needs the cache to be read by nothing else: its old contents are gone after the program.
func.func @cache_read_twice(%q: tensor<?x8x1x64xbf16>, %k: tensor<?x2x1x64xbf16>, %v: tensor<?x2x1x64xbf16>,
                            %kc: tensor<?x2x?x64xbf16>, %vc: tensor<?x2x?x64xbf16>, %lens: tensor<?xi32>)
    -> (tensor<?x8x1x64xbf16>, tensor<?x2x?x64xbf16>) {
  // expected-error @+1 {{flash-tile: the key cache (argument 3) is read by another op besides flash.kv_append; the program overwrites it in place, so use the append's result instead}}
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens
      : (tensor<?x2x1x64xbf16>, tensor<?x2x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>,
         tensor<?xi32>) -> (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>)
  %out, %lse = flash.decode_attention %q, %kc, %v2, %lens scale = 0.125 num_kv_heads = 2
      : (tensor<?x8x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?xi32>)
      -> (tensor<?x8x1x64xbf16>, tensor<?x8x1xf32>)
  return %out, %k2 : tensor<?x8x1x64xbf16>, tensor<?x2x?x64xbf16>
}

// -----

// One tensor as both caches: the two results cannot both live in it.
func.func @one_cache_for_both(%k: tensor<?x2x1x64xbf16>, %kc: tensor<?x2x?x64xbf16>, %lens: tensor<?xi32>)
    -> tensor<?x2x?x64xbf16> {
  // expected-error @+1 {{flash-tile: the key cache (argument 1) is read by another op besides flash.kv_append}}
  %k2, %v2 = flash.kv_append %k, %k into %kc, %kc, %lens
      : (tensor<?x2x1x64xbf16>, tensor<?x2x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>,
         tensor<?xi32>) -> (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>)
  return %k2 : tensor<?x2x?x64xbf16>
}

// -----

// An append that feeds no decode numbers its names and size symbols after the ops before it (a decode on other
// caches here): its caches are k_cache2 over B2 and S2, its verdict status_append2, so neither op constrains the
// other's shapes.
// CHECK: func.func @separate_caches(
// CHECK-SAME: {tile.dims = ["B", "", "S", ""], tile.name = "k_cache"}
// CHECK-SAME: {tile.dims = ["B2", "", "", ""], tile.name = "k_new2"}
// CHECK-SAME: {tile.dims = ["B2", "", "S2", ""], tile.name = "k_cache2"}
// CHECK: tile.alloc_tensor() {tile.name = "status_append2", tile.zero_fill}
func.func @separate_caches(%q: tensor<?x8x1x64xbf16>, %ka: tensor<?x2x?x64xbf16>, %va: tensor<?x2x?x64xbf16>,
                           %la: tensor<?xi32>, %kn: tensor<?x2x3x64xbf16>, %vn: tensor<?x2x3x64xbf16>,
                           %kb: tensor<?x2x?x64xbf16>, %vb: tensor<?x2x?x64xbf16>, %lb: tensor<?xi32>)
    -> (tensor<?x8x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) {
  %out, %lse = flash.decode_attention %q, %ka, %va, %la scale = 0.125 num_kv_heads = 2
      : (tensor<?x8x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?xi32>)
      -> (tensor<?x8x1x64xbf16>, tensor<?x8x1xf32>)
  %k2, %v2 = flash.kv_append %kn, %vn into %kb, %vb, %lb
      : (tensor<?x2x3x64xbf16>, tensor<?x2x3x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?xi32>)
      -> (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>)
  return %out, %k2, %v2 : tensor<?x8x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
}

// -----

// An append into the caches another append made: in place needs a cache the caller passed (a function argument).
func.func @chained(%k: tensor<?x2x1x64xbf16>, %v: tensor<?x2x1x64xbf16>, %kc: tensor<?x2x?x64xbf16>,
                   %vc: tensor<?x2x?x64xbf16>, %lens: tensor<?xi32>) -> tensor<?x2x?x64xbf16> {
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens
      : (tensor<?x2x1x64xbf16>, tensor<?x2x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>,
         tensor<?xi32>) -> (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>)
  // expected-error @+1 {{flash-tile: the key cache of flash.kv_append must be an argument of the function (the program writes it in place)}}
  %k3, %v3 = flash.kv_append %k, %v into %k2, %v2, %lens
      : (tensor<?x2x1x64xbf16>, tensor<?x2x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>,
         tensor<?xi32>) -> (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>)
  return %k3 : tensor<?x2x?x64xbf16>
}
