// flash.moe has no tile lowering yet (issue #23): flash-tile refuses it naming the op, flash-generate-backward
// leaves its function alone, and the graph evaluator computes it (the float64 reference, reference/moe.h).
// RUN: not flash-opt %s --flash-tile 2>&1 | FileCheck %s
// RUN: flash-opt %s --flash-generate-backward | FileCheck %s --check-prefix=BACKWARD
// RUN: flash-eval %s --dynamic-size=17 | FileCheck %s --check-prefix=EVAL
// RUN: flash-eval %s --check-pipeline
// CHECK: error: flash-tile: flash.moe has no tile lowering yet (its grouped expert GEMMs are not built); the graph evaluator (flash-eval) computes it
// BACKWARD-NOT: @moe_backward
// EVAL: @moe result #0 [17, 32] sum
func.func @moe(%x: tensor<?x32xf32>, %router: tensor<32x4xf32>, %wg: tensor<4x32x16xf32>, %wu: tensor<4x32x16xf32>,
               %wd: tensor<4x16x32xf32>) -> tensor<?x32xf32> {
  %y = flash.moe silu %x, %router, %wg up %wu, %wd top_k = 2 gating = softmax renormalize
      : (tensor<?x32xf32>, tensor<32x4xf32>, tensor<4x32x16xf32>, tensor<4x32x16xf32>, tensor<4x16x32xf32>)
      -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
