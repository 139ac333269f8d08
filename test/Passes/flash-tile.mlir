// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-tile | FileCheck %s
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-tile=ffn-plan=two-kernel | FileCheck %s --check-prefix=TWO
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-tile=target=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: not flash-opt %s -split-input-file --flash-tile=target=sm_70 2>&1 | FileCheck %s --check-prefix=BADTARGET
// RUN: not flash-opt %s -split-input-file --flash-tile=ffn-plan=always 2>&1 | FileCheck %s --check-prefix=BADPLAN
// Sizes no kernel can run are refused at the op (Inputs/kernel-limits.mlir):
// RUN: flash-opt %S/Inputs/kernel-limits.mlir -split-input-file -verify-diagnostics --flash-tile
// RUN: not flash-opt %S/Inputs/kernel-limits.mlir -split-input-file --flash-tile 2>&1 | FileCheck %s --check-prefix=LIMITS
// LIMITS: kernel-limits.mlir{{.*}}:14: error: flash-tile: head dim D = 9223372036854775807 (query and key) is not supported by the kernels
// RUN: flash-opt %S/Inputs/kernel-limits-library.mlir -split-input-file -verify-diagnostics --flash-tile
// A fused FFN whose d_out no tile holds (a [64 x 8192] f32 accumulator) is refused before any tile type is made:
// RUN: not flash-opt %S/Inputs/ffn-wide-output.mlir --flash-tile=ffn-plan=fused 2>&1 | FileCheck %s --check-prefix=WIDE-FUSED
// WIDE-FUSED: ffn-wide-output.mlir:2:8: error: cannot build kernel @wide_ffn_fused: the fused FFN keeps its output rows, a [64 x 8192] f32 accumulator (d_out = 8192) of 2097152 bytes, more than a tile holds (262144): a smaller d_out or block size fits, or flash-tile's ffn-plan=two-kernel never needs it
// BADTARGET: flash-tile: unknown target 'sm_70' (known: sm_80, sm_90a)
// BADPLAN: flash-tile: ffn-plan must be auto, fused or two-kernel, got 'always'
// The numerics of these kernels are checked by test/Numerics (CPU executor).

