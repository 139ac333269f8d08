// A batched FFN (x [Bf, M, d]): the fused training forward's saved pre and h and the backward's
// elementwise activation gradient over [Bf, M, h] (grid z = batch), gelu_tanh, biases.
func.func @ffn(%x: tensor<?x?x128xbf16>, %w1: tensor<128x520xbf16>, %b1: tensor<520xbf16>, %w2: tensor<520x128xbf16>, %b2: tensor<128xbf16>) -> tensor<?x?x128xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 bias %b2 : (tensor<?x?x128xbf16>, tensor<128x520xbf16>, tensor<520xbf16>, tensor<520x128xbf16>, tensor<128xbf16>) -> tensor<?x?x128xbf16>
  return %y : tensor<?x?x128xbf16>
}
