// Phi-2's head dim 80 (tiles padded to 96 columns), GQA 4:2, causal: bf16 Hq=4 Hkv=2 D=80 causal scale=0.1118034
func.func @attention(%q: tensor<?x4x?x80xbf16>, %k: tensor<?x2x?x80xbf16>, %v: tensor<?x2x?x80xbf16>) -> (tensor<?x4x?x80xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.1118034 mask = #flash.mask<causal> num_kv_heads = 2 : (tensor<?x4x?x80xbf16>, tensor<?x2x?x80xbf16>, tensor<?x2x?x80xbf16>) -> (tensor<?x4x?x80xbf16>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x80xbf16>, tensor<?x4x?xf32>
}
