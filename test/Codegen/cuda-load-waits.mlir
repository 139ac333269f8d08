// The emitter issues a standalone load's cp.async at once and waits for it before the first op that reads a loaded
// tile (cuda-ffn-gated.mlir: the backward hidden kernel's g and u tiles land under its product loop). A wait inside
// a loop body settles only the loads of that body: the loop may run no iteration, so a load issued before it is
// waited for again before its reader after the loop.
// RUN: flashc %s --emit=cuda --arch=sm_80 -o - | FileCheck %s
// RUN: flashc %s --emit=cubin --arch=sm_80 -o %t.cubin

// CHECK-LABEL: flashc_deferred(
// CHECK: load_tile_async<kThreads>([[FIRST:arg0_tile]], matrix_view<bf16>(arg0), 0, 0,
// CHECK-NEXT: cp_async_commit();
// CHECK-NOT: cp_async_wait
// CHECK: for (int
// CHECK: load_tile_async<kThreads>([[BODY:arg0_tile_1]], matrix_view<bf16>(arg0),
// CHECK-NEXT: cp_async_commit();
// CHECK-NEXT: cp_async_wait<0>();
// CHECK-NEXT: __syncthreads();
// CHECK: convert({{.*}}, [[BODY]]);
// CHECK: }
// CHECK-NEXT: cp_async_wait<0>();
// CHECK-NEXT: __syncthreads();
// CHECK: convert({{.*}}, [[FIRST]]);
module {
  tile.kernel @deferred(%a: !tile.tensor<?x64xbf16>, %o: !tile.tensor<?x64xf32>, %n: i32) attributes {block_m = 64 : i64, block_n = 64 : i64, grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %m = tile.dim %a, 0 : !tile.tensor<?x64xbf16>
    %steps = arith.index_cast %n : i32 to index
    %first = tile.load %a[%c0, %c0] limit [%m, %c64] : !tile.tensor<?x64xbf16> -> !tile.tile<64x64xbf16, shared>
    %zero = tile.fill 0.000000e+00 : !tile.tile<64x64xf32, register>
    // A run-time trip count, possibly zero.
    %sum = scf.for %i = %c0 to %steps step %c1 iter_args(%s = %zero) -> (!tile.tile<64x64xf32, register>) {
      %row = arith.muli %i, %c64 : index
      %t = tile.load %a[%row, %c0] limit [%m, %c64] : !tile.tensor<?x64xbf16> -> !tile.tile<64x64xbf16, shared>
      %f = tile.convert %t : !tile.tile<64x64xbf16, shared> -> !tile.tile<64x64xf32, register>
      %p = tile.mul %s, %f : !tile.tile<64x64xf32, register>
      scf.yield %p : !tile.tile<64x64xf32, register>
    }
    %r = tile.convert %first : !tile.tile<64x64xbf16, shared> -> !tile.tile<64x64xf32, register>
    %q = tile.mul %r, %sum : !tile.tile<64x64xf32, register>
    tile.store %q, %o[%c0, %c0] limit [%m, %c64] : !tile.tile<64x64xf32, register>, !tile.tensor<?x64xf32>
    tile.return
  }
}
