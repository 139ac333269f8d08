// flash-tile on flash.varlen_attention: a program of two #tile.varlen kernels, each one tile.varlen_block a block.
// The plan (one block) checks the offsets and writes the tile map; the map has max(1, (Tq + B (M - 1)) / M) entries
// for M-row query tiles (B = cu_seqlens_q's length - 1: every sequence's tiles fit), and its length is the
// forward's grid x; the offsets' verdict starts zeroed.
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-tile | FileCheck %s
// RUN: not flash-opt %s -split-input-file --flash-tile=target=sm_80 2>&1 | FileCheck %s --check-prefix=SM80
// SM80: error: flash-tile: flash.varlen_attention needs a Hopper target (sm_90a: TMA loads of the packed tensors), not sm_80
// Its backward likewise (flash-generate-backward; the function with a softcap below gets a warning, no backward):
// RUN: not flash-opt %s -split-input-file --flash-generate-backward=target=sm_80 2>&1 | FileCheck %s --check-prefix=BWD80
// BWD80: error: flash-generate-backward: flash.varlen_attention needs a Hopper target (sm_90a), not sm_80

// CHECK: tile.kernel @prefill_varlen_plan(%{{.*}}: !tile.tensor<?xi32>, %{{.*}}: !tile.tensor<?xi32>, %{{.*}}: !tile.tensor<?x32x128xbf16>, %{{.*}}: !tile.tensor<?x8x128xbf16>, %{{.*}}: !tile.tensor<?x2xi32>, %{{.*}}: !tile.tensor<4xi32>)
// CHECK-SAME: grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>]
// CHECK-SAME: spec = #tile.varlen<role = varlen_plan, head_dim = 128, value_dim = 128, group = 4, block_m = 128, window_left = -1, window_right = 0
// CHECK-SAME: warps = 16
// CHECK: tile.varlen_block(%{{.*}}) at[%{{.*}}, %{{.*}}, %{{.*}}]
// (grid x: the tile map's entries; y: the query heads)
// CHECK: tile.kernel @prefill_varlen_fwd(
// CHECK-SAME: block_m = 128 : i64, block_n = 128 : i64
// CHECK-SAME: grid = [#tile.grid<arg5[0]>, #tile.grid<arg0[1]>, #tile.grid<1>]
// CHECK-SAME: role = varlen_forward
// CHECK-SAME: warps = 8
// CHECK: func.func @prefill(%[[Q:[a-z0-9]+]]: !tile.tensor<?x32x128xbf16> {tile.dims = ["Tq", "", ""], tile.name = "q"}
// CHECK-SAME: {tile.dims = ["Tk", "", ""], tile.name = "k"}
// CHECK-SAME: %[[CUQ:[a-z0-9]+]]: !tile.tensor<?xi32> {tile.dims = ["B1"], tile.name = "cu_seqlens_q"}
// CHECK-SAME: {tile.dims = ["B1"], tile.name = "cu_seqlens_k"}
// CHECK-SAME: {tile.dims = ["", "Tq"], tile.name = "lse"}
// tiles = max((Tq + (B1 - 1) * 127) / 128, 1)
// CHECK: %[[B1:.*]] = tile.dim %[[CUQ]], 0
// CHECK: %[[B:.*]] = arith.subi %[[B1]], %c1
// CHECK: %[[PAD:.*]] = arith.muli %[[B]], %c127
// CHECK: %[[TQ:.*]] = tile.dim %[[Q]], 0
// CHECK: %[[ROWS:.*]] = arith.addi %[[TQ]], %[[PAD]]
// CHECK: %[[DIV:.*]] = arith.divsi %[[ROWS]], %c128
// CHECK: %[[TILES:.*]] = arith.maxsi %[[DIV]], %c1
// CHECK: %[[MAP:.*]] = tile.alloc_tensor(%[[TILES]]) {tile.name = "tile_map"} : <?x2xi32>
// CHECK: %[[ST:.*]] = tile.alloc_tensor() {tile.name = "status", tile.zero_fill} : <4xi32>
// CHECK: tile.launch @prefill_varlen_plan(%[[CUQ]], %{{.*}}, %[[Q]], %{{.*}}, %[[MAP]], %[[ST]])
// CHECK: tile.launch @prefill_varlen_fwd(%[[Q]], %{{.*}}, %{{.*}}, %[[CUQ]], %{{.*}}, %[[MAP]], %[[ST]], %{{.*}}, %{{.*}})
func.func @prefill(%q: tensor<?x32x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>,
                   %cu_q: tensor<?xi32>, %cu_k: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<32x?xf32>) {
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.0883883 mask = #flash.mask<causal>
      num_kv_heads = 8
      : (tensor<?x32x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x32x128xbf16>, tensor<32x?xf32>)
  return %out, %lse : tensor<?x32x128xbf16>, tensor<32x?xf32>
}

// -----

// Head dims <= 64: 192-row tiles (three consumer warpgroups), the map's divisor; a window and a softcap in the
// spec; the lse the function does not return is still a program output.
// CHECK: tile.kernel @windowed_varlen_plan(
// CHECK-SAME: block_m = 192, window_left = 37, window_right = 5, {{.*}} softcap = 3.000000e+01 : f64, element_type = f16
// CHECK: tile.kernel @windowed_varlen_fwd(
// CHECK-SAME: block_m = 192 : i64, block_n = 128 : i64
// CHECK-SAME: warps = 12
// CHECK: func.func @windowed(
// CHECK-SAME: tile.name = "lse"
// CHECK: arith.muli %{{.*}}, %c191
// CHECK: arith.divsi %{{.*}}, %c192
func.func @windowed(%q: tensor<?x4x64xf16>, %k: tensor<?x2x64xf16>, %v: tensor<?x2x64xf16>,
                    %cu_q: tensor<?xi32>, %cu_k: tensor<?xi32>) -> tensor<?x4x64xf16> {
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.125
      mask = #flash.mask<sliding_window, left = 37, right = 5> softcap = 30.0 num_kv_heads = 2
      : (tensor<?x4x64xf16>, tensor<?x2x64xf16>, tensor<?x2x64xf16>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x4x64xf16>, tensor<4x?xf32>)
  return %out : tensor<?x4x64xf16>
}
