// FFN widths that are not multiples of 16 or 32 (200, 328, 1000, 40, 72): the fused kernel's
// output row block and W2 slab are d_out padded to whole 64-byte swizzle rows (16-bit) or
// 16-column fragments (f32), limited to d_out at every load, bias and store; d and h are walked
// in block_k / block_n steps with limits. Forward and backward against float64, the fused plan
// (auto picks it where it fits; forced for d_out = 328) and the two GEMMs.
//
// RUN: flash-run-tile %s --backward --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %s --backward --ffn-plan=fused --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %s --backward --ffn-plan=two-kernel --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %S/Inputs/ffn-padded-f32.mlir --backward --ffn-plan=fused --tolerance=1e-5 | FileCheck %S/Inputs/ffn-padded-f32.mlir
// The fused kernel of d = d_out = 200 (sm_90a: the warp-specialised one, 128 rows) computes on 256
// columns (a wgmma N), stored to 200:
// RUN: flash-run-tile %s --print-tile-ir --tolerance=2e-2 2>&1 | FileCheck %s --check-prefix=TILE
// TILE: tile.kernel @d200_ffn_fused
// TILE-SAME: strategy = #tile.strategy<wgmma_ws_sm90>
// TILE: tile.load {{.*}} limit[%{{.*}}, %c200] {{.*}} : <328x200xbf16> -> <64x256xbf16, shared>
// TILE: tile.store {{.*}} limit[%{{.*}}, %c200] : <128x256xbf16, register>, <37x200xbf16>

// CHECK-NOT: FAIL
// CHECK: @d200 forward result 0: {{.*}} ok
// CHECK: @d200 backward d_x: {{.*}} ok
// CHECK: @d200 backward d_w1: {{.*}} ok
// CHECK: @d200 backward d_w2: {{.*}} ok
// CHECK: @d328_bias forward result 0: {{.*}} ok
// CHECK: @d328_bias backward d_b2: {{.*}} ok
// CHECK: @d1000_out40 forward result 0: {{.*}} ok
// CHECK: @d1000_out40 backward d_w2: {{.*}} ok
// CHECK: @gated_out72 forward result 0: {{.*}} ok
// CHECK: @gated_out72 backward d_w_up: {{.*}} ok

func.func @d200(%x: tensor<37x200xbf16>, %w1: tensor<200x328xbf16>, %w2: tensor<328x200xbf16>) -> tensor<37x200xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1, %w2 : (tensor<37x200xbf16>, tensor<200x328xbf16>, tensor<328x200xbf16>) -> tensor<37x200xbf16>
  return %y : tensor<37x200xbf16>
}

func.func @d328_bias(%x: tensor<2x19x328xf16>, %w1: tensor<328x200xf16>, %b1: tensor<200xf16>, %w2: tensor<200x328xf16>, %b2: tensor<328xf16>) -> tensor<2x19x328xf16> {
  %y = flash.ffn gelu_erf %x, %w1 bias %b1, %w2 bias %b2
      : (tensor<2x19x328xf16>, tensor<328x200xf16>, tensor<200xf16>, tensor<200x328xf16>, tensor<328xf16>) -> tensor<2x19x328xf16>
  return %y : tensor<2x19x328xf16>
}

func.func @d1000_out40(%x: tensor<21x1000xbf16>, %w1: tensor<1000x200xbf16>, %w2: tensor<200x40xbf16>, %b2: tensor<40xbf16>) -> tensor<21x40xbf16> {
  %y = flash.ffn relu %x, %w1, %w2 bias %b2 : (tensor<21x1000xbf16>, tensor<1000x200xbf16>, tensor<200x40xbf16>, tensor<40xbf16>) -> tensor<21x40xbf16>
  return %y : tensor<21x40xbf16>
}

func.func @gated_out72(%x: tensor<33x200xbf16>, %wg: tensor<200x1000xbf16>, %wu: tensor<200x1000xbf16>, %w2: tensor<1000x72xbf16>) -> tensor<33x72xbf16> {
  %y = flash.ffn silu %x, %wg up %wu, %w2 : (tensor<33x200xbf16>, tensor<200x1000xbf16>, tensor<200x1000xbf16>, tensor<1000x72xbf16>) -> tensor<33x72xbf16>
  return %y : tensor<33x72xbf16>
}
