// A fused FFN with d_out = 1024 (bf16): its [64 x 1024] f32 accumulator fits a tile exactly; a 256-row slab of w2
// ([256 x 1024] bf16, 512 KB) does not.
func.func @ffn_out1024(%x: tensor<?x64xbf16>, %w1: tensor<64x256xbf16>, %w2: tensor<256x1024xbf16>) -> tensor<?x1024xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1, %w2 : (tensor<?x64xbf16>, tensor<64x256xbf16>, tensor<256x1024xbf16>) -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
