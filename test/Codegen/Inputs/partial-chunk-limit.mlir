// A padded tile (64 columns) loaded with a column limit of 36, which ends inside the 16-byte chunk
// of columns 32..39 (was an emitter error): the device library reads that chunk's first 8 bytes and
// zero-fills the rest (test/Codegen/cuda-ffn-any-width.mlir).
module {
  tile.kernel @k(%a: !tile.tensor<?x40xbf16>, %o: !tile.tensor<?x40xbf16>) attributes {block_m = 64 : i64, block_n = 64 : i64, grid = [#tile.grid<ceildiv(arg0[0], 64)>, #tile.grid<1>, #tile.grid<1>], stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
    %c0 = arith.constant 0 : index
    %c36 = arith.constant 36 : index
    %c40 = arith.constant 40 : index
    %c64 = arith.constant 64 : index
    %0 = tile.program_id x
    %r0 = arith.muli %0, %c64 : index
    %m = tile.dim %a, 0 : !tile.tensor<?x40xbf16>
    %t = tile.load %a[%r0, %c0] limit [%m, %c36] : !tile.tensor<?x40xbf16> -> !tile.tile<64x64xbf16, shared>
    %r = tile.convert %t : !tile.tile<64x64xbf16, shared> -> !tile.tile<64x64xbf16, register>
    tile.store %r, %o[%r0, %c0] limit [%m, %c40] : !tile.tile<64x64xbf16, register>, !tile.tensor<?x40xbf16>
    tile.return
  }
}
