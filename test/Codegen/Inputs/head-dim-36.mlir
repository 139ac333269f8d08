func.func @attention(%q: tensor<?x16x?x36xbf16>, %k: tensor<?x16x?x36xbf16>, %v: tensor<?x16x?x36xbf16>) -> (tensor<?x16x?x36xbf16>, tensor<?x16x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.0883883 mask = #flash.mask<causal> num_kv_heads = 16 : (tensor<?x16x?x36xbf16>, tensor<?x16x?x36xbf16>, tensor<?x16x?x36xbf16>) -> (tensor<?x16x?x36xbf16>, tensor<?x16x?xf32>)
  return %o, %lse : tensor<?x16x?x36xbf16>, tensor<?x16x?xf32>
}