// Causal attention, GQA 8:2, bf16, D = 64. One block per (query block, head,
// batch); the key loop stops at the diagonal; the mask only runs on blocks that
// cross the diagonal or the key tail; output and lse are written once.
// On sm_90a: 192 query rows (three consumer warpgroups of 64) x 128 keys.
// CHECK-LABEL: tile.kernel @causal_attention_fwd
// CHECK-SAME: block_m = 192 : i64, block_n = 128 : i64
// CHECK-SAME: grid = [#tile.grid<ceildiv(arg0[2], 192)>, #tile.grid<arg0[1]>, #tile.grid<arg0[0]>]
// CHECK-SAME: spec = #tile.attention<role = attention_forward, head_dim = 64, value_dim = 64, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16>
// CHECK-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 12
// CHECK: %[[RB:.*]] = tile.program_id x
// CHECK: %[[H:.*]] = tile.program_id y
// CHECK: %[[B:.*]] = tile.program_id z
// CHECK: %[[SQ:.*]] = tile.dim %arg0, 2
// CHECK: %[[SK:.*]] = tile.dim %arg1, 2
// offset = Sk - Sq: bottom-right aligned causal mask
// CHECK: %[[OFF:.*]] = arith.subi %[[SK]], %[[SQ]]
// GQA: kv head = h / (Hq / Hkv)
// CHECK: %[[GROUP:.*]] = arith.divui
// CHECK: %[[HK:.*]] = arith.divui %[[H]], %[[GROUP]]
// CHECK: %[[ROW0:.*]] = arith.muli %[[RB]], %c192
// CHECK: %[[QT:.*]] = tile.load %arg0[%[[B]], %[[H]], %[[ROW0]], %c0] limit[%[[SQ]], %c64] : <?x8x?x64xbf16> -> <192x64xbf16, shared>
// keys [0, min(Sk, min(row0 + Br, Sq) + off)): blocks past the diagonal are never visited
// CHECK: %[[REND:.*]] = arith.minsi {{.*}}, %[[SQ]]
// CHECK: %[[KEND0:.*]] = arith.addi %[[REND]], %[[OFF]]
// CHECK: %[[KEND1:.*]] = arith.minsi %[[SK]], %[[KEND0]]
// CHECK: %[[KEND:.*]] = arith.maxsi %[[KEND1]], %c0
// CHECK: %[[NB:.*]] = arith.ceildivsi %[[KEND]], %c128
// CHECK: tile.fill 0xFFF0000000000000 : <192xf32, register>
// CHECK: %[[RES:.*]]:3 = scf.for %[[KB:.*]] = %c0 to %[[NB]] step %c1 iter_args(%[[ACC:.*]] = %{{.*}}, %[[M:.*]] = %{{.*}}, %[[L:.*]] = %{{.*}})
// CHECK: %[[COL0:.*]] = arith.muli %[[KB]], %c128
// CHECK: %[[KT:.*]] = tile.load %arg1[%[[B]], %[[HK]], %[[COL0]], %c0] limit[%[[SK]], %c64] {buffers = 2 : i64}
// CHECK: %[[VT:.*]] = tile.load %arg2[%[[B]], %[[HK]], %[[COL0]], %c0] limit[%[[SK]], %c64] {buffers = 2 : i64}
// CHECK: %[[S:.*]] = tile.matmul %[[QT]], %[[KT]], %{{.*}} transpose_b
// mask predicate: key tail or a key right of the first row's diagonal
// CHECK: %[[NEEDS:.*]] = arith.ori
// CHECK: %[[SM:.*]] = scf.if %[[NEEDS]]
// CHECK-NEXT: tile.mask %[[S]] rows %[[ROW0]] cols %[[COL0]] limit %[[SK]] offset %[[OFF]] window[-1, 0]
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[S]]
// online softmax: m' = max(m, rowmax S); P = exp2((S - m')·scale·log2e); corr; l' = l·corr + rowsum P
// CHECK: %[[MN:.*]] = tile.row_max %[[SM]], %[[M]]
// CHECK: %[[P:.*]] = tile.exp2 %[[SM]], %[[MN]] scale 1.250000e-01
// CHECK: %[[CORR:.*]] = tile.softmax_correction %[[M]], %[[MN]] scale 1.250000e-01
// CHECK: %[[LN:.*]] = tile.online_sum %[[L]], %[[CORR]], %[[P]]
// CHECK: %[[ACCR:.*]] = tile.rescale %[[ACC]], %[[CORR]]
// CHECK: %[[PB:.*]] = tile.convert %[[P]] : <192x128xf32, register> -> <192x128xbf16, register>
// CHECK: %[[ACCN:.*]] = tile.matmul %[[PB]], %[[VT]], %[[ACCR]]
// CHECK: scf.yield %[[ACCN]], %[[MN]], %[[LN]]
// CHECK: %[[O:.*]] = tile.normalize %[[RES]]#0, %[[RES]]#2
// CHECK: %[[OB:.*]] = tile.convert %[[O]]
// CHECK: tile.store %[[OB]], %arg3[%[[B]], %[[H]], %[[ROW0]], %c0] limit[%[[SQ]], %c64]
// CHECK: %[[LSE:.*]] = tile.lse %[[RES]]#1, %[[RES]]#2 scale 1.250000e-01
// CHECK: tile.store_rows %[[LSE]], %arg4[%[[B]], %[[H]], %[[ROW0]]] limit %[[SQ]]
// The function becomes a tile program: inputs, the result, then the lse
// (saved for the backward although the graph does not return it).
// Arguments carry names and the run-time size symbols of their dynamic dims
// (the bundle's launch geometry and argument checks use them).
// CHECK-LABEL: func.func @causal(
// CHECK-SAME: %arg0: !tile.tensor<?x8x?x64xbf16> {tile.dims = ["B", "", "Sq", ""], tile.name = "q"}
// CHECK-SAME: %arg1: !tile.tensor<?x2x?x64xbf16> {tile.dims = ["B", "", "Sk", ""], tile.name = "k"}
// CHECK-SAME: %arg3: !tile.tensor<?x8x?x64xbf16> {tile.dims = ["B", "", "Sq", ""], tile.name = "out"}
// CHECK-SAME: %arg4: !tile.tensor<?x8x?xf32> {tile.dims = ["B", "", "Sq"], tile.name = "lse"}) attributes {tile.program}
// CHECK-NEXT: tile.launch @causal_attention_fwd(%arg0, %arg1, %arg2, %arg3, %arg4)
// CHECK-NEXT: return
// On sm_90a the 16-bit forward uses wgmma (three warpgroups, 192 x 128); on
// sm_80 mma.sync with 128 x 64 blocks and 32 query rows per warp.
// SM80-LABEL: tile.kernel @causal_attention_fwd
// SM80-SAME: block_m = 128 : i64, block_n = 64 : i64
// SM80-SAME: strategy = #tile.strategy<mma_sync_sm80>, warps = 4
func.func @causal(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>)
  return %out : tensor<?x8x?x64xbf16>
}

// -----

