// A packed-sequences forward kernel read from a file whose signature is not its role's (nine tensors): the emitter
// names what it takes instead of indexing past the arguments (a fuzzer's crash, session 23).
tile.kernel @varlen_fwd(%q: !tile.tensor<?x4x64xbf16>, %k: !tile.tensor<?x4x64xbf16>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 192, block_n = 128, warps = 12, stages = 2,
    spec = #tile.varlen<role = varlen_forward, head_dim = 64, value_dim = 64, group = 1, block_m = 192,
                        window_left = -1, window_right = 0, scale = 0.125 : f64, softcap = 0.0 : f64,
                        element_type = bf16>} {
  %x = tile.program_id x
  tile.return
}
