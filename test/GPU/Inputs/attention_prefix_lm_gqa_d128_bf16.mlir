// Prefix-LM (keys before 100 seen by every query, the rest causally): a mask modifier of indices alone, under GQA.
// Its forward's tuning space holds the wide key block (192 keys, the element mask column by column), so the loops of
// generated_kernels.sh also run it in that block.
func.func @attention(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.08838834764831845 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%qi: index, %ki: index):
    %prefix = arith.constant 100 : index
    %in_prefix = arith.cmpi slt, %ki, %prefix : index
    %seen = arith.cmpi sle, %ki, %qi : index
    %visible = arith.ori %in_prefix, %seen : i1
    flash.yield %visible : i1
  } : (tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>) -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
}
