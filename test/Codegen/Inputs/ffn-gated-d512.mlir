// A gated FFN whose up projection is a gated_gemm kernel (d = 512 does not fuse): cuda-gemm-ws.mlir.
func.func @ffn(%x: tensor<?x512xbf16>, %wg: tensor<512x1024xbf16>, %wu: tensor<512x1024xbf16>, %w2: tensor<1024x512xbf16>) -> tensor<?x512xbf16> {
  %y = flash.ffn silu %x, %wg up %wu, %w2 : (tensor<?x512xbf16>, tensor<512x1024xbf16>, tensor<512x1024xbf16>, tensor<1024x512xbf16>) -> tensor<?x512xbf16>
  return %y : tensor<?x512xbf16>
}
