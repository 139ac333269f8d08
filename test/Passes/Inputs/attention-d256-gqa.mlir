// An attention with 256-wide heads (Gemma-style), GQA 8 on 2, causal: input
// of the warp-specialised backward's tests.
func.func @wide(%q: tensor<?x8x?x256xbf16>, %k: tensor<?x2x?x256xbf16>, %v: tensor<?x2x?x256xbf16>)
    -> (tensor<?x8x?x256xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.0625 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<?x8x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>)
      -> (tensor<?x8x?x256xbf16>, tensor<?x8x?xf32>)
  return %o, %lse : tensor<?x8x?x256xbf16>, tensor<?x8x?xf32>
}
