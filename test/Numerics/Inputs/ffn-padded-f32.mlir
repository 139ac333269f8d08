// f32 fused FFN with d_out padded to whole 16-column fragments (test/Numerics/ffn-padded.mlir runs
// it): nothing rounds, so 1e-5 against float64 shows the padding adds exactly nothing.

// CHECK-NOT: FAIL
// CHECK: @f32_out20 forward result 0: {{.*}} ok
// CHECK: @f32_out20 backward d_x: {{.*}} ok
// CHECK: @f32_out20 backward d_w2: {{.*}} ok
// CHECK: @f32_out20 backward d_b2: {{.*}} ok

func.func @f32_out20(%x: tensor<23x37xf32>, %w1: tensor<37x50xf32>, %w2: tensor<50x20xf32>, %b2: tensor<20xf32>) -> tensor<23x20xf32> {
  %y = flash.ffn gelu_tanh %x, %w1, %w2 bias %b2 : (tensor<23x37xf32>, tensor<37x50xf32>, tensor<50x20xf32>, tensor<20xf32>) -> tensor<23x20xf32>
  return %y : tensor<23x20xf32>
}
