// FFN y = act(x·W1 + b1)·W2 + b2 forward (back-to-back fused kernel and the
// two-GEMM plan) and backward (dx, dW1, db1, dW2, db2) on the CPU tile
// executor against float64 (activation derivatives by central differences).
// Bound: f32, max |tile - ref| / max |ref| < 1e-5. Ragged M, d, h, d_out.
//
// RUN: flash-run-tile %s --backward --ffn-plan=fused --block-m=16 --block-n=16 --block-k=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --ffn-plan=two-kernel --block-m=16 --block-n=32 --block-k=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --tolerance=1e-5 | FileCheck %s
// RUN: not flash-run-tile %s --backward --block-m=16 --block-n=16 --block-k=16 --warps=1 --tolerance=1e-12 | FileCheck %s --check-prefix=TIGHT
// TIGHT: FAIL

// CHECK-NOT: FAIL
// CHECK: @gelu_tanh_m17 forward result 0: {{.*}} ok
// CHECK: @gelu_tanh_m17 backward d_x: {{.*}} ok
// CHECK: @gelu_tanh_m17 backward d_w1: {{.*}} ok
// CHECK: @gelu_tanh_m17 backward d_b1: {{.*}} ok
// CHECK: @gelu_tanh_m17 backward d_w2: {{.*}} ok
// CHECK: @gelu_tanh_m17 backward d_b2: {{.*}} ok
// CHECK: @silu_m130_nobias backward d_w2: {{.*}} ok
// CHECK: @relu_m1 backward d_b2: {{.*}} ok
// CHECK: @gelu_erf_m64 backward d_b1: {{.*}} ok
// Weight gradients with few output tiles split their 9000 rows into slices of
// 4096 (gemm_split_k, atomically into a zeroed f32 workspace, then converted).
// CHECK: @gelu_tanh_m9000 backward d_w1: {{.*}} ok
// CHECK: @gelu_tanh_m9000 backward d_w2: {{.*}} ok

func.func @gelu_tanh_m17(%x: tensor<17x48xf32>, %w1: tensor<48x80xf32>, %b1: tensor<80xf32>, %w2: tensor<80x40xf32>, %b2: tensor<40xf32>) -> tensor<17x40xf32> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 bias %b2
      : (tensor<17x48xf32>, tensor<48x80xf32>, tensor<80xf32>, tensor<80x40xf32>, tensor<40xf32>) -> tensor<17x40xf32>
  return %y : tensor<17x40xf32>
}

func.func @silu_m130_nobias(%x: tensor<130x32xf32>, %w1: tensor<32x64xf32>, %w2: tensor<64x32xf32>) -> tensor<130x32xf32> {
  %y = flash.ffn silu %x, %w1, %w2
      : (tensor<130x32xf32>, tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<130x32xf32>
  return %y : tensor<130x32xf32>
}

func.func @relu_m1(%x: tensor<1x16xf32>, %w1: tensor<16x48xf32>, %w2: tensor<48x24xf32>, %b2: tensor<24xf32>) -> tensor<1x24xf32> {
  %y = flash.ffn relu %x, %w1, %w2 bias %b2
      : (tensor<1x16xf32>, tensor<16x48xf32>, tensor<48x24xf32>, tensor<24xf32>) -> tensor<1x24xf32>
  return %y : tensor<1x24xf32>
}

func.func @gelu_erf_m64(%x: tensor<64x40xf32>, %w1: tensor<40x72xf32>, %b1: tensor<72xf32>, %w2: tensor<72x56xf32>) -> tensor<64x56xf32> {
  %y = flash.ffn gelu_erf %x, %w1 bias %b1, %w2
      : (tensor<64x40xf32>, tensor<40x72xf32>, tensor<72xf32>, tensor<72x56xf32>) -> tensor<64x56xf32>
  return %y : tensor<64x56xf32>
}

func.func @gelu_tanh_m9000(%x: tensor<9000x24xf32>, %w1: tensor<24x40xf32>, %b1: tensor<40xf32>, %w2: tensor<40x16xf32>) -> tensor<9000x16xf32> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2
      : (tensor<9000x24xf32>, tensor<24x40xf32>, tensor<40xf32>, tensor<40x16xf32>) -> tensor<9000x16xf32>
  return %y : tensor<9000x16xf32>
}
