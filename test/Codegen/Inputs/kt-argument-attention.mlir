// softmax(Q·Kᵀ)·V with Kᵀ a function argument: not fusable (flash.attention takes K [B, H, Sk, D]).
func.func @attn(%q: tensor<1x2x8x16xbf16>, %kt: tensor<1x2x16x8xbf16>, %v: tensor<1x2x8x16xbf16>) -> tensor<1x2x8x16xbf16> {
  %s = flash.matmul %q, %kt : tensor<1x2x8x16xbf16>, tensor<1x2x16x8xbf16> -> tensor<1x2x8x8xbf16>
  %p = flash.softmax %s : tensor<1x2x8x8xbf16>
  %o = flash.matmul %p, %v : tensor<1x2x8x8xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x2x8x16xbf16>
  return %o : tensor<1x2x8x16xbf16>
}