// No mask, f32, D = 128: all key blocks; the predicate is the key tail only;
// no convert before P·V (f32 operands); the lse is returned by the graph.
// f32 stays on mma.sync: 64 x 64 blocks, 4 warps (16 query rows per warp).
// CHECK-LABEL: tile.kernel @full_attention_fwd
// CHECK-SAME: block_m = 64 : i64, block_n = 64 : i64
// CHECK-SAME: strategy = #tile.strategy<mma_sync_sm80>, warps = 4
// CHECK: %[[SK:.*]] = tile.dim %arg1, 2
// CHECK: %[[NB:.*]] = arith.ceildivsi %[[SK]], %c64
// CHECK: scf.for %{{.*}} = %c0 to %[[NB]]
// CHECK: %[[END:.*]] = arith.addi %{{.*}}, %c64
// CHECK-NEXT: %[[TAIL:.*]] = arith.cmpi sgt, %[[END]], %[[SK]]
// CHECK-NEXT: scf.if %[[TAIL]]
// CHECK-NEXT: tile.mask {{.*}} window[-1, -1]
// CHECK-NOT: tile.convert
// CHECK: tile.matmul %{{.*}}, %{{.*}}, %{{.*}} : <64x64xf32, register>, <64x128xf32, shared> -> <64x128xf32, register>
// CHECK-LABEL: func.func @full(
// CHECK-SAME: {tile.name = "out"}
// CHECK-SAME: {tile.name = "lse"}) attributes {tile.program}
// SM80-LABEL: tile.kernel @full_attention_fwd
// SM80-SAME: block_m = 64 : i64, block_n = 64 : i64
func.func @full(%q: tensor<2x4x100x128xf32>, %k: tensor<2x4x77x128xf32>, %v: tensor<2x4x77x128xf32>) -> (tensor<2x4x100x128xf32>, tensor<2x4x100xf32>) {
  %out, %lse = flash.attention %q, %k, %v scale = 0.08838834764831845 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<2x4x100x128xf32>, tensor<2x4x77x128xf32>, tensor<2x4x77x128xf32>) -> (tensor<2x4x100x128xf32>, tensor<2x4x100xf32>)
  return %out, %lse : tensor<2x4x100x128xf32>, tensor<2x4x100xf32>
}

// -----

// Sliding window (left 256): the key loop starts at block
// floor(max(0, row0 + off - 256) / Bc); blocks left of the window are skipped.
// CHECK-LABEL: tile.kernel @window_attention_fwd
// CHECK: %[[LO0:.*]] = arith.subi %{{.*}}, %c256
// CHECK-NEXT: %[[LO1:.*]] = arith.maxsi %c0, %[[LO0]]
// CHECK-NEXT: %[[LO:.*]] = arith.floordivsi %[[LO1]], %c64
// CHECK: scf.for %{{.*}} = %[[LO]] to
// CHECK: tile.mask {{.*}} window[256, 0]
// D = 256 on sm_90a is the warp-specialised forward's plan: 128 query rows,
// 64 keys a block (128 would not fit O, S and P in the consumer registers).
// CHECK-SAME: <128x64xf32, register>
func.func @window(%q: tensor<?x8x?x256xf16>, %k: tensor<?x8x?x256xf16>, %v: tensor<?x8x?x256xf16>) -> tensor<?x8x?x256xf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.0625 mask = #flash.mask<sliding_window, left = 256, right = 0> num_kv_heads = 8
      : (tensor<?x8x?x256xf16>, tensor<?x8x?x256xf16>, tensor<?x8x?x256xf16>) -> (tensor<?x8x?x256xf16>, tensor<?x8x?xf32>)
  return %out : tensor<?x8x?x256xf16>
}

// -----

// Softcap: tanh capping takes the scale; the softmax ops then use scale 1.
// CHECK-LABEL: tile.kernel @capped_attention_fwd
// CHECK: tile.softcap %{{.*}} scale 1.250000e-01 cap 3.000000e+01
// CHECK: tile.exp2 %{{.*}}, %{{.*}} scale 1.000000e+00
// CHECK: tile.lse %{{.*}}, %{{.*}} scale 1.000000e+00
func.func @capped(%q: tensor<1x2x64x64xf32>, %k: tensor<1x2x64x64xf32>, %v: tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> softcap = 30.0 num_kv_heads = 2
      : (tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) -> (tensor<1x2x64x64xf32>, tensor<1x2x64xf32>)
  return %out : tensor<1x2x64x64xf32>
}

// -----

// A narrow FFN (d_out = 256) fits back to back: one kernel per row block, the
// hidden tile [64 x 64] stays in registers and feeds W2 directly.
// CHECK-LABEL: tile.kernel @narrow_ffn_fused
// CHECK-SAME: grid = [#tile.grid<ceildiv(arg4[1], 64)>, #tile.grid<1>, #tile.grid<arg4[0]>]
// CHECK-SAME: spec = #tile.gemm<role = ffn_fused, activation = silu
// CHECK: scf.for
// CHECK: scf.for
// CHECK: tile.matmul
// CHECK: %[[ACT:.*]] = tile.activation silu
// CHECK: %[[W2:.*]] = tile.load %arg2
// CHECK: %[[HB:.*]] = tile.convert %[[ACT]] : <64x64xf32, register> -> <64x64xbf16, register>
// CHECK: tile.matmul %[[HB]], %[[W2]], %{{.*}} : <64x64xbf16, register>, <64x256xbf16, shared> -> <64x256xf32, register>
// CHECK: tile.add_bias %{{.*}}, %arg3[%c0] limit %c256
// CHECK-LABEL: func.func @narrow(
// CHECK-SAME: {tile.dims = ["Bf", "M", ""], tile.name = "x"}
// CHECK-SAME: {tile.dims = ["Bf", "M", ""], tile.name = "y"}
// CHECK-NEXT: tile.launch @narrow_ffn_fused
// TWO-LABEL: func.func @narrow(
// TWO: tile.alloc_tensor
// TWO: tile.launch @narrow_ffn_up
// TWO: tile.launch @narrow_ffn_down
func.func @narrow(%x: tensor<?x?x256xbf16>, %w1: tensor<256x1024xbf16>, %w2: tensor<1024x256xbf16>, %b2: tensor<256xbf16>) -> tensor<?x?x256xbf16> {
  %y = flash.ffn silu %x, %w1, %w2 bias %b2 : (tensor<?x?x256xbf16>, tensor<256x1024xbf16>, tensor<1024x256xbf16>, tensor<256xbf16>) -> tensor<?x?x256xbf16>
  return %y : tensor<?x?x256xbf16>
}

