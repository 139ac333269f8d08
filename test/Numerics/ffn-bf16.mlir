// bf16 FFN forward and backward: bf16 inputs, hidden activations and outputs
// rounded to bf16, f32 accumulation. Bound: max |tile - ref| / max |ref| < 2e-2.
//
// RUN: flash-run-tile %s --backward --block-m=16 --block-n=16 --block-k=16 --warps=1 --tolerance=2e-2 | FileCheck %s
// sm_80 keeps dh = dy·W2ᵀ and the elementwise derivative; sm_90a (above) fuses the derivative into the GEMM (act_grad)
// where the FFN is not gated; the gated one's fused form (dg and du from D = dy·W2ᵀ in registers and the saved g and u,
// in the GEMM's epilogue) through a tuning-table entry (its last RUN).
// RUN: flash-run-tile %s --backward --target=sm_80 --block-m=16 --block-n=16 --block-k=16 --warps=1 --tolerance=2e-2 | FileCheck %s
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gated-act-grad.txt --emit=tile -o - | FileCheck %s --check-prefix=GATED-FUSED
// RUN: flash-run-tile %s --backward --tuning-table=%S/Inputs/tuning-gated-act-grad.txt --tolerance=2e-2 | FileCheck %s
// GATED-FUSED-LABEL: tile.kernel @bf16_swiglu_ffn_bwd_dpre(
// GATED-FUSED-SAME: gated = true, accumulate = false
// GATED-FUSED-SAME: act_grad = true

// CHECK-NOT: FAIL
// CHECK: @bf16_gelu backward d_b1: {{.*}} ok
// CHECK: @bf16_swiglu backward d_x: {{.*}} ok
// CHECK: @bf16_swiglu backward d_w1: {{.*}} ok
// CHECK: @bf16_swiglu backward d_w_up: {{.*}} ok
// CHECK: @bf16_swiglu backward d_w2: {{.*}} ok

func.func @bf16_gelu(%x: tensor<33x32xbf16>, %w1: tensor<32x64xbf16>, %b1: tensor<64xbf16>, %w2: tensor<64x48xbf16>, %b2: tensor<48xbf16>) -> tensor<33x48xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 bias %b2
      : (tensor<33x32xbf16>, tensor<32x64xbf16>, tensor<64xbf16>, tensor<64x48xbf16>, tensor<48xbf16>) -> tensor<33x48xbf16>
  return %y : tensor<33x48xbf16>
}

func.func @bf16_swiglu(%x: tensor<41x32xbf16>, %wg: tensor<32x72xbf16>, %wu: tensor<32x72xbf16>, %w2: tensor<72x40xbf16>) -> tensor<41x40xbf16> {
  %y = flash.ffn silu %x, %wg up %wu, %w2
      : (tensor<41x32xbf16>, tensor<32x72xbf16>, tensor<32x72xbf16>, tensor<72x40xbf16>) -> tensor<41x40xbf16>
  return %y : tensor<41x40xbf16>
}
