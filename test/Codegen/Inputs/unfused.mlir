func.func @f(%x: tensor<4x8xbf16>, %w: tensor<8x8xbf16>) -> tensor<4x8xbf16> {
  %y = flash.matmul %x, %w : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}
