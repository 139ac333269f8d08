// d = d_out = 333, h = 1001 (widths inside 16-byte chunks, #22), gated: the gated GEMM and the down GEMM, the gated backward: f16 d=333 h=1001 silu gated
func.func @ffn(%x: tensor<?x333xf16>, %wg: tensor<333x1001xf16>, %wu: tensor<333x1001xf16>, %w2: tensor<1001x333xf16>) -> tensor<?x333xf16> {
  %y = flash.ffn silu %x, %wg up %wu, %w2 : (tensor<?x333xf16>, tensor<333x1001xf16>, tensor<333x1001xf16>, tensor<1001x333xf16>) -> tensor<?x333xf16>
  return %y : tensor<?x333xf16>
}
