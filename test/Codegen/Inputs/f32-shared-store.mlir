// An f32 tile copied to shared memory and stored from there: the device library stores
// register tiles and 16-bit shared tiles only (was CUDA that NVRTC rejected).
module {
  tile.kernel @copy_f32(%a: !tile.tensor<?x64xf32>, %c: !tile.tensor<?x64xf32>) attributes {block_m = 64 : i64, block_n = 64 : i64, grid = [#tile.grid<ceildiv(arg0[0], 64)>, #tile.grid<1>, #tile.grid<1>], stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %0 = tile.program_id x
    %r0 = arith.muli %0, %c64 : index
    %m = tile.dim %a, 0 : !tile.tensor<?x64xf32>
    %t = tile.load %a[%r0, %c0] limit [%m, %c64] : !tile.tensor<?x64xf32> -> !tile.tile<64x64xf32, shared>
    %r = tile.convert %t : !tile.tile<64x64xf32, shared> -> !tile.tile<64x64xf32, register>
    %s = tile.copy %r : !tile.tile<64x64xf32, register> -> !tile.tile<64x64xf32, shared>
    tile.store %s, %c[%r0, %c0] limit [%m, %c64] : !tile.tile<64x64xf32, shared>, !tile.tensor<?x64xf32>
    tile.return
  }
}
