// A run-time key offset reaches every kernel that masks as the scalar
// parameter `key_offset` (an `int` after the tensors and tensor maps, a
// `scalar key_offset i32` line in the manifest), in the warp-specialised
// sm_90a forward and backward and the sm_80 kernels; the row-dot and dQ
// conversion kernels do not take it. ptxas: the forward keeps its registers
// and spills nothing.
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: flashc %s --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefix=SM80
// RUN: rm -rf %t.bundle && flashc %s --emit=bundle --arch=sm_90a -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc
// RUN: flashc %s --emit=cubin --arch=sm_90a --ptxas-report -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

func.func @shifted(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>, %key_offset: i32)
    -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v key_offset = %key_offset scale = 0.0883883 mask = #flash.mask<sliding_window, left = 4096, right = 0> num_kv_heads = 2
      : (tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, i32)
      -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>)
  return %o, %lse : tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
}

// CUDA-LABEL: flashc_shifted_attention_bwd_preprocess(
// CUDA-NOT: key_offset
// CUDA-SAME: ) {
// sm_90a's backward at D = 128 is the warp-specialised key split: the library
// clamps the offset (Window::clamp_offset).
// CUDA-LABEL: flashc_shifted_attention_bwd(
// CUDA-SAME: const __grid_constant__ flashc::TmaDescriptor dq_accum_map, const int key_offset) {
// CUDA-NEXT: flashc::device::attention_bwd_ws<flashc_shifted_attention_bwd_config::Config>(q_map, k_map, v_map, dout_map, q, k, lse, delta, dq_accum, dk, dv, key_offset, &dq_accum_map);
// CUDA-LABEL: flashc_shifted_attention_fwd(
// CUDA-SAME: const __grid_constant__ flashc::TmaDescriptor v_map, const int key_offset) {
// CUDA-NEXT: flashc::device::attention_fwd_ws<flashc_shifted_attention_fwd_config::Config>(q_map, k_map, v_map, q, k, out, lse, key_offset);

// SM80-LABEL: flashc_shifted_attention_bwd(
// SM80-SAME: const int key_offset) {
// SM80: const int given_key_offset = key_offset;
// SM80: const int clamped_key_offset = max(key_offset_min, {{.*}});
// SM80-LABEL: flashc_shifted_attention_fwd(
// SM80-SAME: const flashc::TensorArg lse, const int key_offset) {
// SM80: mask<4096, 0>({{.*}}, clamped_key_offset);

// MANIFEST-LABEL: kernel shifted_attention_bwd_preprocess
// MANIFEST-NOT: scalar
// MANIFEST: end
// MANIFEST-LABEL: kernel shifted_attention_bwd
// MANIFEST: tensor dv bf16 out [B, 2, Sk, 128]
// MANIFEST: tensormap k_map of k box [1, 1, 128, 64] swizzle 128
// MANIFEST: tensormap dout_map of dout box [1, 1, 64, 64] swizzle 128
// MANIFEST-NEXT: tensormap dq_accum_map of dq_accum box [1, 1, 64, 32] swizzle 128
// MANIFEST-NEXT: scalar key_offset i32
// MANIFEST: grid cdiv(Sk, 128), 2, B
// MANIFEST-NEXT: block 384, 1, 1
// MANIFEST-LABEL: kernel shifted_attention_fwd
// MANIFEST: tensormap v_map of v
// MANIFEST-NEXT: scalar key_offset i32

// PTXAS: Compiling entry function 'flashc_shifted_attention_fwd'
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS: Used 168 registers
// PTXAS: Compiling entry function 'flashc_shifted_attention_bwd'
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS: Used {{[0-9]+}} registers
