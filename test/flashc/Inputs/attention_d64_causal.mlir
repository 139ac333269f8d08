// flashc.spec's spec of bf16 Hq=32 Hkv=32 D=64 causal scale=0.125
func.func @attention(%q: tensor<?x32x?x64xbf16>, %k: tensor<?x32x?x64xbf16>, %v: tensor<?x32x?x64xbf16>) -> (tensor<?x32x?x64xbf16>, tensor<?x32x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 32 : (tensor<?x32x?x64xbf16>, tensor<?x32x?x64xbf16>, tensor<?x32x?x64xbf16>) -> (tensor<?x32x?x64xbf16>, tensor<?x32x?xf32>)
  return %o, %lse : tensor<?x32x?x64xbf16>, tensor<?x32x?xf32>
}

