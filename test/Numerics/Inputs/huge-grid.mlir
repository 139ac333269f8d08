// flash-run-tile --run-program: a 2^31-1 cube grid (y and z past CUDA's 65535, which only the bundle writer
// refuses); the CPU executor ran every block, for ever. test/Numerics/executor-errors.mlir runs it.
tile.kernel @k(%a: !tile.tensor<?x32xf32>, %b: i32) attributes {grid = [#tile.grid<2147483647>, #tile.grid<2147483647>, #tile.grid<2147483647>], strategy = #tile.strategy<mma_sync_sm80>, block_m = 16, block_n = 32, warps = 1, stages = 1} {
  tile.return
}
func.func @p(%a: !tile.tensor<?x32xf32>, %b: i32) attributes {tile.program} {
  tile.launch @k(%a, %b) : !tile.tensor<?x32xf32>, i32
  return
}
