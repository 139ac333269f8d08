// A gated FFN (SwiGLU) of widths that are not multiples of 8, too wide an output for the fused
// kernel: the gated GEMM, the down GEMM, and the gated backward (test/Codegen/cuda-ffn-any-width.mlir).
func.func @ffn(%x: tensor<?x333xf16>, %wg: tensor<333x1001xf16>, %wu: tensor<333x1001xf16>, %w2: tensor<1001x333xf16>) -> tensor<?x333xf16> {
  %y = flash.ffn silu %x, %wg up %wu, %w2 : (tensor<?x333xf16>, tensor<333x1001xf16>, tensor<333x1001xf16>, tensor<1001x333xf16>) -> tensor<?x333xf16>
  return %y : tensor<?x333xf16>
}
