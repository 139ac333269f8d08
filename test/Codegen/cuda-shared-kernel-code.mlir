// Kernels whose code is the same but for names are printed once: a gated
// FFN's weight gradients dW2 = hᵀ·dy, dW_gate = xᵀ·dgate and dW_up = xᵀ·dup
// (and their f32 -> f16 conversions) are one GEMM kernel with different
// tensors, the input gradient dx and dh = dy·W2ᵀ another. Compared as printed anonymously (positional parameters, no value
// names, no comments); the later kernels launch the first one's entry, and the
// bundle holds one translation unit and one cubin for the three.
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: rm -rf %t.bundle && flashc %s --emit=bundle --arch=sm_90a -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc
// RUN: ls %t.bundle | FileCheck %s --check-prefix=FILES

// CUDA-LABEL: // ---- ffn_ffn_bwd_dh ----
// CUDA: flashc_ffn_ffn_bwd_dh(
// CUDA-LABEL: // ---- ffn_ffn_bwd_dw2 ----
// CUDA: flashc_ffn_ffn_bwd_dw2(const flashc::TensorArg h, const flashc::TensorArg dy, const flashc::TensorArg dw2_accum, const __grid_constant__ flashc::TmaDescriptor h_map, const __grid_constant__ flashc::TmaDescriptor dy_map)
// CUDA-LABEL: // ---- ffn_ffn_bwd_dw1 ----
// CUDA-NEXT: // launches flashc_ffn_ffn_bwd_dw2 (its code is that kernel's but for names)
// CUDA-NOT: flashc_ffn_ffn_bwd_dw1(
// The input gradient dx = dgate·W_gateᵀ is the backward's dh = dy·W2ᵀ but for names.
// CUDA-LABEL: // ---- ffn_ffn_bwd_dx ----
// CUDA-NEXT: // launches flashc_ffn_ffn_bwd_dh (its code is that kernel's but for names)
// CUDA-LABEL: // ---- ffn_ffn_bwd_dw_up ----
// CUDA-NEXT: // launches flashc_ffn_ffn_bwd_dw2 (its code is that kernel's but for names)
// The two input-gradient GEMMs differ (dx_up adds into dx): both printed.
// CUDA-LABEL: // ---- ffn_ffn_bwd_dx_up ----
// CUDA: flashc_ffn_ffn_bwd_dx_up(

// MANIFEST: cubin sm_90a ffn_ffn_bwd_dw2.sm_90a.cubin for ffn_ffn_bwd_dw2 ffn_ffn_bwd_dw1 ffn_ffn_bwd_dw_up
// MANIFEST: cubin sm_90a ffn_ffn_bwd_dw2_convert.sm_90a.cubin for ffn_ffn_bwd_dw2_convert ffn_ffn_bwd_dw1_convert ffn_ffn_bwd_dw_up_convert
// MANIFEST-LABEL: kernel ffn_ffn_bwd_dw1
// MANIFEST-NEXT: entry flashc_ffn_ffn_bwd_dw2
// MANIFEST-NEXT: role gemm_split_k
// MANIFEST-NEXT: tensor x f16 in
// MANIFEST-LABEL: kernel ffn_ffn_bwd_dw_up
// MANIFEST-NEXT: entry flashc_ffn_ffn_bwd_dw2
// FILES-NOT: ffn_ffn_bwd_dw1.sm_90a.cubin
// FILES-NOT: ffn_ffn_bwd_dw_up.sm_90a.cubin
func.func @ffn(%x: tensor<?x64xf16>, %w_gate: tensor<64x256xf16>, %w_up: tensor<64x256xf16>, %w2: tensor<256x64xf16>) -> tensor<?x64xf16> {
  %y = flash.ffn silu %x, %w_gate up %w_up, %w2 : (tensor<?x64xf16>, tensor<64x256xf16>, tensor<64x256xf16>, tensor<256x64xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}
