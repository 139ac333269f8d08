// The Sᵀ backward form (flashc --backward-form=transposed): keys are the rows of
// every score tile, so Pᵀ and dSᵀ feed dV += Pᵀ·dO and dK += dSᵀ·Q straight
// from registers; dSᵀ goes through shared memory once, for dQ += dS·K. On
// sm_90a all five products of 128 key rows are wgmma (two warpgroups; dQ's
// reads the dSᵀ and K panels both transposed). --backward-form=auto (the
// default) picks this form on sm_90a at D = 64, and at D = 128 with a softcap
// (without one, D = 128 takes the warp-specialised backward's key split:
// cuda-attention-bwd-ws.mlir), the row form on sm_80. The sm_90a run adds the
// softcap.
// (The forms these defaults replaced -- dQ by mma.sync, lse / D loaded
// synchronously, two barriers an iteration -- were retired on 2026-12-01; their
// A/B numbers: docs/design/wgmma-backward.md.)
// RUN: sed 's/#flash.mask<causal> num_kv_heads/#flash.mask<causal> softcap = 30.0 num_kv_heads/' %s | flashc - --emit=cuda --arch=sm_90a -o - | FileCheck %s --check-prefixes=CHECK,HOPPER
// RUN: flashc %s --backward-form=transposed --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefixes=CHECK,AMPERE
// RUN: flashc %s --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefix=AUTO80
// RUN: not flashc %s --backward-form=columns -o %t 2>&1 | FileCheck %s --check-prefix=BAD

// AUTO80-LABEL: flashc_attention_attention_bwd(
// AUTO80-NOT: recompute_probs_cols(
// AUTO80: recompute_probs(
// AUTO80-NOT: recompute_probs_cols(
// BAD: unknown --backward-form value 'columns' (expected auto, rows or transposed)

func.func @attention(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x16x?x128xbf16>, %v: tensor<?x16x?x128xbf16>)
    -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.0883883 mask = #flash.mask<causal> num_kv_heads = 16
      : (tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>)
      -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>)
  return %o, %lse : tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>
}

