// A hand-written kernel whose 16-bit shared tile is the head dim (80) wide: rows of the device
// library's shared tiles are whole 64-byte swizzle units, so the emitter says how flash-tile pads it
// (96 columns, loaded with limit 80) instead of printing CUDA that does not compile.
module {
  tile.kernel @k(%a: !tile.tensor<?x80xbf16>, %o: !tile.tensor<?x80xbf16>) attributes {block_m = 64 : i64, block_n = 64 : i64, grid = [#tile.grid<ceildiv(arg0[0], 64)>, #tile.grid<1>, #tile.grid<1>], stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %c80 = arith.constant 80 : index
    %0 = tile.program_id x
    %r0 = arith.muli %0, %c64 : index
    %m = tile.dim %a, 0 : !tile.tensor<?x80xbf16>
    %t = tile.load %a[%r0, %c0] limit [%m, %c80] : !tile.tensor<?x80xbf16> -> !tile.tile<64x80xbf16, shared>
    %r = tile.convert %t : !tile.tile<64x80xbf16, shared> -> !tile.tile<64x80xbf16, register>
    tile.store %r, %o[%r0, %c0] limit [%m, %c80] : !tile.tile<64x80xbf16, register>, !tile.tensor<?x80xbf16>
    tile.return
  }
}
