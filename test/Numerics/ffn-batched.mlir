// FFN on a rank-3 input [B, M, d] (forward only: grid axis z walks B) and in
// bf16 (hidden activations rounded to bf16 between the GEMMs, as on the GPU).
// Bounds: f32 < 1e-5; bf16 < 2e-2 (max |tile - ref| / max |ref|).
//
// RUN: flash-run-tile %s --ffn-plan=fused --block-m=16 --block-n=16 --block-k=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --ffn-plan=two-kernel --block-m=16 --block-n=16 --block-k=16 --warps=1 --tolerance=1e-5 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @batched_gelu forward result 0: {{.*}} ok

func.func @batched_gelu(%x: tensor<3x19x32xf32>, %w1: tensor<32x48xf32>, %b1: tensor<48xf32>, %w2: tensor<48x40xf32>, %b2: tensor<40xf32>) -> tensor<3x19x40xf32> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 bias %b2
      : (tensor<3x19x32xf32>, tensor<32x48xf32>, tensor<48xf32>, tensor<48x40xf32>, tensor<40xf32>) -> tensor<3x19x40xf32>
  return %y : tensor<3x19x40xf32>
}
