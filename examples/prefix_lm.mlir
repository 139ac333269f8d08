// Prefix-LM attention (as in T5 / UL2 / PaLI): the first 4096 tokens (the
// prompt, the image) attend to each other both ways; the tokens after them
// attend causally. A mask FlexAttention users write as
//   lambda b, h, q_idx, kv_idx: (kv_idx < 4096) | (kv_idx <= q_idx)
// and flashc.torch.attention(mask_mod=...) traces into this region.
//
// The modifier is an index function of the query row q and the key row k
// (IndexFunction.h); the kernels evaluate it per element only on blocks it
// hides in part, skip the leading / trailing key blocks it hides whole, and
// run the rest unmasked (the device library's interval analysis). The
// backward is generated with the same modifier.
//
//   flashc examples/prefix_lm.mlir -o prefix_lm_bundle
func.func @prefix_lm(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x16x?x128xbf16>, %v: tensor<?x16x?x128xbf16>)
    -> tensor<?x16x?x128xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.08838834764831845 mask = #flash.mask<none> num_kv_heads = 16 mask_mod {
  ^bb0(%q_idx: index, %kv_idx: index):
    %prefix = arith.constant 4096 : index
    %in_prefix = arith.cmpi slt, %kv_idx, %prefix : index   // kv_idx < 4096
    %causal = arith.cmpi sle, %kv_idx, %q_idx : index        // kv_idx <= q_idx
    %visible = arith.ori %in_prefix, %causal : i1
    flash.yield %visible : i1
  } : (tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>)
    -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>)
  return %o : tensor<?x16x?x128xbf16>
}
