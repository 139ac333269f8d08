// A mixture of experts spelled as a graph (flash.matmul router, flash.softmax / flash.sigmoid, flash.top_k,
// flash.normalize, flash.expert_ffn, flash.combine): flash-fuse-moe makes it one flash.moe, flash-tile its kernels,
// and the CPU executor's results match float64: the forward the evaluation of the unfused graph (which selects on the
// router logits as their 16-bit type holds them); with --backward the training forward and every gradient,
// reference/moe.h's of the fused op (the graph ops have no gradient of their own).
// RUN: flash-run-tile %s --tolerance=2e-2 --dynamic-size=300 --seed=5 | FileCheck %s
// RUN: flash-run-tile %s --tolerance=2e-2 --dynamic-size=17 --seed=9 --backward | FileCheck %s --check-prefix=BWD
// The fusion preserves the graph's values in float64 (flash-eval counts the fused MoE layers):
// RUN: flash-eval %s --check-pipeline --dynamic-size=13 | FileCheck %s --check-prefix=EVAL
// EVAL: @mixtral: fused 0 attention, 0 ffn, 1 moe; 1 result(s) match
// EVAL: @sigmoid_plain: fused 0 attention, 0 ffn, 1 moe; 1 result(s) match
// CHECK-DAG: @mixtral forward result 0: {{.*}} ok
// CHECK-DAG: @sigmoid_plain forward result 0: {{.*}} ok
// CHECK-NOT: FAIL
// BWD-DAG: @mixtral backward d_x: {{.*}} ok
// BWD-DAG: @mixtral backward d_router: {{.*}} ok
// BWD-DAG: @mixtral backward d_w_up: {{.*}} ok
// BWD-DAG: @sigmoid_plain backward d_router: {{.*}} ok
// BWD-DAG: @sigmoid_plain backward d_w2: {{.*}} ok
// BWD-NOT: FAIL

func.func @mixtral(%x: tensor<?x64xbf16>, %r: tensor<64x8xbf16>, %wg: tensor<8x64x96xbf16>, %wu: tensor<8x64x96xbf16>,
                   %w2: tensor<8x96x40xbf16>) -> tensor<?x40xbf16> {
  %logits = flash.matmul %x, %r : tensor<?x64xbf16>, tensor<64x8xbf16> -> tensor<?x8xbf16>
  %p = flash.softmax %logits : tensor<?x8xbf16>
  %w, %ids = flash.top_k %p k = 2 : tensor<?x8xbf16> -> tensor<?x2xbf16>, tensor<?x2xi32>
  %wn = flash.normalize %w : tensor<?x2xbf16>
  %rows = flash.expert_ffn silu %x, %ids, %wg up %wu, %w2
      : (tensor<?x64xbf16>, tensor<?x2xi32>, tensor<8x64x96xbf16>, tensor<8x64x96xbf16>, tensor<8x96x40xbf16>)
      -> tensor<?x2x40xbf16>
  %y = flash.combine %rows, %wn : tensor<?x2x40xbf16>, tensor<?x2xbf16> -> tensor<?x40xbf16>
  return %y : tensor<?x40xbf16>
}

func.func @sigmoid_plain(%x: tensor<?x32xf16>, %r: tensor<32x16xf16>, %w1: tensor<16x32x48xf16>,
                         %w2: tensor<16x48x24xf16>) -> tensor<?x24xf16> {
  %logits = flash.matmul %x, %r : tensor<?x32xf16>, tensor<32x16xf16> -> tensor<?x16xf16>
  %s = flash.sigmoid %logits : tensor<?x16xf16>
  %w, %ids = flash.top_k %s k = 4 : tensor<?x16xf16> -> tensor<?x4xf16>, tensor<?x4xi32>
  %rows = flash.expert_ffn gelu_tanh %x, %ids, %w1, %w2
      : (tensor<?x32xf16>, tensor<?x4xi32>, tensor<16x32x48xf16>, tensor<16x48x24xf16>) -> tensor<?x4x24xf16>
  %y = flash.combine %rows, %w : tensor<?x4x24xf16>, tensor<?x4xf16> -> tensor<?x24xf16>
  return %y : tensor<?x24xf16>
}
