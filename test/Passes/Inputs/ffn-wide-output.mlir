func.func @wide(%x: tensor<?x64xbf16>, %w1: tensor<64x256xbf16>, %w2: tensor<256x8192xbf16>) -> tensor<?x8192xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1, %w2 : (tensor<?x64xbf16>, tensor<64x256xbf16>, tensor<256x8192xbf16>) -> tensor<?x8192xbf16>
  return %y : tensor<?x8192xbf16>
}
