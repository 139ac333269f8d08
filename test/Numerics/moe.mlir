// flash.moe through flash-tile and the CPU executor (#tile.moe: router, select, plan, permute, the grouped expert
// GEMMs, combine) against the float64 graph evaluator. The experts are chosen on the router logits as the 16-bit
// layer holds them (the reference rounds them too: reference/moe.h), so both sides pick the same experts and only
// the experts' arithmetic differs. Token counts 1 (fewer than the experts), 5, 300 and the default; experts that get
// no token, ragged expert row counts, rows past the blocks in use.
// RUN: flash-run-tile %s --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %s --tolerance=2e-2 --dynamic-size=1 | FileCheck %s
// RUN: flash-run-tile %s --tolerance=2e-2 --dynamic-size=5 --seed=3 | FileCheck %s
// RUN: flash-run-tile %s --tolerance=2e-2 --dynamic-size=300 --seed=11 | FileCheck %s
// The backward (flash-generate-backward: the training forward saves the routing and the activations) against float64
// gradients with the choice held fixed (reference/moe.h moeBackward), 1 to 300 tokens:
// RUN: flash-run-tile %s --backward --tolerance=2e-2 --dynamic-size=1 | FileCheck %s --check-prefix=BWD
// RUN: flash-run-tile %s --backward --tolerance=2e-2 --dynamic-size=5 --seed=3 | FileCheck %s --check-prefix=BWD
// RUN: flash-run-tile %s --backward --tolerance=2e-2 --dynamic-size=300 --seed=11 | FileCheck %s --check-prefix=BWD
// Sigmoid routing where every f32 score is 1 (Inputs/moe-sigmoid-saturated.mlir):
// RUN: flash-run-tile %S/Inputs/moe-sigmoid-saturated.mlir --backward --tolerance=2e-2 --dynamic-size=8 --input-range=4 | FileCheck %s --check-prefix=SATURATED
// SATURATED-NOT: FAIL
// SATURATED: @f forward result 0: {{.*}} ok
// SATURATED: @f backward d_router: {{.*}} ok
// BWD-DAG: @mixtral training forward result 0: {{.*}} ok
// BWD-DAG: @mixtral backward d_x: {{.*}} ok
// BWD-DAG: @mixtral backward d_router: {{.*}} ok
// BWD-DAG: @mixtral backward d_w1: {{.*}} ok
// BWD-DAG: @mixtral backward d_w_up: {{.*}} ok
// BWD-DAG: @mixtral backward d_w2: {{.*}} ok
// BWD-DAG: @fine_grained backward d_x: {{.*}} ok
// BWD-DAG: @fine_grained backward d_router: {{.*}} ok
// BWD-DAG: @fine_grained backward d_w1: {{.*}} ok
// BWD-DAG: @fine_grained backward d_w2: {{.*}} ok
// BWD-DAG: @sigmoid_renormalized backward d_router: {{.*}} ok
// BWD-DAG: @sigmoid_renormalized backward d_w_up: {{.*}} ok
// BWD-DAG: @moe_then_ffn backward d_w_up: {{.*}} ok
// BWD-DAG: @moe_then_ffn backward d_w_up2: {{.*}} ok
// BWD-DAG: @widest backward d_router: {{.*}} ok
// BWD-DAG: @widest backward d_w_up: {{.*}} ok
// BWD-NOT: FAIL
// CHECK-DAG: @mixtral forward result 0: max relative error {{.*}} ok
// CHECK-DAG: @fine_grained forward result 0: max relative error {{.*}} ok
// CHECK-DAG: @sigmoid_renormalized forward result 0: max relative error {{.*}} ok
// CHECK-NOT: FAIL

// Gated SiLU experts, softmax over 8, the top 2 renormalised (Mixtral's routing).
func.func @mixtral(%x: tensor<?x64xbf16>, %r: tensor<64x8xbf16>, %w1: tensor<8x64x96xbf16>,
                   %wu: tensor<8x64x96xbf16>, %w2: tensor<8x96x40xbf16>) -> tensor<?x40xbf16> {
  %y = flash.moe silu %x, %r, %w1 up %wu, %w2 top_k = 2 gating = softmax renormalize
      : (tensor<?x64xbf16>, tensor<64x8xbf16>, tensor<8x64x96xbf16>, tensor<8x64x96xbf16>, tensor<8x96x40xbf16>)
      -> tensor<?x40xbf16>
  return %y : tensor<?x40xbf16>
}

