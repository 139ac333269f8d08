// The Sᵀ backward form (flashc --backward-form=transposed): keys are the rows of
// every score tile, so Pᵀ and dSᵀ feed dV += Pᵀ·dO and dK += dSᵀ·Q straight
// from registers; dSᵀ goes through shared memory once, for dQ += dS·K. On
// sm_90a the four products of 128 key rows are wgmma (two warpgroups), dQ
// stays mma.sync reading the same swizzled panels. --backward-form=auto (the
// default) picks this form on sm_90a at D = 128, the row form on sm_80.
// RUN: flashc %s --emit=cuda --arch=sm_90a -o - | FileCheck %s --check-prefixes=CHECK,HOPPER
// RUN: flashc %s --backward-form=transposed --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefixes=CHECK,AMPERE
// RUN: flashc %s --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefix=AUTO80
// RUN: flashc %s --experiment=wgmma-dq --emit=cuda --arch=sm_90a -o - | FileCheck %s --check-prefix=WDQ
// RUN: flashc %s --experiment=wgmma-dq --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefix=WDQ80
// RUN: flashc %s --experiment=async-lse --emit=cuda --arch=sm_90a -o - | FileCheck %s --check-prefix=ALSE
// RUN: flashc %s --experiment=one-barrier --emit=cuda --arch=sm_90a -o - | FileCheck %s --check-prefix=ONEBAR
// RUN: not flashc %s --experiment=async-lse,nope -o %t 2>&1 | FileCheck %s --check-prefix=BADX
// RUN: not flashc %s --backward-form=columns -o %t 2>&1 | FileCheck %s --check-prefix=BAD

// AUTO80-LABEL: flashc_attention_attention_bwd(
// AUTO80-NOT: recompute_probs_cols(
// AUTO80: recompute_probs(
// AUTO80-NOT: recompute_probs_cols(
// --experiment=async-lse: lse / D ride the Q / dO pipeline (cp.async into two
// buffers, issued an iteration ahead); no synchronous load and barrier per step.
// ALSE-LABEL: flashc_attention_attention_bwd(
// ALSE: loads of a later iteration, in flight during this one
// ALSE: load_rows_async<kThreads, 64>(shared_floats(smem, [[LSEOFF:[0-9]+]] + ((stage + 1) % 2) * 256), vector_view(lse,
// ALSE-NEXT: load_rows_async<kThreads, 64>(shared_floats(smem, [[DOFF:[0-9]+]] + ((stage + 1) % 2) * 256), vector_view(delta,
// ALSE: cp_async_wait<1>();
// ALSE: float* const [[LSE:.+]] = shared_floats(smem, [[LSEOFF]] + stage * 256);
// ALSE-NEXT: float* const [[D:.+]] = shared_floats(smem, [[DOFF]] + stage * 256);
// ALSE-NOT: column vectors written by all threads
// ALSE: recompute_probs_cols({{.+}}, [[LSE]],
// BADX: unknown --experiment 'nope' (known: wgmma-dq, async-lse, one-barrier)
// --experiment=one-barrier: wait and barrier first, then prefetch into the
// buffers the last iteration read; no end-of-iteration barrier, one after the loop.
// ONEBAR-LABEL: flashc_attention_attention_bwd(
// ONEBAR: for (int [[QB:.+]] = {{.*}}stage = 0;
// ONEBAR-NEXT: cp_async_wait<0>();  // this iteration's buffers landed, the last iteration is done
// ONEBAR-NEXT: fence_async_shared();
// ONEBAR-NEXT: __syncthreads();
// ONEBAR-NEXT: {  // loads of a later iteration, in flight during this one
// ONEBAR-NOT: buffers are overwritten by the next iteration
// ONEBAR: atomic_add_tile(
// ONEBAR-NEXT: }
// ONEBAR-NEXT: wgmma_wait<0>();
// ONEBAR-NEXT: }
// ONEBAR-NEXT: cp_async_wait<0>();
// ONEBAR-NEXT: __syncthreads();  // the last iteration's buffers are free for what follows
// --experiment=wgmma-dq: each warpgroup's 64 x 64 part of dQ is one wgmma
// product over the same panels; mma.sync targets keep matmul_ta.
// WDQ-LABEL: flashc_attention_attention_bwd(
// The panel written by store_fragments is read by wgmma (async proxy): fence first.
// WDQ: store_fragments(
// WDQ-NEXT: fence_async_shared();
// WDQ-NEXT: __syncthreads();
// WDQ: for (int chunk = (warp_id() / 4) * 64; chunk < 128; chunk += 128) {
// WDQ: wgmma_matmul_ta([[PART:.+]], {{.+}}, k_tile, chunk);
// WDQ-NEXT: atomic_add_tile(matrix_view<float>(dq_accum,
// WDQ80-LABEL: flashc_attention_attention_bwd(
// WDQ80-NOT: wgmma_matmul_ta(
// WDQ80: matmul_ta(
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
// CHECK-LABEL: flashc_attention_attention_bwd(
// CHECK-NOT: load_fragments(
// CHECK: for (int [[QB:.+]] = {{.*}}stage = 0;
// Per-query lse and D: column vectors in shared memory, one barrier for both.
// CHECK: float* const [[LSE:.+]] = shared_floats(smem,
// CHECK-NEXT: load_rows_shared<kThreads, 64>([[LSE]], vector_view(lse,
// CHECK-NEXT: float* const [[D:.+]] = shared_floats(smem,
// CHECK-NEXT: load_rows_shared<kThreads, 64>([[D]], vector_view(delta,
// CHECK-NEXT: __syncthreads();
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
// On sm_90a dSᵀ is a panel tile on a 1024-byte boundary (after the column vectors).
// AMPERE: const SmemTile<bf16, 128, 64> [[DS:.+]] = smem_tile_at<SmemTile<bf16, 128, 64>>(smem, 131584);
// HOPPER: const SmemPanelTile<bf16, 128, 64> [[DS:.+]] = smem_tile_at<SmemPanelTile<bf16, 128, 64>>(smem, 132096);
// CHECK-NEXT: store_fragments([[DS]],
// AMPERE: matmul({{.+}}, {{.+}}, q_tile);
// HOPPER: wgmma_matmul<false>({{.+}}, {{.+}}, q_tile);
// HOPPER-NOT: wgmma_wait
// CHECK: for (int chunk = (warp_id() / 4) * 64; chunk < 128; chunk += 128) {
// CHECK-NEXT: RegTileF32<64, 64, 4> [[PART:.+]];
// CHECK: matmul_ta([[PART]], [[DS]], k_tile, chunk);
// CHECK-NEXT: atomic_add_tile(matrix_view<float>(dq_accum,
// sm_90a: dK's product is waited for before the buffers are recycled.
// HOPPER: wgmma_wait<0>();
// HOPPER-NEXT: __syncthreads();  // buffers are overwritten by the next iteration
