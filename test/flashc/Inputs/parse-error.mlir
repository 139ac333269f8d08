func.func @broken(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = flash.softmax %x : tensor<4x4xf32>
  %1 = flash.scale %0 by : tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}
