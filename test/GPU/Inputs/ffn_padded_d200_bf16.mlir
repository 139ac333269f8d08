// d = d_out = 200, h = 328: the fused kernel with its output tiles padded to 224 columns: bf16 d=200 h=328 gelu_tanh bias=b1b2
func.func @ffn(%x: tensor<?x200xbf16>, %w1: tensor<200x328xbf16>, %b1: tensor<328xbf16>, %w2: tensor<328x200xbf16>, %b2: tensor<200xbf16>) -> tensor<?x200xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 bias %b2 : (tensor<?x200xbf16>, tensor<200x328xbf16>, tensor<328xbf16>, tensor<328x200xbf16>, tensor<200xbf16>) -> tensor<?x200xbf16>
  return %y : tensor<?x200xbf16>
}