// -----

// A wide FFN (d_out = 1024) does not fit registers back to back: two GEMMs
// with fused epilogues (bias + gelu in the first), h [M, 4096] in global memory.
// CHECK-LABEL: tile.kernel @wide_ffn_up
// CHECK-SAME: spec = #tile.gemm<role = gemm, activation = gelu_tanh
// CHECK: scf.for
// CHECK: tile.matmul
// CHECK: tile.add_bias
// CHECK-NEXT: tile.activation gelu_tanh
// CHECK-LABEL: tile.kernel @wide_ffn_down
// CHECK-SAME: activation = identity
// CHECK-NOT: tile.add_bias
// CHECK-LABEL: func.func @wide(
// CHECK: %[[M:.*]] = tile.dim %arg0, 0
// CHECK-NEXT: %[[H:.*]] = tile.alloc_tensor(%[[M]]) {tile.name = "hidden"} : <?x4096xbf16>
// CHECK-NEXT: tile.launch @wide_ffn_up(%arg0, %arg1, %arg2, %[[H]])
// CHECK-NEXT: tile.launch @wide_ffn_down(%[[H]], %arg3, %arg4)
func.func @wide(%x: tensor<?x1024xbf16>, %w1: tensor<1024x4096xbf16>, %b1: tensor<4096xbf16>, %w2: tensor<4096x1024xbf16>) -> tensor<?x1024xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 : (tensor<?x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096xbf16>, tensor<4096x1024xbf16>) -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}

// -----

// Must not fire: a function without fused ops stays a graph function.
// CHECK-LABEL: func.func @unfused_graph(
// CHECK-NOT: tile.program
// CHECK: flash.softmax
func.func @unfused_graph(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = flash.softmax %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Fusion did not happen: unfused graph ops next to a fused op are an error.
func.func @half_fused(%q: tensor<1x2x16x32xf32>, %k: tensor<1x2x16x32xf32>, %v: tensor<1x2x16x32xf32>) -> tensor<1x2x16x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>) -> (tensor<1x2x16x32xf32>, tensor<1x2x16xf32>)
  // expected-error @+1 {{flash-tile: 'flash.scale' is outside every fused op, and only fused ops are tiled: the fusion passes (flash-fuse-attention, flash-fuse-ffn, flash-fuse-moe) did not take it into one (their warnings say what stopped them)}}
  %s = flash.scale %out by 2.0 : tensor<1x2x16x32xf32>
  return %s : tensor<1x2x16x32xf32>
}

// -----

// Gated FFN (SwiGLU): the fused kernel projects x on W_gate and W_up with one
// x tile per step and multiplies act(gate) by up before W2.
// CHECK-LABEL: tile.kernel @gated_ffn_fused
// CHECK: scf.for
// CHECK: %[[X:.*]] = tile.load %arg0
// CHECK: %[[WG:.*]] = tile.load %arg1
// CHECK: tile.matmul %[[X]], %[[WG]]
// CHECK: %[[WU:.*]] = tile.load %arg2
// CHECK: tile.matmul %[[X]], %[[WU]]
// CHECK: %[[ACT:.*]] = tile.activation silu %{{.*}}#0
// CHECK: tile.mul %[[ACT]], %{{.*}}#1
// TWO-LABEL: tile.kernel @gated_ffn_up
// TWO-SAME: role = gated_gemm
// TWO: tile.mul
// TWO-LABEL: func.func @gated(
// TWO: tile.launch @gated_ffn_up(%arg0, %arg1, %arg2, %{{.*}})
// TWO: tile.launch @gated_ffn_down
func.func @gated(%x: tensor<?x64xf32>, %wg: tensor<64x128xf32>, %wu: tensor<64x128xf32>, %w2: tensor<128x64xf32>) -> tensor<?x64xf32> {
  %y = flash.ffn silu %x, %wg up %wu, %w2 : (tensor<?x64xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @passthrough(%q: tensor<1x2x16x32xf32>, %k: tensor<1x2x16x32xf32>, %v: tensor<1x2x16x32xf32>) -> (tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>) {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>) -> (tensor<1x2x16x32xf32>, tensor<1x2x16xf32>)
  // expected-error @+1 {{flash-tile: result 1 must be produced by a fused op of this function}}
  return %out, %q : tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>
}

// -----

// A 16-bit d_out that is not a multiple of 32 is fused with its tiles padded
// to whole 64-byte swizzle rows (was the two GEMMs, and before that an emitter
// error on a register tile of 40 columns): the output accumulator and the W2
// slab are 64 columns wide, every load and store limited to d_out = 40.
// CHECK-LABEL: tile.kernel @narrow_out_ffn_fused
// CHECK: tile.fill 0.000000e+00 : <64x64xf32, register>
// CHECK: tile.load %arg2[{{.*}}] limit[%{{.*}}, %c40] {{.*}} : <256x40xbf16> -> <64x64xbf16, shared>
// CHECK: tile.matmul {{.*}} -> <64x64xf32, register>
// CHECK: tile.store {{.*}} limit[%{{.*}}, %c40] : <64x64xbf16, register>, <?x40xbf16>
// CHECK-LABEL: func.func @narrow_out(
// CHECK: tile.launch @narrow_out_ffn_fused
func.func @narrow_out(%x: tensor<?x64xbf16>, %w1: tensor<64x256xbf16>, %w2: tensor<256x40xbf16>) -> tensor<?x40xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1, %w2 : (tensor<?x64xbf16>, tensor<64x256xbf16>, tensor<256x40xbf16>) -> tensor<?x40xbf16>
  return %y : tensor<?x40xbf16>
}

