// f32 FFN of widths that are not multiples of 4 or 16 (test/Numerics/ffn-any-width.mlir runs it):
// nothing rounds, so 1e-5 against float64 shows the zero-filled padding adds exactly nothing.

// CHECK-NOT: FAIL
// CHECK: @f32_any forward result 0: {{.*}} ok
// CHECK: @f32_any backward d_x: {{.*}} ok
// CHECK: @f32_any backward d_w1: {{.*}} ok
// CHECK: @f32_any backward d_b1: {{.*}} ok
// CHECK: @f32_any backward d_w2: {{.*}} ok

func.func @f32_any(%x: tensor<21x101xf32>, %w1: tensor<101x333xf32>, %b1: tensor<333xf32>, %w2: tensor<333x77xf32>) -> tensor<21x77xf32> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 : (tensor<21x101xf32>, tensor<101x333xf32>, tensor<333xf32>, tensor<333x77xf32>) -> tensor<21x77xf32>
  return %y : tensor<21x77xf32>
}
