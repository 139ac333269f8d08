// A run-time key offset with a causal mask and a softcap (f16, D = 64).
func.func @attention(%q: tensor<?x4x?x64xf16>, %k: tensor<?x4x?x64xf16>, %v: tensor<?x4x?x64xf16>, %key_offset: i32) -> (tensor<?x4x?x64xf16>, tensor<?x4x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v key_offset = %key_offset scale = 0.125 mask = #flash.mask<causal> softcap = 30.0 num_kv_heads = 4 : (tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, i32) -> (tensor<?x4x?x64xf16>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x64xf16>, tensor<?x4x?xf32>
}
