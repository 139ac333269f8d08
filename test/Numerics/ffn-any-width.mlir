// FFN widths that are not multiples of 8 (#22: any width a model uses): d = 100, 333, h = 1001,
// d_out = 77, plain with biases and gated, bf16 and f16, the fused plan and the two GEMMs (the
// backward's weight gradients split-K over the rows, f32 accumulators of 1001 / 77 columns).
// Every load, bias and store carries the true width as its limit; on the GPU the copies are
// element-exact at a limit inside a 16-byte chunk (copy.cuh), here the executor is. Forward and
// backward against float64; f32 (Inputs/ffn-any-width-f32.mlir) at 1e-5: the zero-filled
// contraction padding adds exactly nothing.
//
// RUN: flash-run-tile %s --backward --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %s --backward --ffn-plan=two-kernel --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %s --backward --target=sm_80 --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %S/Inputs/ffn-any-width-f32.mlir --backward --tolerance=1e-5 | FileCheck %S/Inputs/ffn-any-width-f32.mlir
// RUN: flash-run-tile %S/Inputs/ffn-any-width-f32.mlir --backward --ffn-plan=two-kernel --tolerance=1e-5 | FileCheck %S/Inputs/ffn-any-width-f32.mlir
// The fused kernel of d_out = 77 computes on a padded tile, limited to 77 at the W2 load and the store:
// RUN: flash-run-tile %s --print-tile-ir --tolerance=2e-2 2>&1 | FileCheck %s --check-prefix=TILE
// TILE: tile.kernel @d100_h1001_out77_ffn_fused
// TILE: tile.load {{.*}} limit[%{{.*}}, %c77] {{.*}} : <1001x77xbf16> -> <64x96xbf16, shared>
// TILE: tile.store {{.*}} limit[%{{.*}}, %c77] : <64x96xbf16, register>, <29x77xbf16>

// CHECK-NOT: FAIL
// CHECK: @d100_h1001_out77 forward result 0: {{.*}} ok
// CHECK: @d100_h1001_out77 backward d_x: {{.*}} ok
// CHECK: @d100_h1001_out77 backward d_w1: {{.*}} ok
// CHECK: @d100_h1001_out77 backward d_b1: {{.*}} ok
// CHECK: @d100_h1001_out77 backward d_w2: {{.*}} ok
// CHECK: @d100_h1001_out77 backward d_b2: {{.*}} ok
// CHECK: @d333_gated forward result 0: {{.*}} ok
// CHECK: @d333_gated backward d_x: {{.*}} ok
// CHECK: @d333_gated backward d_w1: {{.*}} ok
// CHECK: @d333_gated backward d_w_up: {{.*}} ok
// CHECK: @d333_gated backward d_w2: {{.*}} ok
// CHECK: @d100_batched_f16 forward result 0: {{.*}} ok
// CHECK: @d100_batched_f16 backward d_x: {{.*}} ok
// CHECK: @d100_batched_f16 backward d_w1: {{.*}} ok
// CHECK: @d100_batched_f16 backward d_w2: {{.*}} ok
// CHECK: @odd_small forward result 0: {{.*}} ok
// CHECK: @odd_small backward d_w1: {{.*}} ok
// CHECK: @odd_small backward d_w2: {{.*}} ok

func.func @d100_h1001_out77(%x: tensor<29x100xbf16>, %w1: tensor<100x1001xbf16>, %b1: tensor<1001xbf16>, %w2: tensor<1001x77xbf16>, %b2: tensor<77xbf16>) -> tensor<29x77xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 bias %b2
      : (tensor<29x100xbf16>, tensor<100x1001xbf16>, tensor<1001xbf16>, tensor<1001x77xbf16>, tensor<77xbf16>) -> tensor<29x77xbf16>
  return %y : tensor<29x77xbf16>
}

func.func @d333_gated(%x: tensor<19x333xbf16>, %wg: tensor<333x1001xbf16>, %wu: tensor<333x1001xbf16>, %w2: tensor<1001x333xbf16>) -> tensor<19x333xbf16> {
  %y = flash.ffn silu %x, %wg up %wu, %w2 : (tensor<19x333xbf16>, tensor<333x1001xbf16>, tensor<333x1001xbf16>, tensor<1001x333xbf16>) -> tensor<19x333xbf16>
  return %y : tensor<19x333xbf16>
}

func.func @d100_batched_f16(%x: tensor<2x13x100xf16>, %w1: tensor<100x333xf16>, %w2: tensor<333x77xf16>) -> tensor<2x13x77xf16> {
  %y = flash.ffn gelu_erf %x, %w1, %w2 : (tensor<2x13x100xf16>, tensor<100x333xf16>, tensor<333x77xf16>) -> tensor<2x13x77xf16>
  return %y : tensor<2x13x77xf16>
}

// Widths of one to a few elements: a row inside one 16-byte chunk.
func.func @odd_small(%x: tensor<11x3xbf16>, %w1: tensor<3x5xbf16>, %w2: tensor<5x1xbf16>) -> tensor<11x1xbf16> {
  %y = flash.ffn relu %x, %w1, %w2 : (tensor<11x3xbf16>, tensor<3x5xbf16>, tensor<5x1xbf16>) -> tensor<11x1xbf16>
  return %y : tensor<11x1xbf16>
}
