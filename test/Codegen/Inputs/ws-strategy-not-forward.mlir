// A hand-written kernel marked wgmma_ws_sm90 that is no attention forward: the
// strategy names one library schedule, so the emitter refuses it by name.
tile.kernel @not_forward(%a: !tile.tensor<?x128xbf16>, %c: !tile.tensor<?x128xbf16>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>],
    strategy = #tile.strategy<wgmma_ws_sm90>, block_m = 128, block_n = 128, warps = 8, stages = 2} {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %n = tile.dim %a, 0 : !tile.tensor<?x128xbf16>
  %t = tile.load %a[%c0, %c0] limit [%n, %c128] : !tile.tensor<?x128xbf16> -> !tile.tile<128x128xbf16, shared>
  tile.store %t, %c[%c0, %c0] limit [%n, %c128] : !tile.tile<128x128xbf16, shared>, !tile.tensor<?x128xbf16>
  tile.return
}
