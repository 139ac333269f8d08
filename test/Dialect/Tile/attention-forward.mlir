// RUN: flash-opt %s | flash-opt | FileCheck %s
// A hand-written causal attention-forward kernel (f32, D = 64, Br = Bc = 64)
// round-trips through the parser and verifiers; docs/tile-dialect.md shows it.

// CHECK-LABEL: tile.kernel @attention_fwd
// CHECK-SAME: block_m = 64
// CHECK-SAME: grid = [#tile.grid<ceildiv(arg0[2], 64)>, #tile.grid<arg0[1]>, #tile.grid<arg0[0]>]
// CHECK-SAME: strategy = #tile.strategy<mma_sync_sm80>
// CHECK-SAME: warps = 4
tile.kernel @attention_fwd(%q: !tile.tensor<?x4x?x64xf32>, %k: !tile.tensor<?x2x?x64xf32>,
                           %v: !tile.tensor<?x2x?x64xf32>, %o: !tile.tensor<?x4x?x64xf32>,
                           %lse: !tile.tensor<?x4x?xf32>)
    attributes {grid = [#tile.grid<ceildiv(arg0[2], 64)>, #tile.grid<arg0[1]>, #tile.grid<arg0[0]>],
                strategy = #tile.strategy<mma_sync_sm80>,
                block_m = 64, block_n = 64, warps = 4, stages = 2} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  // CHECK: tile.program_id x
  %rb = tile.program_id x
  %h = tile.program_id y
  %b = tile.program_id z
  %sq = tile.dim %q, 2 : !tile.tensor<?x4x?x64xf32>
  %sk = tile.dim %k, 2 : !tile.tensor<?x2x?x64xf32>
  %hq = tile.dim %q, 1 : !tile.tensor<?x4x?x64xf32>
  %hkv = tile.dim %k, 1 : !tile.tensor<?x2x?x64xf32>
  // GQA: query head h reads kv head h / (Hq / Hkv).
  %group = arith.divui %hq, %hkv : index
  %hk = arith.divui %h, %group : index
  %row0 = arith.muli %rb, %c64 : index
  // Bottom-right alignment: row i sits at key position i + Sk - Sq.
  %offset = arith.subi %sk, %sq : index
  // CHECK: tile.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] limit[%{{.*}}, %{{.*}}] : <?x4x?x64xf32> -> <64x64xf32, shared>
  %qt = tile.load %q[%b, %h, %row0, %c0] limit [%sq, %c64]
      : !tile.tensor<?x4x?x64xf32> -> !tile.tile<64x64xf32, shared>
  %m0 = tile.fill 0xFFF0000000000000 : !tile.tile<64xf32, register>
  %l0 = tile.fill 0.0 : !tile.tile<64xf32, register>
  %acc0 = tile.fill 0.0 : !tile.tile<64x64xf32, register>
  // Causal: this row block sees keys [0, min(Sk, row0 + 64 + offset)).
  %end0 = arith.addi %row0, %c64 : index
  %end1 = arith.addi %end0, %offset : index
  %end2 = arith.minsi %end1, %sk : index
  %end = arith.maxsi %end2, %c0 : index
  %nblocks = arith.ceildivsi %end, %c64 : index
  %res:3 = scf.for %kb = %c0 to %nblocks step %c1
      iter_args(%acc = %acc0, %m = %m0, %l = %l0)
      -> (!tile.tile<64x64xf32, register>, !tile.tile<64xf32, register>, !tile.tile<64xf32, register>) {
    %col0 = arith.muli %kb, %c64 : index
    %kt = tile.load %k[%b, %hk, %col0, %c0] limit [%sk, %c64] {buffers = 2}
        : !tile.tensor<?x2x?x64xf32> -> !tile.tile<64x64xf32, shared>
    %vt = tile.load %v[%b, %hk, %col0, %c0] limit [%sk, %c64] {buffers = 2}
        : !tile.tensor<?x2x?x64xf32> -> !tile.tile<64x64xf32, shared>
    %s0 = tile.fill 0.0 : !tile.tile<64x64xf32, register>
    // CHECK: tile.matmul %{{.*}}, %{{.*}}, %{{.*}} transpose_b
    %s = tile.matmul %qt, %kt, %s0 transpose_b
        : !tile.tile<64x64xf32, shared>, !tile.tile<64x64xf32, shared> -> !tile.tile<64x64xf32, register>
    // Only blocks crossing the diagonal or the key tail pay for the mask.
    %last = arith.addi %col0, %c63 : index
    %diag = arith.addi %row0, %offset : index
    %crosses = arith.cmpi sgt, %last, %diag : index
    %tail_end = arith.addi %col0, %c64 : index
    %ragged = arith.cmpi sgt, %tail_end, %sk : index
    %needs_mask = arith.ori %crosses, %ragged : i1
    %sm = scf.if %needs_mask -> (!tile.tile<64x64xf32, register>) {
      // CHECK: tile.mask %{{.*}} rows %{{.*}} cols %{{.*}} limit %{{.*}} offset %{{.*}} window[-1, 0]
      %masked = tile.mask %s rows %row0 cols %col0 limit %sk offset %offset window [-1, 0]
          : !tile.tile<64x64xf32, register>
      scf.yield %masked : !tile.tile<64x64xf32, register>
    } else {
      scf.yield %s : !tile.tile<64x64xf32, register>
    }
    %mn = tile.row_max %sm, %m : !tile.tile<64x64xf32, register>, !tile.tile<64xf32, register>
    %p = tile.exp2 %sm, %mn scale 1.250000e-01
        : !tile.tile<64x64xf32, register>, !tile.tile<64xf32, register>
    %corr = tile.softmax_correction %m, %mn scale 1.250000e-01 : !tile.tile<64xf32, register>
    %ln = tile.online_sum %l, %corr, %p
        : !tile.tile<64xf32, register>, !tile.tile<64x64xf32, register>
    %accr = tile.rescale %acc, %corr
        : !tile.tile<64x64xf32, register>, !tile.tile<64xf32, register>
    %accn = tile.matmul %p, %vt, %accr
        : !tile.tile<64x64xf32, register>, !tile.tile<64x64xf32, shared> -> !tile.tile<64x64xf32, register>
    scf.yield %accn, %mn, %ln
        : !tile.tile<64x64xf32, register>, !tile.tile<64xf32, register>, !tile.tile<64xf32, register>
  }
  %out = tile.normalize %res#0, %res#2 : !tile.tile<64x64xf32, register>, !tile.tile<64xf32, register>
  tile.store %out, %o[%b, %h, %row0, %c0] limit [%sq, %c64]
      : !tile.tile<64x64xf32, register>, !tile.tensor<?x4x?x64xf32>
  // CHECK: tile.lse
  %lsev = tile.lse %res#1, %res#2 scale 1.250000e-01 : !tile.tile<64xf32, register>
  tile.store_rows %lsev, %lse[%b, %h, %row0] limit %sq
      : !tile.tile<64xf32, register>, !tile.tensor<?x4x?xf32>
  tile.return
}

// CHECK-LABEL: func.func @attention
// CHECK: tile.launch @attention_fwd
func.func @attention(%q: !tile.tensor<?x4x?x64xf32>, %k: !tile.tensor<?x2x?x64xf32>,
                     %v: !tile.tensor<?x2x?x64xf32>, %o: !tile.tensor<?x4x?x64xf32>,
                     %lse: !tile.tensor<?x4x?xf32>) attributes {tile.program} {
  tile.launch @attention_fwd(%q, %k, %v, %o, %lse)
      : !tile.tensor<?x4x?x64xf32>, !tile.tensor<?x2x?x64xf32>, !tile.tensor<?x2x?x64xf32>,
        !tile.tensor<?x4x?x64xf32>, !tile.tensor<?x4x?xf32>
  return
}
