// The CUDA the emitter prints for a causal attention (bf16, D = 128): one
// kernel per tile.kernel, one device-library call per tile op. The backward
// is the row form (cuda-attention-transposed.mlir: the Sᵀ form).
// On sm_90a the forward is the cp.async wgmma kernel, which a tuning-table
// entry selects (the default is the warp-specialised one: cuda-attention-ws.mlir).
// RUN: flashc %s --backward-form=rows --tuning-table=%S/Inputs/tuning-wgmma-forward.txt --emit=cuda --arch=sm_90a -o - | FileCheck %s --check-prefixes=CHECK,HOPPER
// RUN: flashc %s --backward-form=rows --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefixes=CHECK,AMPERE
// The deterministic backward (no dQ accumulator) runs the same preprocess without the zero fill:
// RUN: flashc %s --deterministic-backward --emit=cuda --arch=sm_90a -o - | FileCheck %s --check-prefix=DET
// DET-LABEL: flashc_attention_attention_bwd_preprocess(const flashc::TensorArg out, const flashc::TensorArg dout, const flashc::TensorArg delta)
// DET-NEXT: flashc::device::attention_bwd_preprocess<flashc::device::bf16, 128, 128>(out, dout, delta, nullptr);
// DET-NOT: attention_bwd_postprocess

func.func @attention(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x16x?x128xbf16>, %v: tensor<?x16x?x128xbf16>)
    -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.0883883 mask = #flash.mask<causal> num_kv_heads = 16
      : (tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>)
      -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>)
  return %o, %lse : tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>
}

// Backward: D = rowsum(dO∘O) first, and the f32 dQ accumulator zeroed in the
// same pass (no memset of it before the program): the device library's
// attention_bwd_ends.cuh, 16-byte accesses without shared memory, the widths
// (Dv, D) compile-time.
// CHECK-LABEL: flashc_attention_attention_bwd_preprocess(const flashc::TensorArg out, const flashc::TensorArg dout, const flashc::TensorArg delta, const flashc::TensorArg dq_accum)
// CHECK-NEXT: flashc::device::attention_bwd_preprocess<flashc::device::bf16, 128, 128>(out, dout, delta, &dq_accum);

// Main backward kernel over key blocks: P = exp(scale·S − lse) recomputed,
// never an N×N matrix in memory; dQ accumulated 64 columns at a time.
// CHECK-LABEL: flashc_attention_attention_bwd(
// CHECK: for (int q_block = q_block_begin, stage = 0; q_block < q_block_end; q_block += 1, stage = (stage + 1) % 2) {
// CHECK-NEXT: cp_async_wait<0>();
// CHECK: matmul_tb(
// CHECK: if (needs_mask) {
// CHECK-NEXT: RegTileF32<{{.*}}> masked =
// CHECK-NEXT: mask<-1, 0>(masked,
// CHECK: recompute_probs(
// CHECK: softmax_grad(
// CHECK: for (int chunk = 0; chunk < 128; chunk += 64)
// CHECK: atomic_add_tile(matrix_view<float>(dq_accum, batch, head), row0, chunk, seq_q, 128,
// CHECK-LABEL: flashc_attention_attention_bwd_postprocess(
// CHECK-NEXT: flashc::device::attention_bwd_postprocess<flashc::device::bf16, 128>(dq_accum, dq);

// Forward. Causal: the longest query blocks are scheduled first.
// CHECK-LABEL: flashc_attention_attention_fwd(const flashc::TensorArg q, const flashc::TensorArg k, const flashc::TensorArg v, const flashc::TensorArg out, const flashc::TensorArg lse)
// Hopper: 1024-byte aligned swizzled panels for wgmma.
// HOPPER: align_smem_1024(smem_raw)
// CHECK: const int q_block = static_cast<int>(gridDim.x - 1 - blockIdx.x);
// HOPPER: SmemPanelTile<bf16, 128, 128> q_tile
// Ampere: the loop-invariant Q tile is read into registers once, before the key loop.
// AMPERE: load_fragments(q_tile_frag, q_tile);
// One loop over key blocks; the next block's K and V are prefetched (2 stages)
// after the one barrier of the iteration: this block's tiles have landed and
// every warp is done with the buffers the prefetch refills.
// CHECK: const int k_block_pre = 0;
// CHECK-NEXT: if (k_block_pre < k_block_end) {
// CHECK-NEXT: const int col0_pre = (k_block_pre * {{[0-9]+}});
// CHECK-NEXT: load_tile_async<kThreads>(smem_tile_at<{{.*}}>(smem, kKTileOffset), matrix_view<bf16>(k, batch, kv_head), col0_pre, 0, seq_k, 128);
// CHECK: for (int k_block = 0, stage = 0; k_block < k_block_end; k_block += 1, stage = (stage + 1) % 2)
// CHECK-NEXT: cp_async_wait<0>();  // this iteration's buffers landed, the last iteration is done
// HOPPER-NEXT: fence_async_shared();
// CHECK-NEXT: __syncthreads();
// CHECK-NEXT: loads of a later iteration, in flight during this one
// CHECK-NEXT: const int k_block_next = k_block + 1;
// CHECK: smem_tile_at<{{.*}}>(smem, kKTileOffset + ((stage + 1) % 2) *
// HOPPER: wgmma_matmul_tb<false>(s, q_tile, k_tile);
// HOPPER: wgmma_wait<0>();
// AMPERE: matmul_tb(s, q_tile_frag, k_tile);
// The mask runs only on blocks that cross the diagonal or the key tail.
// CHECK: if (needs_mask) {
// CHECK-NEXT: RegTileF32<{{.*}}> masked = s;
// CHECK-NEXT: mask<-1, 0>(masked,
// CHECK-NOT: mask<
// Online softmax: m' = max(m, rowmax S); P = exp2((S − m')·scale·log2e);
// c = exp2((m − m')·scale·log2e); l' = l·c + rowsum P; O = O·c + P·V.
// CHECK: m_new = row_max(s_masked, m);
// CHECK: exp2(p, m_new, 1.275{{[0-9]+}}e-01f);
// CHECK: corr = softmax_correction(m, m_new, 1.275{{[0-9]+}}e-01f);
// CHECK: l_new = online_sum(l, corr, p);
// CHECK: rescale(acc, corr);
// HOPPER: wgmma_matmul<false>(acc, p16, v_tile);
// HOPPER-NEXT: wgmma_wait<0>();
// AMPERE: matmul(acc, p16, v_tile);
// After the loop: O = acc / l, lse = m·scale + ln l, written once.
// CHECK: m = m_new;
// CHECK-NEXT: l = l_new;
// CHECK: normalize(acc, l);
// CHECK: store_tile<kThreads>(matrix_view<bf16>(out,
// CHECK: logsumexp(m, l, 8.83883{{[0-9]+}}e-02f);
// CHECK: store_rows(vector_view(lse,