// -----

// FFN widths that are not multiples of 8 (#22): d = 100, h = 1001, d_out = 77 tile like any other
// (was refused: 16-bit sizes had to be multiples of 8). The tiles keep their widths (K steps of
// block_k, hidden blocks of block_n, d_out padded to whole swizzle rows); every load, bias and store
// is limited to the true width, which the device library honours element by element inside a
// 16-byte chunk. Fused by default; the two GEMMs with ffn-plan=two-kernel.
// CHECK-LABEL: tile.kernel @any_width_ffn_fused
// CHECK: tile.load %arg0[{{.*}}] limit[%{{.*}}, %{{.*}}] {{.*}} : <?x100xbf16> -> <64x32xbf16, shared>
// CHECK: tile.load %arg1[{{.*}}] limit[%{{.*}}, %{{.*}}] {{.*}} : <100x1001xbf16> -> <32x64xbf16, shared>
// CHECK: tile.add_bias {{.*}} : <64x64xf32, register>, <1001xbf16>
// CHECK: tile.load %arg3[{{.*}}] limit[%{{.*}}, %c77] {{.*}} : <1001x77xbf16> -> <64x96xbf16, shared>
// CHECK: tile.store {{.*}} limit[%{{.*}}, %c77] : <64x96xbf16, register>, <?x77xbf16>
// TWO-LABEL: tile.kernel @any_width_ffn_up
// TWO: tile.store {{.*}} : <128x256xbf16, register>, <?x1001xbf16>
// TWO-LABEL: tile.kernel @any_width_ffn_down
// TWO: tile.load %arg0{{.*}} : <?x1001xbf16> -> <128x64xbf16, shared>
// TWO: tile.store {{.*}} : <128x256xbf16, register>, <?x77xbf16>
func.func @any_width(%x: tensor<?x100xbf16>, %w1: tensor<100x1001xbf16>, %b1: tensor<1001xbf16>, %w2: tensor<1001x77xbf16>) -> tensor<?x77xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 : (tensor<?x100xbf16>, tensor<100x1001xbf16>, tensor<1001xbf16>, tensor<1001x77xbf16>) -> tensor<?x77xbf16>
  return %y : tensor<?x77xbf16>
}

// -----

