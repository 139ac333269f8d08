// f32 attention with head dims padded to whole 16-column fragments (test/Numerics/attention-padded.mlir
// runs it): f32 has no rounding of P or dS to hide a stray padding value behind, so 1e-5 against
// float64 shows the padding adds exactly nothing.

// CHECK-NOT: FAIL
// CHECK: @f32_d20_dv36 forward result 0: {{.*}} ok
// CHECK: @f32_d20_dv36 backward d_q: {{.*}} ok
// CHECK: @f32_d20_dv36 backward d_k: {{.*}} ok
// CHECK: @f32_d20_dv36 backward d_v: {{.*}} ok
// CHECK: @f32_d5_gqa_causal backward d_v: {{.*}} ok

func.func @f32_d20_dv36(%q: tensor<1x2x29x20xf32>, %k: tensor<1x2x35x20xf32>, %v: tensor<1x2x35x36xf32>) -> tensor<1x2x29x36xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.22360679774997896 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x2x29x20xf32>, tensor<1x2x35x20xf32>, tensor<1x2x35x36xf32>) -> (tensor<1x2x29x36xf32>, tensor<1x2x29xf32>)
  return %out : tensor<1x2x29x36xf32>
}

func.func @f32_d5_gqa_causal(%q: tensor<1x4x19x5xf32>, %k: tensor<1x2x19x5xf32>, %v: tensor<1x2x19x5xf32>) -> tensor<1x4x19x5xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.4472135954999579 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x4x19x5xf32>, tensor<1x2x19x5xf32>, tensor<1x2x19x5xf32>) -> (tensor<1x4x19x5xf32>, tensor<1x4x19xf32>)
  return %out : tensor<1x4x19x5xf32>
}
