// flash-tile on flash.decode_attention: a program of three #tile.decode kernels, each one tile.decode_block a
// block. The split count is the device's: max(1, num_sms / (B x Hkv x row groups)) (tile.sm_count), the size of the
// partial outputs' dimension 1 and so of the split kernel's grid x; the table check's verdict starts zeroed.
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-tile | FileCheck %s
// RUN: not flash-opt %s -split-input-file --flash-tile=target=sm_80 2>&1 | FileCheck %s --check-prefix=SM80
// SM80: error: flash-tile: flash.decode_attention needs a Hopper target (sm_90a: TMA loads of the cache), not sm_80

// CHECK: tile.kernel @decode_decode_check(%{{.*}}: !tile.tensor<?x64x8x128xbf16>, %{{.*}}: !tile.tensor<?xi32>, %{{.*}}: !tile.tensor<?x?xi32>, %{{.*}}: !tile.tensor<4xi32>)
// CHECK-SAME: grid = [#tile.grid<arg1[0]>, #tile.grid<1>, #tile.grid<1>]
// CHECK-SAME: spec = #tile.decode<role = decode_check, head_dim = 128, value_dim = 128, queries = 1, group = 4, page_size = 64, causal = true
// CHECK: tile.decode_block(%{{.*}}) at[%{{.*}}, %{{.*}}, %{{.*}}]
// CHECK: tile.kernel @decode_decode_split(
// (grid x: the partials' splits; y: 8 kv heads x 1 row group of 4 rows; z: the batch)
// CHECK-SAME: grid = [#tile.grid<arg8[1]>, #tile.grid<8>, #tile.grid<arg0[0]>]
// CHECK-SAME: role = decode_split
// CHECK: tile.kernel @decode_decode_combine(
// CHECK-SAME: grid = [#tile.grid<32>, #tile.grid<arg2[0]>, #tile.grid<1>]
// CHECK: func.func @decode(%[[Q:.*]]: !tile.tensor<?x32x1x128xbf16> {tile.dims = ["B", "", "", ""], tile.name = "q"}
// CHECK-SAME: tile.name = "k_cache"
// CHECK-SAME: {tile.dims = ["B", "W"], tile.name = "block_table"}
// CHECK-SAME: tile.name = "out"
// CHECK-SAME: {tile.dims = ["B", "", ""], tile.name = "lse"}
// splits = max(num_sms / max(B * 8, 1), 1)
// CHECK: %[[B:.*]] = tile.dim %[[Q]], 0
// CHECK: %[[BLOCKS:.*]] = arith.muli %[[B]], %c8
// CHECK: %[[SMS:.*]] = tile.sm_count
// CHECK: %[[ONE:.*]] = arith.maxsi %[[BLOCKS]], %c1
// CHECK: %[[PERSM:.*]] = arith.divsi %[[SMS]], %[[ONE]]
// CHECK: %[[SPLITS:.*]] = arith.maxsi %[[PERSM]], %c1
// CHECK: %[[OPART:.*]] = tile.alloc_tensor(%[[B]], %[[SPLITS]]) {tile.name = "o_part"} : <?x?x32x128xf32>
// CHECK: %[[LPART:.*]] = tile.alloc_tensor(%[[B]], %[[SPLITS]]) {tile.name = "lse_part"} : <?x?x32xf32>
// CHECK: %[[STATUS:.*]] = tile.alloc_tensor() {tile.name = "status", tile.zero_fill} : <4xi32>
// CHECK: tile.launch @decode_decode_check(%{{.*}}, %{{.*}}, %{{.*}}, %[[STATUS]])
// CHECK: tile.launch @decode_decode_split(%[[Q]], {{.*}}, %[[OPART]], %[[LPART]], %[[STATUS]])
// CHECK: tile.launch @decode_decode_combine(%[[OPART]], %[[LPART]], {{.*}}, %[[STATUS]])
func.func @decode(%q: tensor<?x32x1x128xbf16>, %k: tensor<?x64x8x128xbf16>, %v: tensor<?x64x8x128xbf16>,
                  %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x32x1x128xbf16> {
  %out, %lse = flash.decode_attention %q, %k, %v, %lens block_table %table scale = 0.0883883 causal page_size = 64
      num_kv_heads = 8
      : (tensor<?x32x1x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?xi32>, tensor<?x?xi32>)
      -> (tensor<?x32x1x128xbf16>, tensor<?x32x1xf32>)
  return %out : tensor<?x32x1x128xbf16>
}

// -----

// 16 tokens x 8 query heads a kv head: 128 rows, 8 row groups of 16 (grid y = 2 kv heads x 8).
// CHECK-LABEL: tile.kernel @spec_decode_split(
// CHECK-SAME: grid = [#tile.grid<arg7[1]>, #tile.grid<16>, #tile.grid<arg0[0]>]
// CHECK-SAME: queries = 16, group = 8, page_size = 0, causal = false
// CHECK: arith.muli %{{.*}}, %c16
func.func @spec(%q: tensor<?x16x16x64xf16>, %k: tensor<?x2x?x64xf16>, %v: tensor<?x2x?x64xf16>,
                %lens: tensor<?xi32>) -> (tensor<?x16x16x64xf16>, tensor<?x16x16xf32>) {
  %out, %lse = flash.decode_attention %q, %k, %v, %lens scale = 0.125 num_kv_heads = 2
      : (tensor<?x16x16x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?xi32>)
      -> (tensor<?x16x16x64xf16>, tensor<?x16x16xf32>)
  return %out, %lse : tensor<?x16x16x64xf16>, tensor<?x16x16xf32>
}
