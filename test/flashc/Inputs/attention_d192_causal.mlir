func.func @attention(%q: tensor<?x4x?x192xbf16>, %k: tensor<?x4x?x192xbf16>, %v: tensor<?x4x?x192xbf16>) -> tensor<?x4x?x192xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.07216878364870323 mask = #flash.mask<causal> num_kv_heads = 4 : (tensor<?x4x?x192xbf16>, tensor<?x4x?x192xbf16>, tensor<?x4x?x192xbf16>) -> (tensor<?x4x?x192xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x192xbf16>
}
