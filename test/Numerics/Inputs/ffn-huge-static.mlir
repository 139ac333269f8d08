// An FFN whose static input holds 2^20 x 2^20 values (8 TiB of float64): the host tools refuse it by shape
// instead of aborting in the allocator.
func.func @huge(%x: tensor<1048576x1048576xf32>, %w1: tensor<1048576x64xf32>, %w2: tensor<64x32xf32>) -> tensor<1048576x32xf32> {
  %y = flash.ffn gelu_tanh %x, %w1, %w2 : (tensor<1048576x1048576xf32>, tensor<1048576x64xf32>, tensor<64x32xf32>) -> tensor<1048576x32xf32>
  return %y : tensor<1048576x32xf32>
}
