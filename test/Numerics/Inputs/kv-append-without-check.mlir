// flash-run-tile --run-program: a kv_append kernel launched without its kv_append_check kernel, on random lengths;
// the CPU executor trusted the lengths the check validates and wrote outside the cache (SIGSEGV).
// test/Numerics/executor-errors.mlir runs it.
tile.kernel @append(%k: !tile.tensor<?x1x?x8xf16>, %v: !tile.tensor<?x1x?x8xf16>,
                    %kc: !tile.tensor<?x1x?x8xf16>, %vc: !tile.tensor<?x1x?x8xf16>,
                    %lens: !tile.tensor<?xi32>, %status: !tile.tensor<4xi32>)
    attributes {block_m = 4 : i64, block_n = 1 : i64,
                grid = [#tile.grid<ceildiv(arg0[2], 4)>, #tile.grid<arg0[0]>, #tile.grid<1>],
                spec = #tile.decode<role = kv_append, head_dim = 8, value_dim = 8, queries = 0, group = 1,
                                    page_size = 0, causal = false, scale = 1.0 : f64, element_type = f16>,
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  %x = tile.program_id x
  %y = tile.program_id y
  %z = tile.program_id z
  tile.decode_block(%k, %v, %kc, %vc, %lens, %status) at [%x, %y, %z]
      : !tile.tensor<?x1x?x8xf16>, !tile.tensor<?x1x?x8xf16>, !tile.tensor<?x1x?x8xf16>,
        !tile.tensor<?x1x?x8xf16>, !tile.tensor<?xi32>, !tile.tensor<4xi32>
  tile.return
}
func.func @p(%k: !tile.tensor<?x1x?x8xf16>, %v: !tile.tensor<?x1x?x8xf16>,
             %kc: !tile.tensor<?x1x?x8xf16>, %vc: !tile.tensor<?x1x?x8xf16>,
             %lens: !tile.tensor<?xi32>) attributes {tile.program} {
  %status = tile.alloc_tensor() {tile.zero_fill} : !tile.tensor<4xi32>
  tile.launch @append(%k, %v, %kc, %vc, %lens, %status)
      : !tile.tensor<?x1x?x8xf16>, !tile.tensor<?x1x?x8xf16>, !tile.tensor<?x1x?x8xf16>,
        !tile.tensor<?x1x?x8xf16>, !tile.tensor<?xi32>, !tile.tensor<4xi32>
  return
}
