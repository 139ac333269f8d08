func.func @tied(%x: tensor<?x4x?x64xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %l = flash.attention %x, %x, %x scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o, %l : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
