// The segment form of a document modifier's forward (`t[q] == t[k]`; the hand rule, a tuning point that segments=0
// turns off): a kernel of one block of 1024 threads writes the plan from the ids (segments.cuh's attention_segment_plan), and the warp-specialised
// forward takes its tiles from it (attention_fwd_ws_segments: a document's tile where the ids are sorted, the
// table's walk where not) on a grid of the row blocks and a quarter more. The backward's main kernel likewise unless
// its own entry says segments=0 (attention_bwd_ws_segments: key tiles aligned to each document's start, its own plan in the
// backward program; the plan kernel's code shared with the forward's).
//
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: rm -rf %t.bundle && flashc %s --emit=bundle -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc
// With entries that turn it off (segments=0): no plan, the table walk.
// RUN: printf 'sm_90a attention_forward bf16 d128 causal+mod -> segments=0\nsm_90a attention_backward bf16 d128 causal+mod -> segments=0\nsm_90a attention_forward bf16 d128 causal+mod+score -> segments=0\nsm_90a attention_backward bf16 d128 causal+mod+score -> segments=0\n' > %t.table.txt
// RUN: flashc %s --emit=cuda --tuning-table=%t.table.txt -o - | FileCheck %s --check-prefix=OFF

// CUDA-LABEL: // ---- documents_attention_bwd_segments ----
// CUDA: extern "C" __global__ void __launch_bounds__(1024)
// CUDA-NEXT: flashc_documents_attention_bwd_segments(const flashc::TensorArg q, const flashc::TensorArg k, const flashc::TensorArg mask_t0, const flashc::TensorArg segment_plan_keys) {
// CUDA-NEXT: static_assert(1024 == flashc::device::kSegmentPlanThreads
// CUDA-NEXT: flashc::device::attention_segment_plan(mask_t0, static_cast<int>(q.shape[2]), static_cast<int>(k.shape[2]), segment_plan_keys);
// The block classes after the plan: nothing to do where its segment form serves every block size.
// CUDA-LABEL: // ---- documents_attention_bwd_mask_blocks_keys ----
// CUDA: classify_mask_blocks<{{.*}}>(q, k, flashc::device::mask_env(0, 0, mask_t0), mask_blocks_keys, &segment_plan_keys);
// CUDA-LABEL: // ---- documents_attention_bwd ----
// CUDA: static constexpr bool kSegments = true;
// CUDA: flashc::device::attention_bwd_ws_segments<flashc_documents_attention_bwd_config::Config>(q_map, k_map, v_map, dout_map, q, k, lse, delta, dq_accum, dk, dv, static_cast<int>(k.shape[2] - q.shape[2]), &dq_accum_map, flashc::device::mask_env(0, 0, mask_t0), &mask_blocks_keys, segment_plan_keys);
// CUDA-LABEL: // ---- documents_attention_fwd_segments ----
// CUDA-LABEL: // ---- documents_attention_fwd_mask_blocks ----
// CUDA: classify_mask_blocks<{{.*}}>(q, k, flashc::device::mask_env(0, 0, mask_t0), mask_blocks, &segment_plan);
// CUDA-LABEL: // ---- documents_attention_fwd ----
// CUDA: static constexpr bool kSegments = true;
// CUDA: flashc_documents_attention_fwd({{.*}}const __grid_constant__ flashc::TensorArg mask_t0, const __grid_constant__ flashc::TensorArg mask_blocks, const __grid_constant__ flashc::TensorArg segment_plan,
// CUDA-NEXT: flashc::device::attention_fwd_ws_segments<flashc_documents_attention_fwd_config::Config>(q_map, k_map, v_map, q, k, out, lse, static_cast<int>(k.shape[2] - q.shape[2]), flashc::device::mask_env(0, 0, mask_t0), &mask_blocks, segment_plan);

