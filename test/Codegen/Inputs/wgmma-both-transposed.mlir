// A hand-written wgmma kernel with C += Aᵀ·Bᵀ from shared memory: no wgmma form
// of the device library reads both operands transposed, so the emitter refuses it.
tile.kernel @both_transposed(%a: !tile.tensor<?x128xbf16>, %c: !tile.tensor<?x128xf32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>],
    strategy = #tile.strategy<wgmma_sm90>, block_m = 128, block_n = 128, warps = 8, stages = 1} {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %n = tile.dim %a, 0 : !tile.tensor<?x128xbf16>
  %t = tile.load %a[%c0, %c0] limit [%n, %c128] : !tile.tensor<?x128xbf16> -> !tile.tile<128x128xbf16, shared>
  %z = tile.fill 0.000000e+00 : <128x128xf32, register>
  %p = tile.matmul %t, %t, %z transpose_a transpose_b : <128x128xbf16, shared>, <128x128xbf16, shared> -> <128x128xf32, register>
  %s = tile.copy %p : !tile.tile<128x128xf32, register> -> !tile.tile<128x128xf32, shared>
  tile.store %s, %c[%c0, %c0] limit [%n, %c128] : !tile.tile<128x128xf32, shared>, !tile.tensor<?x128xf32>
  tile.return
}