// 128 keys per block in 8 warps of 16 key rows; the loop-carried dK and dV
// take the register budget, so K and V stay in shared memory (mma.sync; wgmma
// reads its A operands from shared memory anyway).
// CHECK-LABEL: namespace flashc_attention_attention_bwd_config {
// CHECK: constexpr int kWarps = 8;
// Shared-memory slots are named config constants.
// CHECK: constexpr int kLseColsOffset = {{[0-9]+}};
// CHECK-NEXT: constexpr int kDeltaColsOffset = {{[0-9]+}};
// CHECK-NEXT: constexpr int kDstSharedOffset = {{[0-9]+}};
// CHECK-LABEL: flashc_attention_attention_bwd(
// CHECK-NOT: load_fragments(
// Index values carry the kernel builder's names.
// CHECK: const int k_block = static_cast<int>(blockIdx.x);
// CHECK-NEXT: const int kv_head = static_cast<int>(blockIdx.y);
// CHECK-NEXT: const int batch = static_cast<int>(blockIdx.z);
// CHECK: const int group = (q_heads / kv_heads);
// CHECK-NEXT: const int col0 = (k_block * 128);
// CHECK: for (int member = 0; member < group; member += 1) {
// CHECK-NEXT: const int first_head = (kv_head * group);
// CHECK-NEXT: const int head = (first_head + member);
// Per-query lse and D ride the Q / dO pipeline: 4-byte cp.async into two
// buffers, issued an iteration ahead with the tiles.
// CHECK: Pipeline prologue
// CHECK: load_rows_async<kThreads, 64>(shared_floats(smem, kLseColsOffset), vector_view(lse, batch, head), row0_pre, seq_q);
// CHECK-NEXT: load_rows_async<kThreads, 64>(shared_floats(smem, kDeltaColsOffset), vector_view(delta, batch, head), row0_pre, seq_q);
// One barrier an iteration: wait for this iteration's loads, barrier (which
// also says the last iteration is done with its buffers), then prefetch.
// CHECK: for (int q_block = q_block_begin, stage = 0; q_block < q_block_end; q_block += 1, stage = (stage + 1) % 2) {
// CHECK-NEXT: cp_async_wait<0>();  // this iteration's buffers landed, the last iteration is done
// HOPPER-NEXT: fence_async_shared();
// CHECK-NEXT: __syncthreads();
// CHECK-NEXT: {  // loads of a later iteration, in flight during this one
// CHECK: const int q_block_next = q_block + 1;
// CHECK: load_rows_async<kThreads, 64>(shared_floats(smem, kLseColsOffset + ((stage + 1) % 2) * 256), vector_view(lse,
// CHECK: const int [[ROW0:row0]] = (q_block * 64);
// CHECK: float* const [[LSE:lse_cols]] = shared_floats(smem, kLseColsOffset + stage * 256);
// CHECK-NEXT: float* const [[D:delta_cols]] = shared_floats(smem, kDeltaColsOffset + stage * 256);
// CHECK-NOT: column vectors written by all threads
// Sᵀ = K·Qᵀ: [128 keys x 64 queries]; the mask reads keys from the rows.
// CHECK: RegTileF32<128, 64, kWarps> [[ST:.+]];
// AMPERE: matmul_tb([[ST]], k_tile, q_tile);
// wgmma products are issued without a wait; the wait comes before the first
// op that reads their registers.
// HOPPER: wgmma_matmul_tb<false>([[ST]], k_tile, q_tile);
// HOPPER: wgmma_wait<0>();
// CHECK: mask_transposed<-1, 0>(
// Pᵀ = exp(scale·Sᵀ − lse[col]) and dV += Pᵀ·dO from registers, no shared copy of P.
// CHECK: recompute_probs_cols([[P:.+]], [[LSE]],
// CHECK: convert([[PB:.+]], [[P]]);
// AMPERE-NEXT: matmul({{.+}}, [[PB]], dout_tile);
// HOPPER-NEXT: wgmma_matmul<false>({{.+}}, [[PB]], dout_tile);
// dSᵀ = Pᵀ∘(dPᵀ − D[col]) · scale; on sm_90a dPᵀ's product is issued behind dV's.
// AMPERE: matmul_tb([[DP:.+]], v_tile, dout_tile);
// HOPPER-NOT: wgmma_wait
// HOPPER: wgmma_matmul_tb<false>([[DP:.+]], v_tile, dout_tile);
// HOPPER-NEXT: wgmma_wait<0>();
// CHECK-NEXT: softmax_grad_cols([[DP]], [[P]], [[D]]);
// dSᵀ goes to shared memory (for dQ) before dK += dSᵀ·Q from registers, so on
// sm_90a dK's product runs while dQ reads the panel.
// dQ += dS·K over 64 query rows: 4 row bands, so the 8 warps form 2 column groups.
// On sm_90a dSᵀ is a panel tile on a 1024-byte boundary (after the column vectors),
// read by wgmma (async proxy): the generic-proxy stores fence before the barrier.
// AMPERE: const SmemTile<bf16, 128, 64> [[DS:dst_shared]] = smem_tile_at<SmemTile<bf16, 128, 64>>(smem, kDstSharedOffset);
// HOPPER: const SmemPanelTile<bf16, 128, 64> [[DS:dst_shared]] = smem_tile_at<SmemPanelTile<bf16, 128, 64>>(smem, kDstSharedOffset);
// CHECK-NEXT: store_fragments([[DS]],
// HOPPER-NEXT: fence_async_shared();
// CHECK-NEXT: __syncthreads();
// AMPERE: matmul({{.+}}, {{.+}}, q_tile);
// HOPPER: wgmma_matmul<false>({{.+}}, {{.+}}, q_tile);
// HOPPER-NOT: wgmma_wait
// CHECK: for (int chunk = (warp_id() / 4) * 64; chunk < 128; chunk += 128) {
// CHECK-NEXT: RegTileF32<64, 64, 4> [[PART:.+]];
// AMPERE: matmul_ta([[PART]], [[DS]], k_tile, chunk);
// HOPPER: wgmma_matmul_ta([[PART]], [[DS]], k_tile, chunk);
// sm_90a: whole 64-column chunks reduce in 64-byte row segments (red.v4; the L2 takes a request a
// segment); sm_80's chunks keep the 8-byte form.
// AMPERE-NEXT: atomic_add_tile(matrix_view<float>(dq_accum, batch, head), [[ROW0]], chunk, seq_q, 128, [[PART]]);
// HOPPER-NEXT: atomic_add_tile_segments(matrix_view<float>(dq_accum, batch, head), [[ROW0]], chunk, seq_q, 128, [[PART]]);
// sm_90a: dK's product is waited for before the next iteration's barrier; no
// end-of-iteration barrier, one after the loop.
// HOPPER: wgmma_wait<0>();
// CHECK-NOT: __syncthreads();
// CHECK: cp_async_wait<0>();
// CHECK-NEXT: __syncthreads();  // the last iteration's buffers are free for what follows
// The GQA loop's own end-of-iteration barrier would follow right after: dropped.
// CHECK-NEXT: dk_sum = dk_acc;
// CHECK-NEXT: dv_sum = dv_acc;
// CHECK-NEXT: }
// CHECK: convert([[DK16:dk16]], dk_sum);
// CHECK-NEXT: store_tile<kThreads>(matrix_view<bf16>(dk, batch, kv_head), col0, 0, seq_k, 128, [[DK16]]);
