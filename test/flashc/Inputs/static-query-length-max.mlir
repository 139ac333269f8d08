func.func @attention(%q: tensor<?x4x9223372036854775807x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>) -> (tensor<?x4x9223372036854775807x64xbf16>, tensor<?x4x9223372036854775807xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4 : (tensor<?x4x9223372036854775807x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>) -> (tensor<?x4x9223372036854775807x64xbf16>, tensor<?x4x9223372036854775807xf32>)
  return %o, %lse : tensor<?x4x9223372036854775807x64xbf16>, tensor<?x4x9223372036854775807xf32>
}
