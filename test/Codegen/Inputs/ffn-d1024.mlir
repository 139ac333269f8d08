// d = 1024, h = 4096: every weight gradient has tiles enough not to split (cuda-gemm-ws.mlir's OP check).
func.func @ffn(%x: tensor<?x1024xbf16>, %w1: tensor<1024x4096xbf16>, %w2: tensor<4096x1024xbf16>) -> tensor<?x1024xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1, %w2 : (tensor<?x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
