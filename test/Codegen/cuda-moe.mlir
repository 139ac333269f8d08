// flash.moe in the generated CUDA C++ and the manifest (docs/design/moe.md): the router and the expert GEMMs are the
// warp-specialised persistent GEMM (the experts' grouped form, each expert's weight [E, K, N] by a 3-D tensor map),
// the routing kernels one call each of moe_routing.cuh; the workspaces are program scratch (counts zero-filled),
// sized from T; `meta op moe` and the routing's parameters tell flashc-run how to rebuild the float64 reference.
// The training forward saves the routing and the activations (program tensors sized by expressions of T); the
// backward's expert GEMMs are the grouped form with the weight transposed (dh, dx_perm) and grouped over K (the
// weight gradients), its routing kernels moe_routing.cuh's backward, the router's GEMMs the plain ones.
// Every kernel compiles through NVRTC, and ptxas spills nothing.
//
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=BWD
// RUN: rm -rf %t.bundle && flashc %s --emit=bundle -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc
// RUN: flashc %s --emit=cubin --arch=sm_90a --ptxas-report -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CUDA: // ---- moe_moe_router ----
// CUDA: static constexpr bool kGated = false;
// CUDA: static constexpr int kBlockN = 128, kStages = 4, kGroup = 8;
// CUDA: flashc::device::gemm_ws<{{.*}}::Config>(x_map, router_map, router_map, logits_map, logits_map, logits_map, x, router, x, 1.0f);
// CUDA: // ---- moe_moe_select ----
// CUDA: flashc::device::moe_select<flashc::device::MoeGating::Softmax, true>(static_cast<const flashc::device::bf16*>(logits.data), logits.stride[0], static_cast<int>(logits.shape[0]), 8, 2,
// CUDA: // ---- moe_moe_plan ----
// CUDA: __launch_bounds__(1024)
// CUDA: flashc::device::moe_plan(static_cast<const int*>(counts.data), 8, static_cast<int*>(offsets.data), static_cast<int*>(groups.data));
// CUDA: // ---- moe_moe_permute ----
// CUDA: flashc::device::moe_permute(
// CUDA: // ---- moe_moe_up ----
// CUDA: static constexpr Act kAct = Act::Silu;
// CUDA: static constexpr bool kGated = true, kGrouped = true;
// CUDA: flashc::device::gemm_ws_grouped<{{.*}}::Config>(permuted_map, w1_map, w_up_map, hidden_map, hidden_map, hidden_map, permuted, w1, groups, 1.0f);
// CUDA: // ---- moe_moe_down ----
// CUDA: static constexpr bool kGated = false, kGrouped = true;
// CUDA: static constexpr int kBlockN = 256
// CUDA: flashc::device::gemm_ws_grouped<{{.*}}::Config>(hidden_map, w2_map, w2_map, expert_out_map, expert_out_map, expert_out_map, hidden, w2, groups, 1.0f);
// CUDA: // ---- moe_moe_combine ----
// CUDA: flashc::device::moe_combine(static_cast<const flashc::device::bf16*>(expert_out.data), static_cast<int>(y.shape[0]), static_cast<int>(y.shape[1]), 2,

