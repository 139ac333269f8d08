// A hand-written kernel whose one shared tile has 2^64 elements: its byte size
// wrapped around to 0 in the budget check, so the plan passed. It must saturate
// and fail the check instead.
tile.kernel @huge(%a: !tile.tensor<?x?xbf16>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>],
    strategy = #tile.strategy<mma_sync_sm80>, block_m = 64, block_n = 64, warps = 4, stages = 1} {
  %c0 = arith.constant 0 : index
  %n = tile.dim %a, 0 : !tile.tensor<?x?xbf16>
  %t = tile.load %a[%c0, %c0] limit [%n, %n] : !tile.tensor<?x?xbf16> -> !tile.tile<4294967296x4294967296xbf16, shared>
  tile.return
}
