// d = 256, h = 1024, gelu_tanh: the benchmark FFN's short contraction (cuda-gemm-ws-ping-pong.mlir).
func.func @ffn(%x: tensor<?x256xbf16>, %w1: tensor<256x1024xbf16>, %w2: tensor<1024x256xbf16>) -> tensor<?x256xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1, %w2 : (tensor<?x256xbf16>, tensor<256x1024xbf16>, tensor<1024x256xbf16>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
