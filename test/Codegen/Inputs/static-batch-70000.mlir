func.func @attention(%q: tensor<70000x4x?x64xbf16>, %k: tensor<70000x4x?x64xbf16>, %v: tensor<70000x4x?x64xbf16>) -> (tensor<70000x4x?x64xbf16>, tensor<70000x4x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4 : (tensor<70000x4x?x64xbf16>, tensor<70000x4x?x64xbf16>, tensor<70000x4x?x64xbf16>) -> (tensor<70000x4x?x64xbf16>, tensor<70000x4x?xf32>)
  return %o, %lse : tensor<70000x4x?x64xbf16>, tensor<70000x4x?xf32>
}
