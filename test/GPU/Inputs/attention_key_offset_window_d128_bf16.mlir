// A run-time key offset with a causal sliding window (GQA 8:2, D = 128, bf16): the sm_90a
// warp-specialised forward and the Sᵀ backward read `key_offset` (flashc-run draws it from
// [-Sq - 8, Sk + 8], or takes --key-offset).
func.func @attention(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>, %key_offset: i32) -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v key_offset = %key_offset scale = 0.08838834764831845 mask = #flash.mask<sliding_window, left = 96, right = 0> num_kv_heads = 2 : (tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, i32) -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>)
  return %o, %lse : tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
}
