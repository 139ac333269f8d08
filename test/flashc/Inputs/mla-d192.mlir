// DeepSeek-MLA-style training attention: D = 192 queries / keys, Dv = 128 values, causal.
func.func @mla(%q: tensor<?x16x?x192xbf16>, %k: tensor<?x16x?x192xbf16>, %v: tensor<?x16x?x128xbf16>)
    -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.072168784 mask = #flash.mask<causal> num_kv_heads = 16
      : (tensor<?x16x?x192xbf16>, tensor<?x16x?x192xbf16>, tensor<?x16x?x128xbf16>)
      -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>)
  return %o, %lse : tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>
}