// Plain GeLU experts, softmax over 32, the top 6 not renormalised; f16; d_out != d.
func.func @fine_grained(%x: tensor<?x48xf16>, %r: tensor<48x32xf16>, %w1: tensor<32x48x24xf16>,
                        %w2: tensor<32x24x56xf16>) -> tensor<?x56xf16> {
  %y = flash.moe gelu_tanh %x, %r, %w1, %w2 top_k = 6 gating = softmax
      : (tensor<?x48xf16>, tensor<48x32xf16>, tensor<32x48x24xf16>, tensor<32x24x56xf16>) -> tensor<?x56xf16>
  return %y : tensor<?x56xf16>
}

// Sigmoid scores renormalised over the chosen 4 of 16 (DeepSeek-V3's routing), gated ReLU experts.
func.func @sigmoid_renormalized(%x: tensor<?x32xbf16>, %r: tensor<32x16xbf16>, %w1: tensor<16x32x136xbf16>,
                                %wu: tensor<16x32x136xbf16>, %w2: tensor<16x136x32xbf16>) -> tensor<?x32xbf16> {
  %y = flash.moe relu %x, %r, %w1 up %wu, %w2 top_k = 4 gating = sigmoid renormalize
      : (tensor<?x32xbf16>, tensor<32x16xbf16>, tensor<16x32x136xbf16>, tensor<16x32x136xbf16>, tensor<16x136x32xbf16>)
      -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// A mixture of experts beside a gated FFN in one function: one numbering names their tensors apart (x, w1, ... and
// x2, w12, ...; the FFN's saved gate2, up2, h2 beside the experts' expert_gate, expert_up), alike in the training
// forward and the backward, which binds them by name.
func.func @moe_then_ffn(%x: tensor<?x64xbf16>, %r: tensor<64x8xbf16>, %w1: tensor<8x64x96xbf16>,
                        %wu: tensor<8x64x96xbf16>, %w2: tensor<8x96x40xbf16>, %z: tensor<?x32xbf16>,
                        %fg: tensor<32x48xbf16>, %fu: tensor<32x48xbf16>, %fd: tensor<48x32xbf16>)
    -> (tensor<?x40xbf16>, tensor<?x32xbf16>) {
  %y = flash.moe silu %x, %r, %w1 up %wu, %w2 top_k = 2 gating = softmax renormalize
      : (tensor<?x64xbf16>, tensor<64x8xbf16>, tensor<8x64x96xbf16>, tensor<8x64x96xbf16>, tensor<8x96x40xbf16>)
      -> tensor<?x40xbf16>
  %f = flash.ffn silu %z, %fg up %fu, %fd
      : (tensor<?x32xbf16>, tensor<32x48xbf16>, tensor<32x48xbf16>, tensor<48x32xbf16>) -> tensor<?x32xbf16>
  return %y, %f : tensor<?x40xbf16>, tensor<?x32xbf16>
}

// The kernels' limits: 256 experts, the top 32 of each token's (a warp's lanes hold them), sigmoid renormalised
// (DeepSeek-V3's routing at its widest): most experts get one row or none, 256 padded groups.
func.func @widest(%x: tensor<?x16xbf16>, %r: tensor<16x256xbf16>, %w1: tensor<256x16x16xbf16>,
                  %wu: tensor<256x16x16xbf16>, %w2: tensor<256x16x24xbf16>) -> tensor<?x24xbf16> {
  %y = flash.moe silu %x, %r, %w1 up %wu, %w2 top_k = 32 gating = sigmoid renormalize
      : (tensor<?x16xbf16>, tensor<16x256xbf16>, tensor<256x16x16xbf16>, tensor<256x16x16xbf16>, tensor<256x16x24xbf16>)
      -> tensor<?x24xbf16>
  return %y : tensor<?x24xbf16>
}

