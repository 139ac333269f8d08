// A mask modifier that reads a tensor (a document mask) in the generated CUDA C++. The struct reads through the
// MaskEnv (D::read(env.tensor[0], q): the exact element per (query, key), by interval arithmetic the smallest and
// largest over a block). The block-class kernels are one call of the device library's classify_mask_blocks; the
// warp-specialised forward and backward take the tensor and their table as grid constants and pass both on (the
// walk over a block row's key blocks comes from the table, the element mask reads the ids). sm_80's op-by-op
// kernels mask every block with the tile's batch, head and tensor (mask_env). The manifest: the tensor an i32
// parameter of its own symbol, the tables scratch of expression dims, the forward program naming the tensor the
// modifier reads (meta mask_tensors). Every kernel compiles through NVRTC, with ptxas no spill. (The table walk as
// entries with segments=0 keep it: by default a document compare on sm_90a takes the segment form, whose fallback is
// this walk; test/Codegen/cuda-attention-segments.mlir.)
//
// RUN: flashc %s --emit=cuda --tuning-table=%S/../Passes/Inputs/tuning-no-segments.txt -o - | FileCheck %s --check-prefix=CUDA
// RUN: flashc %s --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefix=SM80
// RUN: rm -rf %t.bundle && flashc %s --emit=bundle --arch=sm_90a,sm_80 --tuning-table=%S/../Passes/Inputs/tuning-no-segments.txt -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/sm_90a/manifest.flashc
// RUN: flashc %s --emit=cubin --arch=sm_90a --tuning-table=%S/../Passes/Inputs/tuning-no-segments.txt --ptxas-report -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CUDA: // ---- documents_attention_bwd_mask_blocks_keys ----
// CUDA: struct [[MOD:mask_mod_[0-9a-f]+]] {
// CUDA-NEXT:   static constexpr int kTensors = 1;
// CUDA-NEXT:   static constexpr bool kUsesBatch = false, kUsesHead = false;
// (32-bit element masks where IndexBounds proves every value fits, reads too: their offsets in an int, the tensor
// `index32` in the manifest; session 33: the document forward -6.5 %, its backward -4 %)
// CUDA-NEXT:   using ElementDomain = flashc::device::ExactIndex32;
// CUDA:     const auto v0 = D::read(env.tensor[0], q);
// CUDA-NEXT:     const auto v1 = D::read(env.tensor[0], k);
// CUDA-NEXT:     const auto v2 = D::eq(v0, v1);
// CUDA: static constexpr bool kTransposed = true;  // rows are keys
// CUDA: flashc_documents_attention_bwd_mask_blocks_keys(const flashc::TensorArg q, const flashc::TensorArg k, const __grid_constant__ flashc::TensorArg mask_t0, const __grid_constant__ flashc::TensorArg mask_blocks_keys)
// CUDA-NEXT: flashc::device::classify_mask_blocks<{{.*}}::Config>(q, k, flashc::device::mask_env(0, 0, mask_t0), mask_blocks_keys);
// CUDA: // ---- documents_attention_bwd ----
// CUDA: flashc::device::attention_bwd_ws<{{.*}}, flashc::device::mask_env(0, 0, mask_t0), &mask_blocks_keys);
// CUDA: // ---- documents_attention_fwd_mask_blocks ----
// CUDA: static constexpr bool kTransposed = false;  // rows are queries
// CUDA: // ---- documents_attention_fwd ----
// CUDA: using MaskMod = [[MOD]];
// CUDA: const __grid_constant__ flashc::TensorArg mask_t0, const __grid_constant__ flashc::TensorArg mask_blocks
// CUDA: flashc::device::attention_fwd_ws<{{.*}}(q_map, k_map, v_map, q, k, out, lse, static_cast<int>(k.shape[2] - q.shape[2]), flashc::device::mask_env(0, 0, mask_t0), &mask_blocks);

// SM80: // ---- documents_attention_bwd ----
// SM80: mask_mod<[[MOD:mask_mod_[0-9a-f]+]], -1, 0>(s, row0, col0, seq_k, key_offset, mask_env(batch, head, mask_t0));
// SM80: // ---- documents_attention_fwd ----
// SM80: mask_mod<[[MOD]], -1, 0>(s, row0, col0, seq_k, key_offset, mask_env(batch, head, mask_t0));

// MANIFEST-LABEL: kernel documents_attention_bwd_mask_blocks_keys
// MANIFEST: role attention_mask_blocks_transposed
// MANIFEST: tensor mask_t0 i32 in [mask_t0_d0] contiguous index32
// MANIFEST-NEXT: tensor mask_blocks_keys i32 out [1, 1, cdiv(Sk, 64), 2 * cdiv(Sq, 64) + 2] contiguous
// MANIFEST-NEXT: grid cdiv(Sk, 64), 1, 1
// MANIFEST-LABEL: kernel documents_attention_bwd
// MANIFEST: tensor mask_blocks_keys i32 in [1, 1, cdiv(Sk, 64), 2 * cdiv(Sq, 64) + 2] contiguous
// MANIFEST-LABEL: program documents_backward
// MANIFEST-NEXT: kernel documents_attention_bwd_mask_blocks_keys
// MANIFEST: scratch mask_blocks_keys
// MANIFEST-LABEL: program documents
// MANIFEST: meta mask_tensors mask_t0

// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS: documents_attention_fwd
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill

func.func @documents(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x16x?x128xbf16>, %v: tensor<?x16x?x128xbf16>,
                     %doc: tensor<?xi32>) -> tensor<?x16x?x128xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.0883883 mask = #flash.mask<causal> num_kv_heads = 16 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %ids: tensor<?xi32>):
    %a = tensor.extract %ids[%i] : tensor<?xi32>
    %b = tensor.extract %ids[%j] : tensor<?xi32>
    %x = arith.index_cast %a : i32 to index
    %y = arith.index_cast %b : i32 to index
    %same = arith.cmpi eq, %x, %y : index
    flash.yield %same : i1
  } : (tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?xi32>)
    -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>)
  return %o : tensor<?x16x?x128xbf16>
}