// Head dims that are not multiples of 32 (DiT's 72, Stable Diffusion's 40; here D = 72 for Q and
// K, Dv = 40 for V, GQA 8:2): the tiles are padded to whole 64-byte swizzle rows (96 and 64
// columns) while the tensors keep their widths and every load and store is limited to them, so
// the padding loads as zeros (adding nothing to Q·Kᵀ or P·V) and is never stored (sm_80:
// mma.sync). On sm_90a the warp-specialised forward takes it, its tiles whole 64-column panels
// (128 and 64 columns).
// SM80-LABEL: tile.kernel @padded_attention_fwd
// SM80-SAME: spec = #tile.attention<role = attention_forward, head_dim = 72, value_dim = 40,
// SM80-SAME: strategy = #tile.strategy<mma_sync_sm80>
// SM80: tile.load %arg0[{{.*}}] limit[%{{.*}}, %c72] : <?x8x?x72xbf16> -> <64x96xbf16, shared>
// SM80: tile.fill 0.000000e+00 : <64x64xf32, register>
// SM80: tile.load %arg1[{{.*}}] limit[%{{.*}}, %c72] {buffers = 2 : i64} : <?x2x?x72xbf16> -> <64x96xbf16, shared>
// SM80: tile.load %arg2[{{.*}}] limit[%{{.*}}, %c40] {buffers = 2 : i64} : <?x2x?x40xbf16> -> <64x64xbf16, shared>
// SM80: tile.matmul {{.*}} transpose_b : <64x96xbf16, shared>, <64x96xbf16, shared> -> <64x64xf32, register>
// SM80: tile.matmul {{.*}} : <64x64xbf16, register>, <64x64xbf16, shared> -> <64x64xf32, register>
// SM80: tile.store {{.*}} limit[%{{.*}}, %c40] : <64x64xbf16, register>, <?x8x?x40xbf16>
// CHECK-LABEL: tile.kernel @padded_attention_fwd
// CHECK-SAME: strategy = #tile.strategy<wgmma_ws_sm90>
// CHECK: tile.load %arg0[{{.*}}] limit[%{{.*}}, %c72] : <?x8x?x72xbf16> -> <128x128xbf16, shared>
// CHECK: tile.load %arg2[{{.*}}] limit[%{{.*}}, %c40] {buffers = 2 : i64} : <?x2x?x40xbf16> -> <128x64xbf16, shared>
func.func @padded(%q: tensor<?x8x?x72xbf16>, %k: tensor<?x2x?x72xbf16>, %v: tensor<?x2x?x40xbf16>) -> (tensor<?x8x?x40xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<?x8x?x72xbf16>, tensor<?x2x?x72xbf16>, tensor<?x2x?x40xbf16>) -> (tensor<?x8x?x40xbf16>, tensor<?x8x?xf32>)
  return %o, %lse : tensor<?x8x?x40xbf16>, tensor<?x8x?xf32>
}

// -----

// D = 112 pads to 128 columns: on sm_90a the warp-specialised forward (128-column panels), on
// sm_80 mma.sync (four 64-byte rows).
// CHECK-LABEL: tile.kernel @padded_112_attention_fwd
// CHECK-SAME: head_dim = 112, value_dim = 112
// CHECK-SAME: strategy = #tile.strategy<wgmma_ws_sm90>
// CHECK: tile.load %arg0[{{.*}}] limit[%{{.*}}, %c112] : <?x2x?x112xf16> -> <128x128xf16, shared>
// SM80-LABEL: tile.kernel @padded_112_attention_fwd
// SM80-SAME: strategy = #tile.strategy<mma_sync_sm80>
// SM80: tile.load %arg0[{{.*}}] limit[%{{.*}}, %c112] : <?x2x?x112xf16> -> <64x128xf16, shared>
func.func @padded_112(%q: tensor<?x2x?x112xf16>, %k: tensor<?x2x?x112xf16>, %v: tensor<?x2x?x112xf16>) -> (tensor<?x2x?x112xf16>, tensor<?x2x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<?x2x?x112xf16>, tensor<?x2x?x112xf16>, tensor<?x2x?x112xf16>) -> (tensor<?x2x?x112xf16>, tensor<?x2x?xf32>)
  return %o, %lse : tensor<?x2x?x112xf16>, tensor<?x2x?xf32>
}

// -----

// A run-time key offset: the i32 argument becomes the program's last
// parameter (scalars follow the tensors in the ABI, wherever the spec put it),
// the forward kernel takes it last, and p = i + key_offset replaces Sk - Sq,
// clamped to [-Sq - 1, Sk + 100 + 1] (past either end every row sees all keys
// or none: same result, no int overflow).
// CHECK-LABEL: tile.kernel @shifted_attention_fwd
// CHECK-SAME: %[[OFF:arg5]]: i32
// CHECK-SAME: key_offset = true
// CHECK: %[[SQ:.*]] = tile.dim %arg0, 2
// CHECK: %[[SK:.*]] = tile.dim %arg1, 2
// CHECK: %[[GIVEN:.*]] = arith.index_cast %[[OFF]] : i32 to index
// CHECK: %[[LO:.*]] = arith.subi %c-1, %[[SQ]]
// CHECK: %[[HI:.*]] = arith.addi %[[SK]], %c101
// CHECK: %[[UPPER:.*]] = arith.minsi %[[GIVEN]], %[[HI]]
// CHECK: %[[CLAMPED:.*]] = arith.maxsi %[[LO]], %[[UPPER]]
// CHECK: tile.mask {{.*}} offset %[[CLAMPED]] window[100, 0]
// CHECK-LABEL: func.func @shifted
// CHECK-SAME: %arg5: i32 {tile.name = "key_offset"}
// CHECK: tile.launch @shifted_attention_fwd(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5)
func.func @shifted(%q: tensor<?x2x?x64xbf16>, %off: i32, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v key_offset = %off scale = 0.125 mask = #flash.mask<sliding_window, left = 100, right = 0> num_kv_heads = 2
      : (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, i32) -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>)
  return %o, %lse : tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
}

// -----

