// Causal attention within documents: several documents packed into one
// sequence, each token seeing the earlier tokens of its own document only. A
// mask FlexAttention users write as
//   lambda b, h, q_idx, kv_idx: (doc[q_idx] == doc[kv_idx]) & (kv_idx <= q_idx)
// with `doc` each token's document id, and flashc.torch.attention(causal=True,
// mask_mod=lambda b, h, q_idx, kv_idx: doc[q_idx] == doc[kv_idx]) traces into
// this region: the modifier reads the tensor it is given as an operand.
//
// The document ids are an argument of the compiled programs (mask_t0, i32),
// not part of the bundle: new ids need no recompile. The region reads them at
// q and at k themselves, so they must cover both: at least max(Sq, Sk) ids,
// which every kernel checks at launch (`argument 'mask_t0' dim 0 is 100, but
// the mask modifier reads it at the query index, which ranges over Sq = 128`)
// rather than reading the missing ids as 0, a mask nobody asked for.
// Before the attention kernels run, a kernel of the bundle
// classifies every 64 x 64 block of the (query, key) plane from the ids
// (hidden, shown whole, or mixed); the attention kernels skip the key blocks
// before and after a query block's documents and mask elementwise only the
// mixed blocks. Nothing is built on the host.
//
//   flashc examples/document_mask.mlir -o document_mask_bundle
func.func @document_mask(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x16x?x128xbf16>, %v: tensor<?x16x?x128xbf16>,
                         %doc: tensor<?xi32>) -> tensor<?x16x?x128xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.08838834764831845 mask = #flash.mask<causal> num_kv_heads = 16
      mask_mod(%doc) {
  ^bb0(%q_idx: index, %kv_idx: index, %ids: tensor<?xi32>):
    %dq = tensor.extract %ids[%q_idx] : tensor<?xi32>    // the query's document
    %dk = tensor.extract %ids[%kv_idx] : tensor<?xi32>   // the key's document
    %a = arith.index_cast %dq : i32 to index
    %b = arith.index_cast %dk : i32 to index
    %same = arith.cmpi eq, %a, %b : index
    flash.yield %same : i1
  } : (tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?xi32>)
    -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>)
  return %o : tensor<?x16x?x128xbf16>
}
