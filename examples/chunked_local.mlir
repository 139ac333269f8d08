// Chunked local attention (Llama 4's local layers, "iRoPE"): the sequence is
// cut into chunks of 8192 tokens and each token attends causally within its
// own chunk only:
//   lambda b, h, q_idx, kv_idx: (q_idx // 8192 == kv_idx // 8192) & (kv_idx <= q_idx)
// Key blocks of other chunks are outside the kernels' loops (their interval
// analysis proves them hidden), so the work grows with the chunk, not with
// the sequence. 40 query heads share 8 key/value heads (GQA).
func.func @chunked_local(%q: tensor<?x40x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>)
    -> tensor<?x40x?x128xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.08838834764831845 mask = #flash.mask<causal> num_kv_heads = 8 mask_mod {
  ^bb0(%q_idx: index, %kv_idx: index):
    %chunk = arith.constant 8192 : index
    %q_chunk = arith.floordivsi %q_idx, %chunk : index
    %k_chunk = arith.floordivsi %kv_idx, %chunk : index
    %same = arith.cmpi eq, %q_chunk, %k_chunk : index
    flash.yield %same : i1
  } : (tensor<?x40x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>)
    -> (tensor<?x40x?x128xbf16>, tensor<?x40x?xf32>)
  return %o : tensor<?x40x?x128xbf16>
}