// A mask modifier moves to the module as a tile.mask_mod named by its content; the
// kernel's recipe and its tile.mask name it. The tile body masks every block with it
// (no needs_mask test: which blocks it hides is the device library's interval
// analysis), and its loop bounds are the window's (here none: all key blocks).
// CHECK-LABEL: tile.kernel @chunked_attention_attention_fwd
// CHECK-SAME: mask_mod = @[[MOD:mask_mod_[0-9a-f]+]]>
// CHECK: scf.for
// CHECK-NOT: scf.if
// The modifier sees the tile's batch (program_id z) and query head (program_id y):
// CHECK: tile.mask %{{.*}} rows %{{.*}} cols %{{.*}} limit %{{.*}} offset %{{.*}} window[-1, -1] mod @[[MOD]](%{{.*}}, %{{.*}} : index, index) :
// A (q, k) region gets batch and head arguments it does not read:
// CHECK: tile.mask_mod @[[MOD]] {
// CHECK-NEXT: ^bb0(%{{.+}}: index, %{{.+}}: index, %[[Q:.+]]: index, %[[K:.+]]: index):
// CHECK: arith.divsi %[[Q]]
// CHECK: tile.yield %{{.*}} : i1
// SM80-LABEL: tile.kernel @chunked_attention_attention_fwd
// SM80: tile.mask {{.*}} mod @mask_mod_
func.func @chunked_attention(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>) -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4 mask_mod {
  ^bb0(%i: index, %j: index):
    %c = arith.constant 256 : index
    %qi = arith.divsi %i, %c : index   // the query's chunk
    %kj = arith.divsi %j, %c : index   // the key's chunk
    %same = arith.cmpi eq, %qi, %kj : index
    flash.yield %same : i1
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// -----

// A modifier that reads tensors (a document mask: doc[q] == doc[k]). The tensor is a
// program argument (mask_t0, over a size symbol of its own: a read outside it gives 0),
// passed to the kernels after their own tensors. Before the forward, a kernel of role
// attention_mask_blocks classifies every 64 x 64 block (tile.classify_blocks) into a
// workspace table i32 [1, 1, ceil(Sq / 64), 2 * ceil(Sk / 64) + 2] (one slice: the region reads
// neither batch nor head), which the forward takes after the ids (`mask_blocks = true`). A
// document compare on the warp-specialised forward (16-bit) also takes the segment plan
// (test/Passes/flash-tile-segments.mlir), written first and passed last; the block classes
// skip their work where it serves.
// CHECK-LABEL: tile.kernel @documents_attention_fwd_segments
// CHECK-SAME: role = attention_segment_plan
// CHECK-LABEL: tile.kernel @documents_attention_fwd_mask_blocks
// CHECK-SAME: (%[[Q:.+]]: !tile.tensor<?x4x?x64xbf16>, %[[K:.+]]: !tile.tensor<?x4x?x64xbf16>, %[[IDS:.+]]: !tile.tensor<?xi32>, %[[TABLE:.+]]: !tile.tensor<1x1x?x?xi32>, %{{.+}}: !tile.tensor<?x4xi32>)
// CHECK-SAME: grid = [#tile.grid<ceildiv(arg0[2], 64)>, #tile.grid<1>, #tile.grid<1>]
// CHECK-SAME: role = attention_mask_blocks
// CHECK: %[[ROW:.+]] = tile.program_id x
// CHECK: tile.classify_blocks @[[MOD:mask_mod_[0-9a-f]+]](%{{.*}}, %{{.*}}, %[[IDS]] : index, index, !tile.tensor<?xi32>) queries %{{.*}} keys %{{.*}} row %[[ROW]] into %[[TABLE]][%{{.*}}, %{{.*}}] : <1x1x?x?xi32>
// CHECK-LABEL: tile.kernel @documents_attention_fwd(
// CHECK-SAME: %[[FIDS:[a-z0-9]+]]: !tile.tensor<?xi32>, %{{.+}}: !tile.tensor<1x1x?x?xi32>, %{{.+}}: !tile.tensor<?x4xi32>)
// CHECK-SAME: mask_mod = @[[MOD]], mask_blocks = true, segments = true>
// CHECK: tile.mask {{.*}} mod @[[MOD]](%{{.*}}, %{{.*}}, %[[FIDS]] : index, index, !tile.tensor<?xi32>)
// CHECK-LABEL: func.func @documents(
// CHECK-SAME: %[[PIDS:[a-z0-9]+]]: !tile.tensor<?xi32> {tile.dims = ["mask_t0_d0"], tile.name = "mask_t0"}
// CHECK: %[[PLAN:.+]] = tile.alloc_tensor(%{{.+}}) {tile.name = "segment_plan"} : <?x4xi32>
// CHECK: tile.launch @documents_attention_fwd_segments(%arg0, %arg1, %[[PIDS]], %[[PLAN]])
// CHECK: %[[SQ:.+]] = tile.dim %arg0, 2
// CHECK: %[[ROWS:.+]] = arith.ceildivsi %[[SQ]], %c64
// CHECK: %[[SK:.+]] = tile.dim %arg1, 2
// CHECK: %[[COLS0:.+]] = arith.ceildivsi %[[SK]], %c64
// CHECK: %[[TWICE:.+]] = arith.muli %c2, %[[COLS0]]
// CHECK: %[[COLS:.+]] = arith.addi %[[TWICE]], %c2
// CHECK: %[[T:.+]] = tile.alloc_tensor(%[[ROWS]], %[[COLS]]) {tile.name = "mask_blocks"} : <1x1x?x?xi32>
// CHECK: tile.launch @documents_attention_fwd_mask_blocks(%arg0, %arg1, %[[PIDS]], %[[T]], %[[PLAN]])
// CHECK: tile.launch @documents_attention_fwd(%arg0, %arg1, %arg2, %{{.*}}, %{{.*}}, %[[PIDS]], %[[T]], %[[PLAN]])
// CHECK: tile.mask_mod @[[MOD]] {
// CHECK-NEXT: ^bb0(%{{.+}}: index, %{{.+}}: index, %[[MQ:.+]]: index, %[[MK:.+]]: index, %[[MT:.+]]: tensor<?xi32>):
// CHECK: tensor.extract %[[MT]][%[[MQ]]]
func.func @documents(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>, %doc: tensor<?xi32>) -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %ids: tensor<?xi32>):
    %di = tensor.extract %ids[%i] : tensor<?xi32>   // the query's document
    %dj = tensor.extract %ids[%j] : tensor<?xi32>   // the key's document
    %a = arith.index_cast %di : i32 to index
    %b = arith.index_cast %dj : i32 to index
    %same = arith.cmpi eq, %a, %b : index
    flash.yield %same : i1
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?xi32>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// -----

