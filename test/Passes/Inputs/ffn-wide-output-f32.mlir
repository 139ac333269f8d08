// An f32 FFN whose fused kernel fits the tile bounds (a [64 x 1024] f32 accumulator: 256 KB) but not shared
// memory (its [64 x 1024] f32 slab of w2 beside the other tiles): flash-plan-memory's hint names the choice.
func.func @wide(%x: tensor<?x128xf32>, %w1: tensor<128x256xf32>, %w2: tensor<256x1024xf32>) -> tensor<?x1024xf32> {
  %y = flash.ffn gelu_tanh %x, %w1, %w2 : (tensor<?x128xf32>, tensor<128x256xf32>, tensor<256x1024xf32>) -> tensor<?x1024xf32>
  return %y : tensor<?x1024xf32>
}