// The block-class kernels take the plan but keep their grid, a block a table row (session 44: the quarter more
// wrote rows past the table where the plan fell back).
// MANIFEST-LABEL: kernel documents_attention_bwd_segments
// MANIFEST: role attention_segment_plan
// MANIFEST-LABEL: kernel documents_attention_bwd_mask_blocks_keys
// MANIFEST: tensor segment_plan_keys i32 in
// MANIFEST-NEXT: grid cdiv(Sk, 64), 1, 1
// MANIFEST-LABEL: kernel documents_attention_bwd{{$}}
// MANIFEST: tensor segment_plan_keys i32 in
// MANIFEST: grid cdiv(Sk, 128) + cdiv(cdiv(Sk, 128), 4), 4, B
// MANIFEST-LABEL: kernel documents_attention_fwd_segments
// MANIFEST: role attention_segment_plan
// MANIFEST: tensor mask_t0 i32 in
// MANIFEST: tensor segment_plan i32 out [cdiv(Sq, 64) + cdiv(cdiv(Sq, 64), 4) + (cdiv(Sq, 128) + cdiv(cdiv(Sq, 128), 4)) + (cdiv(Sq, 192) + cdiv(cdiv(Sq, 192), 4)) + 1, 4]
// MANIFEST: grid 1, 1, 1
// MANIFEST-LABEL: kernel documents_attention_fwd_mask_blocks
// MANIFEST: tensor segment_plan i32 in
// MANIFEST-NEXT: grid cdiv(Sq, 64), 1, 1
// MANIFEST-LABEL: kernel documents_attention_fwd{{$}}
// MANIFEST: tensor segment_plan i32 in
// MANIFEST: grid cdiv(Sq, 128) + cdiv(cdiv(Sq, 128), 4), 4, B
// MANIFEST: scratch segment_plan

// With a score modifier (ALiBi): its tensors after the plan, forward and backward.
// CUDA-LABEL: // ---- documents_alibi_attention_bwd ----
// CUDA: flashc::device::attention_bwd_ws_segments<{{.*}}, &mask_blocks_keys, segment_plan_keys, flashc::device::mask_env(0, 0, score_t0));
// CUDA-LABEL: // ---- documents_alibi_attention_fwd ----
// CUDA: flashc::device::attention_fwd_ws_segments<{{.*}}, flashc::device::mask_env(0, 0, mask_t0), &mask_blocks, segment_plan, flashc::device::mask_env(0, 0, score_t0));

// OFF-NOT: segment_plan
// OFF: classify_mask_blocks<{{.*}}>(q, k, flashc::device::mask_env(0, 0, mask_t0), mask_blocks);
// OFF: flashc::device::attention_fwd_ws<flashc_documents_attention_fwd_config::Config>(
// OFF-NOT: segment_plan

func.func @documents(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x4x?x128xbf16>, %v: tensor<?x4x?x128xbf16>,
                     %doc: tensor<?xi32>) -> tensor<?x4x?x128xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.08838834764831845 mask = #flash.mask<causal> num_kv_heads = 4
      mask_mod(%doc) {
  ^bb0(%q_idx: index, %kv_idx: index, %ids: tensor<?xi32>):
    %dq = tensor.extract %ids[%q_idx] : tensor<?xi32>
    %dk = tensor.extract %ids[%kv_idx] : tensor<?xi32>
    %a = arith.index_cast %dq : i32 to index
    %b = arith.index_cast %dk : i32 to index
    %same = arith.cmpi eq, %a, %b : index
    flash.yield %same : i1
  } : (tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16>, tensor<?xi32>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x128xbf16>
}

func.func @documents_alibi(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x4x?x128xbf16>, %v: tensor<?x4x?x128xbf16>,
                           %doc: tensor<?xi32>, %slopes: tensor<4xf32>) -> tensor<?x4x?x128xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.08838834764831845 mask = #flash.mask<causal> num_kv_heads = 4
      mask_mod(%doc) {
  ^bb0(%q_idx: index, %kv_idx: index, %ids: tensor<?xi32>):
    %dq = tensor.extract %ids[%q_idx] : tensor<?xi32>
    %dk = tensor.extract %ids[%kv_idx] : tensor<?xi32>
    %a = arith.index_cast %dq : i32 to index
    %b = arith.index_cast %dk : i32 to index
    %same = arith.cmpi eq, %a, %b : index
    flash.yield %same : i1
  } score_mod(%slopes) {
  ^bb0(%s: f32, %bb: index, %h: index, %qi: index, %ki: index, %m: tensor<4xf32>):
    %slope = tensor.extract %m[%h] : tensor<4xf32>
    %d = arith.subi %ki, %qi : index
    %d64 = arith.index_cast %d : index to i64
    %distance = arith.sitofp %d64 : i64 to f32
    %bias = arith.mulf %slope, %distance : f32
    %biased = arith.addf %s, %bias : f32
    flash.yield %biased : f32
  } : (tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16>, tensor<?xi32>, tensor<4xf32>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x128xbf16>
}