// A modifier of four indices that reads the head and a per-batch table: the block-class
// table has a slice per batch and per head ([?, 4, ...]: grid y and z over them).
// CHECK-LABEL: tile.kernel @per_head_attention_fwd_mask_blocks
// CHECK-SAME: !tile.tensor<?x4x?x?xi32>
// CHECK-SAME: grid = [#tile.grid<ceildiv(arg0[2], 64)>, #tile.grid<arg0[1]>, #tile.grid<arg0[0]>]
func.func @per_head(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>, %lens: tensor<?x?xi32>) -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4 mask_mod(%lens) {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %t: tensor<?x?xi32>):
    %n = tensor.extract %t[%b, %h] : tensor<?x?xi32>   // keys this batch and head see
    %len = arith.index_cast %n : i32 to index
    %in = arith.cmpi slt, %j, %len : index
    flash.yield %in : i1
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x?xi32>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// -----

// A score modifier (ALiBi: s + slopes[h] · (k - q)) moves to the module as a tile.score_mod
// (a two-index region gets unused b and h after the score; s + A(q) + B(k) by its form:
// score_separable). Its f32 tensor is a program
// argument (score_t0), passed to the forward after its own tensors; the forward applies
// it to the raw block scores with the scale (tile.score: the softmax then at scale 1,
// query rows past Sq -inf) before the window's mask.
// CHECK-LABEL: tile.kernel @alibi_attention_fwd(
// CHECK-SAME: %[[SLOPES:[a-z0-9]+]]: !tile.tensor<8xf32>)
// CHECK-SAME: score_mod = @[[SMOD:score_mod_[0-9a-f]+]], score_additive = true, score_separable = true>
// CHECK: %[[SQ:.+]] = tile.dim %arg0, 2
// CHECK: %[[S:.+]] = tile.matmul
// CHECK: %[[MOD:.+]] = tile.score %[[S]] rows %{{.*}} cols %{{.*}} limit %[[SQ]] scale 1.250000e-01 mod @[[SMOD]](%{{.*}}, %{{.*}}, %[[SLOPES]] : index, index, !tile.tensor<8xf32>)
// CHECK: tile.mask %[[MOD]]
// CHECK: tile.exp2 %{{.*}} scale 1.000000e+00
// CHECK-LABEL: func.func @alibi(
// CHECK-SAME: %[[PSLOPES:[a-z0-9]+]]: !tile.tensor<8xf32> {tile.name = "score_t0"}
// CHECK: tile.launch @alibi_attention_fwd(%arg0, %arg1, %arg2, %{{.*}}, %{{.*}}, %[[PSLOPES]])
// CHECK: tile.score_mod @[[SMOD]] {
// CHECK-NEXT: ^bb0(%[[SS:.+]]: f32, %{{.+}}: index, %[[SH:.+]]: index, %{{.+}}: index, %{{.+}}: index, %[[ST:.+]]: tensor<8xf32>):
// CHECK: tensor.extract %[[ST]][%[[SH]]]
// CHECK: tile.yield %{{.*}} : f32
func.func @alibi(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>, %slopes: tensor<8xf32>) -> tensor<?x8x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 8 score_mod(%slopes) {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %m: tensor<8xf32>):
    %slope = tensor.extract %m[%h] : tensor<8xf32>
    %d = arith.subi %j, %i : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %bias = arith.mulf %slope, %df : f32
    %r = arith.addf %s, %bias : f32
    flash.yield %r : f32
  } : (tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<8xf32>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>)
  return %o : tensor<?x8x?x64xbf16>
}
