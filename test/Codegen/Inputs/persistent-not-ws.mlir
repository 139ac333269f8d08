// A hand-written kernel that takes one tile a block (mma.sync) given the persistent grid order, which only the
// warp-specialised attention forward's library form loops over: the kernel verifier refuses it.
module {
  tile.kernel @k(%a: !tile.tensor<?x64xbf16>, %o: !tile.tensor<?x64xbf16>) attributes {block_m = 64 : i64, block_n = 64 : i64, grid = [#tile.grid<ceildiv(arg0[0], 64)>, #tile.grid<1>, #tile.grid<1>], grid_order = #tile.grid_order<order = persistent, group = 1>, stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %0 = tile.program_id x
    %r0 = arith.muli %0, %c64 : index
    %m = tile.dim %a, 0 : !tile.tensor<?x64xbf16>
    %t = tile.load %a[%r0, %c0] limit [%m, %c64] : !tile.tensor<?x64xbf16> -> !tile.tile<64x64xbf16, shared>
    %r = tile.convert %t : !tile.tile<64x64xbf16, shared> -> !tile.tile<64x64xbf16, register>
    tile.store %r, %o[%r0, %c0] limit [%m, %c64] : !tile.tile<64x64xbf16, register>, !tile.tensor<?x64xbf16>
    tile.return
  }
}
