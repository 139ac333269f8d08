// d = 100, h = 1001, d_out = 77 (widths inside 16-byte chunks, #22): the fused kernel; flashc-run pads the rows to 16 bytes with NaN and checks nothing is written there: bf16 d=100 h=1001 d_out=77 gelu_tanh bias=b1b2
func.func @ffn(%x: tensor<?x100xbf16>, %w1: tensor<100x1001xbf16>, %b1: tensor<1001xbf16>, %w2: tensor<1001x77xbf16>, %b2: tensor<77xbf16>) -> tensor<?x77xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 bias %b2 : (tensor<?x100xbf16>, tensor<100x1001xbf16>, tensor<1001xbf16>, tensor<1001x77xbf16>, tensor<77xbf16>) -> tensor<?x77xbf16>
  return %y : tensor<?x77xbf16>
}
