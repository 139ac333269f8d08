// A 16-row register tile in a 4-warp kernel: the device library spreads register tiles over the
// warps in 16-row bands (64 rows here); said at the op, not by a static_assert in NVRTC.
module {
  tile.kernel @k(%a: !tile.tensor<?x64xf32>) attributes {block_m = 16 : i64, block_n = 64 : i64, grid = [#tile.grid<ceildiv(arg0[0], 16)>, #tile.grid<1>, #tile.grid<1>], stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %0 = tile.program_id x
    %r0 = arith.muli %0, %c16 : index
    %m = tile.dim %a, 0 : !tile.tensor<?x64xf32>
    %z = tile.fill 0.0 : !tile.tile<16x64xf32, register>
    tile.store %z, %a[%r0, %c0] limit [%m, %c64] : !tile.tile<16x64xf32, register>, !tile.tensor<?x64xf32>
    tile.return
  }
}
