func.func @wide(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %l = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<sliding_window, left = 9223372036854775807, right = 0> num_kv_heads = 4
      : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o, %l : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
