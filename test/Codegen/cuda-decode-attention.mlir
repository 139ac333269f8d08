// flash.decode_attention in the generated CUDA C++ and the manifest: three kernels, each one call of the device
// library's attention_decode.cuh (the split kernel's shared memory asserted against the library's plan), the
// split kernel taking the caches' TMA maps (a paged cache: one box a page's rows of one kv head); the program's
// workspaces sized by the device (num_sms), its verdict zeroed and named for the runtime (meta status). Every
// kernel compiles through NVRTC, and ptxas spills nothing.
//
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: rm -rf %t.bundle && flashc %s --emit=bundle -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc
// RUN: flashc %s --emit=cubin --arch=sm_90a --ptxas-report -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// Two decode ops in one function: each its own workspaces, the runtime reads both verdicts, and the program is a
// block flashc-run leaves alone (meta op decode_block, no one op's parameters).
// RUN: rm -rf %t.two && flashc %S/Inputs/decode-two-ops.mlir --emit=bundle -o %t.two
// RUN: FileCheck %s --check-prefix=TWO < %t.two/manifest.flashc
// TWO: program two
// TWO: scratch status zero
// TWO: scratch o_part2
// TWO: scratch status2 zero
// TWO-NOT: meta scale
// TWO: meta op decode_block
// TWO-NOT: meta scale
// TWO: meta status status,status2

// CUDA: // ---- decode_decode_check ----
// CUDA: static constexpr int kPageSize = 64, kStages = 4;  // a paged cache
// CUDA: flashc_decode_decode_check(const flashc::TensorArg k_cache, const flashc::TensorArg cache_seqlens, const flashc::TensorArg block_table, const flashc::TensorArg status)
// CUDA-NEXT: flashc::device::attention_decode_check<{{.*}}::Config>(k_cache, cache_seqlens, block_table, static_cast<int*>(status.data));
// CUDA: // ---- decode_decode_split ----
// CUDA: static constexpr int kHeadDim = 128, kValueDim = 128, kQueries = 1, kGroup = 4;
// CUDA: static constexpr bool kCausal = true;
// CUDA: static_assert(flashc::device::AttentionDecodePlan<{{.*}}::Config>::kSharedBytes == 131648, "the manifest's shared memory");
// CUDA: __launch_bounds__(160)
// CUDA: const __grid_constant__ flashc::TmaDescriptor k_cache_map, const __grid_constant__ flashc::TmaDescriptor v_cache_map)
// CUDA-NEXT: flashc::device::attention_decode_split<{{.*}}::Config>(k_cache_map, v_cache_map, q, cache_seqlens, block_table, out, lse, o_part, lse_part, static_cast<const int*>(status.data));
// CUDA: // ---- decode_decode_combine ----
// CUDA: flashc::device::attention_decode_combine<{{.*}}::Config>(o_part, lse_part, out, lse, static_cast<const int*>(status.data));

// MANIFEST: kernel decode_decode_split
// MANIFEST: tensor k_cache bf16 in [pages, 64, 8, 128] align=16 contiguous stride_multiple=8
// MANIFEST: tensor block_table i32 in [B, W] contiguous
// MANIFEST: tensor out bf16 out [B, 32, 1, 128] align=16 contiguous stride_multiple=8
// MANIFEST: tensor lse f32 out [B, 32, 1] contiguous
// MANIFEST: tensor o_part f32 out [B, max(num_sms / max(B * 8, 1), 1), 32, 128]
// MANIFEST: tensor status i32 inout [4] contiguous
// MANIFEST: tensormap k_cache_map of k_cache box [1, 64, 1, 64] swizzle 128
// MANIFEST: tensormap v_cache_map of v_cache box [1, 64, 1, 64] swizzle 128
// MANIFEST: grid max(num_sms / max(B * 8, 1), 1), 8, B
// MANIFEST: block 160, 1, 1
// MANIFEST: shared 131648
// MANIFEST: kernel decode_decode_combine
// MANIFEST: tensor status i32 in [4] contiguous
// MANIFEST: grid 32, B, 1
// MANIFEST: program decode
// MANIFEST-NEXT: kernel decode_decode_check
// MANIFEST-NEXT: kernel decode_decode_split
// MANIFEST-NEXT: kernel decode_decode_combine
// MANIFEST: scratch status zero
// MANIFEST: meta op attention_decode
// MANIFEST: meta page_size 64
// MANIFEST: meta status status

// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS: flashc_decode_decode_split
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill

func.func @decode(%q: tensor<?x32x1x128xbf16>, %k: tensor<?x64x8x128xbf16>, %v: tensor<?x64x8x128xbf16>,
                  %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> tensor<?x32x1x128xbf16> {
  %out, %lse = flash.decode_attention %q, %k, %v, %lens block_table %table scale = 0.0883883 causal page_size = 64
      num_kv_heads = 8
      : (tensor<?x32x1x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?xi32>, tensor<?x?xi32>)
      -> (tensor<?x32x1x128xbf16>, tensor<?x32x1xf32>)
  return %out : tensor<?x32x1x128xbf16>
}
