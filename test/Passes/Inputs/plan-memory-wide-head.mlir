// A hand-written forward kernel at D = 1024 (the recipe's limit; flash-tile makes none above 256). At the planned
// 64 rows its f32 output accumulator holds [64 x 1024] floats, the tile type's 256 KB; asked for 128 rows, the
// rebuild would make a 512 KB tile, which no tile holds: refused before any tile type is made (an assertion build
// aborted there). The body is empty: only the recipe and the signature matter to the planner.
tile.kernel @fwd(%q: !tile.tensor<?x4x?x1024xbf16>, %k: !tile.tensor<?x4x?x1024xbf16>, %v: !tile.tensor<?x4x?x1024xbf16>, %o: !tile.tensor<?x4x?x1024xbf16>, %lse: !tile.tensor<?x4x?xf32>) attributes {block_m = 64 : i64, block_n = 64 : i64, grid = [#tile.grid<ceildiv(arg0[2], 64)>, #tile.grid<arg0[1]>, #tile.grid<arg0[0]>], spec = #tile.attention<role = attention_forward, head_dim = 1024, value_dim = 1024, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16>, stages = 2 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  tile.return
}
