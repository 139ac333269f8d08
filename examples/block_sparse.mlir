// Block-sparse attention (block-sparse FlashAttention): a layout of
// 128 x 128 blocks per query head says which blocks of the (query, key) plane
// are computed: key k is visible from query q when
//   layout[h, q // 128, k // 128] != 0
// The block size is part of the spec (the constant below); the layout is an
// argument of the compiled programs (mask_t0, i32 [Hq, query blocks, key
// blocks]), so a new sparsity pattern needs no recompile. From PyTorch:
//   flashc.torch.attention(q, k, v, mask_mod=flashc.mask_mod.block_sparse(layout, 128))
// A kernel of the bundle classifies the 64 x 64 blocks from the layout before
// the attention runs: the attention kernels skip the blocks it turns off and
// compute the others without an element mask (a multiple of 64 is classified
// exactly).
//
//   flashc examples/block_sparse.mlir -o block_sparse_bundle
func.func @block_sparse(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x16x?x128xbf16>, %v: tensor<?x16x?x128xbf16>,
                        %layout: tensor<16x?x?xi32>) -> tensor<?x16x?x128xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.08838834764831845 mask = #flash.mask<none> num_kv_heads = 16
      mask_mod(%layout) {
  ^bb0(%b: index, %h: index, %q_idx: index, %kv_idx: index, %l: tensor<16x?x?xi32>):
    %block = arith.constant 128 : index
    %zero = arith.constant 0 : index
    %qb = arith.floordivsi %q_idx, %block : index
    %kb = arith.floordivsi %kv_idx, %block : index
    %on = tensor.extract %l[%h, %qb, %kb] : tensor<16x?x?xi32>
    %on_index = arith.index_cast %on : i32 to index
    %visible = arith.cmpi ne, %on_index, %zero : index
    flash.yield %visible : i1
  } : (tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<16x?x?xi32>)
    -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>)
  return %o : tensor<?x16x?x128xbf16>
}
