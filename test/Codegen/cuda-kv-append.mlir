// flash.kv_append in the generated CUDA C++ and the manifest: the check and the copy, each one call of the device
// library's kv_append.cuh; the caches inout in the copy (rows of them written), so a program's caller passes them
// and they come back appended; the decode after it reads the append's verdict (no check of its own; meta status
// names status_append, and meta append tells flashc-run to check the caches too). Every kernel compiles through
// NVRTC, and ptxas spills nothing.
//
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: rm -rf %t.bundle && flashc %s --emit=bundle -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc
// RUN: flashc %s --emit=cubin --arch=sm_90a --ptxas-report -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: rm -rf %t.only && flashc %S/Inputs/kv-append-only.mlir --emit=bundle -o %t.only
// RUN: FileCheck %s --check-prefix=ONLY < %t.only/manifest.flashc

// CUDA: // ---- step_kv_append_check ----
// CUDA: static constexpr int kHeadDim = 128, kValueDim = 128, kPageSize = 64;  // a paged cache
// CUDA: flashc_step_kv_append_check(const flashc::TensorArg k_new, const flashc::TensorArg k_cache, const flashc::TensorArg cache_seqlens, const flashc::TensorArg block_table, const flashc::TensorArg status_append)
// CUDA-NEXT: flashc::device::kv_append_check<{{.*}}::Config>(k_new, k_cache, cache_seqlens, block_table, static_cast<int*>(status_append.data));
// CUDA: // ---- step_kv_append ----
// CUDA: __launch_bounds__(128)
// CUDA: flashc_step_kv_append(const flashc::TensorArg k_new, const flashc::TensorArg v_new, const flashc::TensorArg k_cache, const flashc::TensorArg v_cache, const flashc::TensorArg cache_seqlens, const flashc::TensorArg block_table, const flashc::TensorArg status_append)
// CUDA-NEXT: flashc::device::kv_append<{{.*}}::Config>(k_new, v_new, k_cache, v_cache, cache_seqlens, block_table, static_cast<const int*>(status_append.data));
// CUDA-NOT: ---- step_decode_check ----
// CUDA: // ---- step_decode_split ----
// CUDA: flashc::device::attention_decode_split<{{.*}}::Config>(k_cache_map, v_cache_map, q, cache_seqlens, block_table, out, lse, o_part, lse_part, static_cast<const int*>(status_append.data));

// MANIFEST: kernel step_kv_append_check
// MANIFEST: tensor k_cache bf16 in [pages, 64, 8, 128]
// MANIFEST: tensor status_append i32 inout [4] contiguous
// MANIFEST: grid B, 1, 1
// MANIFEST: kernel step_kv_append
// MANIFEST: tensor k_new bf16 in [B, 8, 1, 128] align=16 contiguous stride_multiple=8
// MANIFEST: tensor k_cache bf16 inout [pages, 64, 8, 128] align=16 contiguous stride_multiple=8
// MANIFEST: tensor v_cache bf16 inout [pages, 64, 8, 128] align=16 contiguous stride_multiple=8
// MANIFEST: grid 1, B, 1
// MANIFEST: block 128, 1, 1
// MANIFEST: program step
// MANIFEST-NEXT: kernel step_kv_append_check
// MANIFEST-NEXT: kernel step_kv_append
// MANIFEST-NEXT: kernel step_decode_split
// MANIFEST-NEXT: kernel step_decode_combine
// MANIFEST: scratch status_append zero
// MANIFEST: meta append 1
// MANIFEST: meta op attention_decode
// MANIFEST: meta status status_append

// ONLY: kernel append_kv_append
// ONLY: tensor k_new bf16 in [B, 8, T, 128]
// ONLY: grid cdiv(T, 4), B, 1
// ONLY: program append
// ONLY-NEXT: kernel append_kv_append_check
// ONLY-NEXT: kernel append_kv_append
// ONLY-NEXT: scratch status_append zero
// ONLY: meta op kv_append
// ONLY: meta page_size 0
// ONLY: meta status status_append

// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS: flashc_step_kv_append
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill

func.func @step(%q: tensor<?x32x1x128xbf16>, %k_new: tensor<?x8x1x128xbf16>, %v_new: tensor<?x8x1x128xbf16>,
                %k_pages: tensor<?x64x8x128xbf16>, %v_pages: tensor<?x64x8x128xbf16>, %lengths: tensor<?xi32>,
                %table: tensor<?x?xi32>) -> (tensor<?x32x1x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>) {
  %kc, %vc = flash.kv_append %k_new, %v_new into %k_pages, %v_pages, %lengths page_size = 64 block_table %table
      : (tensor<?x8x1x128xbf16>, tensor<?x8x1x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>,
         tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>)
  %out, %lse = flash.decode_attention %q, %kc, %vc, %lengths block_table %table scale = 0.0883883461
      causal page_size = 64 num_kv_heads = 8
      : (tensor<?x32x1x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?xi32>, tensor<?x?xi32>)
      -> (tensor<?x32x1x128xbf16>, tensor<?x32x1xf32>)
  return %out, %kc, %vc : tensor<?x32x1x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>
}
