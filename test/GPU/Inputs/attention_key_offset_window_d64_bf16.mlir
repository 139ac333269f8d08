// A run-time key offset with a two-sided window (keys 40 left, 24 right of the diagonal), bf16, D = 64.
func.func @attention(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %key_offset: i32) -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v key_offset = %key_offset scale = 0.125 mask = #flash.mask<sliding_window, left = 40, right = 24> num_kv_heads = 2 : (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, i32) -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>)
  return %o, %lse : tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
}
