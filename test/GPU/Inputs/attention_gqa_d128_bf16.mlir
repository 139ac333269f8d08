// Unmasked grouped-query attention at D = 128 (the shape the forward's wide key blocks serve, generated_kernels.sh).
func.func @attention(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.088388346 mask = #flash.mask<none> num_kv_heads = 2 : (tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>) -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>)
  return %o, %lse : tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
}
