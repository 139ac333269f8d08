// flash-run-tile --run-program: a moe_select block given routing tensors of T values where it writes T * top_k
// (every dynamic dim takes --dynamic-size): the CPU executor wrote past their ends (heap overflow, then SIGSEGV).
// test/Numerics/executor-errors.mlir runs it.
tile.kernel @select(%logits: !tile.tensor<?x8xbf16>, %counts: !tile.tensor<8xi32>, %ids: !tile.tensor<?xi32>,
                    %weights: !tile.tensor<?xf32>, %ranks: !tile.tensor<?xi32>)
    attributes {block_m = 8 : i64, block_n = 1 : i64,
                grid = [#tile.grid<ceildiv(arg0[0], 8)>, #tile.grid<1>, #tile.grid<1>],
                spec = #tile.moe<role = moe_select, experts = 8, top_k = 2, sigmoid = false, renormalize = false,
                                 activation = silu, gated = false, element_type = bf16>,
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %x = tile.program_id x
  %y = tile.program_id y
  %z = tile.program_id z
  tile.moe_block(%logits, %counts, %ids, %weights, %ranks) at [%x, %y, %z]
      : !tile.tensor<?x8xbf16>, !tile.tensor<8xi32>, !tile.tensor<?xi32>, !tile.tensor<?xf32>, !tile.tensor<?xi32>
  tile.return
}
func.func @p(%logits: !tile.tensor<?x8xbf16>, %ids: !tile.tensor<?xi32>, %weights: !tile.tensor<?xf32>,
             %ranks: !tile.tensor<?xi32>) attributes {tile.program} {
  %counts = tile.alloc_tensor() {tile.zero_fill} : !tile.tensor<8xi32>
  tile.launch @select(%logits, %counts, %ids, %weights, %ranks)
      : !tile.tensor<?x8xbf16>, !tile.tensor<8xi32>, !tile.tensor<?xi32>, !tile.tensor<?xf32>, !tile.tensor<?xi32>
  return
}
