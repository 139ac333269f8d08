// Gated FFN (LLaMA style) y = (act(x·Wg) ⊙ (x·Wu))·W2 [+ b2]: forward as the
// back-to-back fused kernel and as gated GEMM + GEMM; backward dx (two
// accumulated GEMMs), dWg, dWu, dW2, db2. Against float64.
// Bound: f32, max |tile - ref| / max |ref| < 1e-5.
//
// RUN: flash-run-tile %s --backward --ffn-plan=fused --block-m=16 --block-n=16 --block-k=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --ffn-plan=two-kernel --block-m=16 --block-n=32 --block-k=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --tolerance=1e-5 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @swiglu forward result 0: {{.*}} ok
// CHECK: @swiglu backward d_x: {{.*}} ok
// CHECK: @swiglu backward d_w1: {{.*}} ok
// CHECK: @swiglu backward d_w_up: {{.*}} ok
// CHECK: @swiglu backward d_w2: {{.*}} ok
// CHECK: @geglu_bias backward d_b2: {{.*}} ok

func.func @swiglu(%x: tensor<37x32xf32>, %wg: tensor<32x80xf32>, %wu: tensor<32x80xf32>, %w2: tensor<80x24xf32>) -> tensor<37x24xf32> {
  %y = flash.ffn silu %x, %wg up %wu, %w2
      : (tensor<37x32xf32>, tensor<32x80xf32>, tensor<32x80xf32>, tensor<80x24xf32>) -> tensor<37x24xf32>
  return %y : tensor<37x24xf32>
}

func.func @geglu_bias(%x: tensor<20x48xf32>, %wg: tensor<48x40xf32>, %wu: tensor<48x40xf32>, %w2: tensor<40x48xf32>, %b2: tensor<48xf32>) -> tensor<20x48xf32> {
  %y = flash.ffn gelu_tanh %x, %wg up %wu, %w2 bias %b2
      : (tensor<20x48xf32>, tensor<48x40xf32>, tensor<48x40xf32>, tensor<40x48xf32>, tensor<48xf32>) -> tensor<20x48xf32>
  return %y : tensor<20x48xf32>
}