// MANIFEST: kernel moe_moe_bwd_scatter
// MANIFEST: tensor expert_out bf16 in [128 * cdiv(T * 2 + 889, 128), 40]
// MANIFEST: tensor d_expert_out bf16 out [128 * cdiv(T * 2 + 889, 128), 40]
// MANIFEST: tensor d_route_weights f32 out [T * 2] contiguous
// MANIFEST: kernel moe_moe_bwd_dx_perm_up
// MANIFEST: tensor dx_perm bf16 inout
// MANIFEST: kernel moe_moe_bwd_dw2
// MANIFEST: tensormap dw2_map of dw2 box [1, 64, 64] swizzle 128
// MANIFEST: kernel moe_moe_router
// MANIFEST: tensormap x_map of x box [128, 64] swizzle 128
// MANIFEST: grid min(cdiv(T, 128) * 1 * 1, num_sms), 1, 1
// MANIFEST: block 384, 1, 1
// MANIFEST: kernel moe_moe_select
// MANIFEST: tensor counts i32 inout [8] contiguous
// MANIFEST: tensor ids i32 out [T * 2] contiguous
// MANIFEST: tensor route_weights f32 out [T * 2] contiguous
// MANIFEST: grid cdiv(T, 8), 1, 1
// MANIFEST: kernel moe_moe_plan
// MANIFEST: tensor groups i32 out [cdiv(T * 2 + 889, 128) + 1] contiguous
// MANIFEST: kernel moe_moe_permute
// MANIFEST: tensor permuted bf16 out [cdiv(T * 2 + 889, 128) * 128, 64] align=16 contiguous stride_multiple=8
// MANIFEST: kernel moe_moe_up
// MANIFEST: tensor logits bf16 in [T, 8]
// MANIFEST: tensor hidden bf16 out [cdiv(T * 2 + 889, 128) * 128, 96]
// MANIFEST: tensormap w1_map of w1 box [1, 64, 64] swizzle 128
// MANIFEST: tensormap w_up_map of w_up box [1, 64, 64] swizzle 128
// MANIFEST: grid min(cdiv(cdiv(T * 2 + 889, 128) * 128, 128) * 1 * 1, num_sms), 1, 1
// MANIFEST: kernel moe_moe_down
// MANIFEST: tensormap w2_map of w2 box [1, 64, 64] swizzle 128
// MANIFEST: kernel moe_forward_train_moe_plan
// MANIFEST: tensor expert_counts i32 out [8] contiguous
// MANIFEST: kernel moe_forward_train_moe_up
// MANIFEST: tensor expert_gate bf16 out [128 * cdiv(T * 2 + 889, 128), 96]
// MANIFEST: tensor expert_up bf16 out [128 * cdiv(T * 2 + 889, 128), 96]
// MANIFEST: program moe_backward
// MANIFEST-NEXT: kernel moe_moe_bwd_scatter
// MANIFEST: scratch d_router_accum zero
// MANIFEST: meta op moe_backward
// MANIFEST: program moe{{$}}
// MANIFEST-NEXT: kernel moe_moe_router
// MANIFEST: scratch counts zero
// MANIFEST: meta activation silu
// MANIFEST-NEXT: meta backward moe_backward
// MANIFEST-NEXT: meta forward_train moe_forward_train
// MANIFEST-NEXT: meta gating softmax
// MANIFEST-NEXT: meta op moe
// MANIFEST-NEXT: meta renormalize 1
// MANIFEST-NEXT: meta top_k 2
// MANIFEST: program moe_forward_train
// MANIFEST: meta train_of moe

// BWD: // ---- moe_moe_bwd_scatter ----
// BWD: flashc::device::moe_scatter_grad(
// BWD: // ---- moe_moe_bwd_dh ----
// BWD: kTransB = true
// BWD: static constexpr int kBlockN = 256, kStages = 4
// BWD: flashc::device::gemm_ws_grouped<{{.*}}>(d_expert_out_map, w2_map, w2_map, dh_map, dh_map, dh_map, d_expert_out, w2, groups, 1.0f);
// BWD: // ---- moe_moe_bwd_act ----
// BWD: flashc::device::moe_activation_grad<flashc::device::Act::Silu, true>(
// (dx_perm's first GEMM is dh's code but for names)
// BWD: // ---- moe_moe_bwd_dx_perm ----
// BWD-NEXT: // launches flashc_moe_moe_bwd_dh
// BWD: // ---- moe_moe_bwd_dx_perm_up ----
// BWD: kAccumulate = true
// BWD: static constexpr int kBlockN = 256, kStages = 3
// BWD: // ---- moe_moe_bwd_dw2 ----
// BWD: static constexpr bool kTransA = true
// BWD: kGroupedK = true
// BWD: flashc::device::gemm_ws_grouped_k<{{.*}}>(hidden_map, d_expert_out_map, dw2_map, hidden, d_expert_out, offsets, 1.0f);
// BWD: // ---- moe_moe_bwd_select ----
// BWD: flashc::device::moe_select_grad<flashc::device::MoeGating::Softmax, true>(
// BWD: // ---- moe_moe_bwd_gather ----
// BWD: flashc::device::moe_combine({{.*}}, nullptr,
// BWD: // ---- moe_moe_bwd_dx_router ----
// BWD: flashc::device::gemm_ws<
// BWD: // ---- moe_moe_bwd_d_router ----
// BWD: // ---- moe_forward_train_moe_plan ----
// BWD: flashc::device::moe_plan({{.*}}, static_cast<int*>(expert_counts.data));
// BWD: // ---- moe_forward_train_moe_up ----
// BWD: kSavePre = true
// BWD: flashc::device::gemm_ws_grouped<{{.*}}>(permuted_map, w1_map, w_up_map, hidden_map, expert_gate_map, expert_up_map, permuted, w1, groups, 1.0f);

// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS: flashc_moe_moe_up
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill

func.func @moe(%x: tensor<?x64xbf16>, %r: tensor<64x8xbf16>, %w1: tensor<8x64x96xbf16>, %wu: tensor<8x64x96xbf16>,
               %w2: tensor<8x96x40xbf16>) -> tensor<?x40xbf16> {
  %y = flash.moe silu %x, %r, %w1 up %wu, %w2 top_k = 2 gating = softmax renormalize
      : (tensor<?x64xbf16>, tensor<64x8xbf16>, tensor<8x64x96xbf16>, tensor<8x64x96xbf16>, tensor<8x96x40xbf16>)
      -> tensor<?x40xbf16>
  return %y : tensor<?x40xbf16>
}
