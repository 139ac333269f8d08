// FFN: y = gelu_tanh(x·W1 + b1)·W2 + b2 as GEMMs whose bias and activation
// run in the epilogue, on the accumulator in registers.
// On sm_90a the plain GEMMs are by default the warp-specialised persistent
// GEMM (cuda-gemm-ws.mlir); the RUN lines below pin the cp.async wgmma form
// they replaced (a point of the gemm tuning space, and the form of GEMMs the
// ws one does not take) with a table entry, to check its code.
// The cp.async GEMM kernels are wgmma (two warpgroups of 64 rows, 64 columns
// of K a stage, 4 stages), the plain GEMMs 256 columns wide (m64n256 products)
// and their product loops keep one wgmma group in flight across the barrier:
// loads one stage less ahead (2 of 4), the accumulator fenced after its
// initialization (else ptxas serializes the products). The column sums and
// sm_80 keep mma.sync; ptxas reports no spills and no serialized wgmma for
// every form. (The forms the sm_90a defaults replaced -- mma.sync GEMMs,
// each iteration waiting for its products -- were retired; their A/B numbers:
// docs/design/wgmma-gemm.md.)
// RUN: flashc %s --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefixes=CHECK,WG80
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-cp-async.txt --emit=tile -o - | FileCheck %s --check-prefix=PLAN
// RUN: flashc %s --tuning-table=none --emit=tile -o - | FileCheck %s --check-prefix=PLAN-WS
// RUN: flashc %s --emit=tile -o - | FileCheck %s --check-prefix=PLAN-TABLE
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-cp-async.txt --emit=cuda -o - | FileCheck %s --check-prefix=WIDE
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-cp-async.txt --emit=cuda -o - | FileCheck %s --check-prefix=OVL
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-cp-async.txt --emit=cubin --arch=sm_90a --ptxas-report -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// The default (the ws GEMM, dpre = (dy·W2ᵀ) ∘ gelu'(pre) in one of them): ptxas reports no spills for it either.
// RUN: flashc %s --emit=cubin --arch=sm_90a --ptxas-report -o %t.ws.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS-WS
// Widths of whole 16-byte chunks keep the chunked copies (no element-exact form: cuda-ffn-any-width.mlir):
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-cp-async.txt --emit=cuda -o - | FileCheck %s --check-prefix=CHUNKED
// CHUNKED-NOT: kThreads, true>
// CHUNKED-NOT: atomic_add_tile<true>
// CHUNKED: flashc_ffn_ffn_up(
// CHUNKED-NOT: kThreads, true>
// CHUNKED-NOT: atomic_add_tile<true>
// 128 columns wide, a point of the gemm tuning space a table entry selects
// (the plain GEMMs' hand rule is 256): the same overlapped loops.
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-narrow.txt --emit=tile -o - | FileCheck %s --check-prefix=PLAN-NARROW
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-narrow.txt --emit=cuda -o - | FileCheck %s --check-prefix=NARROW
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-narrow.txt --emit=cuda -o - | FileCheck %s --check-prefix=OVL
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-narrow.txt --emit=cubin --arch=sm_90a --ptxas-report -o %t.n.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// Blocks of one warpgroup (64 rows on 4 warps, 2-3 stages: several blocks an SM for short contractions), a point
// of the GEMM kinds' tuning spaces: the same wgmma loops on RegTileF32<64, N, 4>, panel loads of 4 rows a pass.
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-warpgroup.txt --emit=cuda -o - | FileCheck %s --check-prefix=WG1
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-warpgroup.txt --emit=cubin --arch=sm_90a --ptxas-report -o %t.w.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// WG1-LABEL: namespace flashc_ffn_ffn_bwd_dh_config {
// WG1-NEXT: // 64 x 256 blocks, 2 stages,
// WG1-NEXT: constexpr int kWarps = 4;
// WG1-LABEL: flashc_ffn_ffn_bwd_dh(
// WG1: RegTileF32<64, 256, kWarps> acc = acc_zeros;
// WG1: wgmma_matmul_tb<false>(acc,
// WG1-LABEL: flashc_ffn_ffn_up(
// WG1: wgmma_matmul<false>({{.*}}, {{.*}}, {{.*}});  // += A·B

func.func @ffn(%x: tensor<?x1024xbf16>, %w1: tensor<1024x4096xbf16>, %b1: tensor<4096xbf16>,
               %w2: tensor<4096x1024xbf16>, %b2: tensor<1024xbf16>) -> tensor<?x1024xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 bias %b2
      : (tensor<?x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096xbf16>, tensor<4096x1024xbf16>, tensor<1024xbf16>)
      -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}

// The backward: dh = dy·W2ᵀ a plain GEMM, then dpre = dh ∘ gelu'(pre) from the
// pre-activation the training forward saved, one call of the device library's
// elementwise kernel (16-bit).
// CHECK-LABEL: flashc_ffn_ffn_bwd_dh(const flashc::TensorArg dy, const flashc::TensorArg w2, const flashc::TensorArg dh)
// CHECK-LABEL: namespace flashc_ffn_ffn_bwd_act_config {
// CHECK: static constexpr flashc::device::Act kAct = flashc::device::Act::GeluTanh;
// CHECK-NEXT: static constexpr bool kGated = false, kBatched = false;
// CHECK-NEXT: static constexpr int kBlockM = 64, kBlockN = 32, kThreads = 128;
// CHECK: __launch_bounds__(128, 8)
// CHECK-NEXT: flashc_ffn_ffn_bwd_act(const flashc::TensorArg dh, const flashc::TensorArg pre, const flashc::TensorArg dpre) {
// CHECK-NEXT: flashc::device::ffn_activation_grad<flashc_ffn_ffn_bwd_act_config::Config>(dh, pre, pre, dpre, dpre);
// CHECK-LABEL: flashc_ffn_ffn_up(
// The K loop: x and W1 tiles pipelined, f32 accumulation.
// CHECK: for (int
// CHECK: matmul(
// Epilogue: + b1 (bf16, read as such), activation, convert, store.
// CHECK: add_bias({{.*}}, vector_view<bf16>(
// CHECK: activation<Act::GeluTanh, true>(
// CHECK: convert(
// CHECK: store_tile<kThreads>(
// The training forward's up projection (save_pre) stores the pre-activation
// x·W1 + b1 before the activation, then h.
// CHECK-LABEL: flashc_ffn_forward_train_ffn_up(const flashc::TensorArg x, const flashc::TensorArg w1, const flashc::TensorArg b1, const flashc::TensorArg pre, const flashc::TensorArg h)
// CHECK: add_bias([[ACC:.+]], vector_view<bf16>(b1), col0, N);
// CHECK-NEXT: RegTile16<bf16, 128, 128, kWarps> pre16;
// CHECK-NEXT: convert(pre16, [[ACC]]);
// CHECK-NEXT: store_tile<kThreads>(matrix_view<bf16>(pre), row0, col0, M, N, pre16);
// CHECK: activation<Act::GeluTanh, true>(
// CHECK: store_tile<kThreads>(matrix_view<bf16>(h), row0, col0, M, N, c16);

// PLAN-LABEL: tile.kernel @ffn_ffn_bwd_db2
// PLAN-SAME: strategy = #tile.strategy<mma_sync_sm80>
// PLAN-LABEL: tile.kernel @ffn_ffn_up
// PLAN-SAME: block_m = 128 : i64, block_n = 256 : i64
// PLAN-SAME: block_k = 64
// PLAN-SAME: stages = 4 : i64, strategy = #tile.strategy<wgmma_sm90>,
// PLAN-SAME: warps = 8
// By default the warp-specialised persistent GEMM.
// PLAN-WS-LABEL: tile.kernel @ffn_ffn_up
// PLAN-WS-SAME: block_m = 128 : i64, block_n = 256 : i64
// PLAN-WS-SAME: grid_order = #tile.grid_order<order = persistent, group = 8>
// PLAN-WS-SAME: stages = 4 : i64, strategy = #tile.strategy<wgmma_ws_sm90>, warps = 8
// The built-in table's entry for this up projection (d = 1024, h = 4096: session 37's tuner, 3 stages and groups
// of 16, 1.027x).
// PLAN-TABLE-LABEL: tile.kernel @ffn_ffn_up
// PLAN-TABLE-SAME: grid_order = #tile.grid_order<order = persistent, group = 16>
// PLAN-TABLE-SAME: stages = 3 : i64, strategy = #tile.strategy<wgmma_ws_sm90>
// PLAN-TABLE-SAME: tuning = {entry = "{{.*}}sm_90a.txt:{{[0-9]+}}", group = 16 : i64, key = "sm_90a gemm bf16 m?n4096k1024 -"

// PLAN-NARROW-LABEL: tile.kernel @ffn_ffn_up
// PLAN-NARROW-SAME: block_m = 128 : i64, block_n = 128 : i64
// PLAN-NARROW-SAME: tuning = {entry = "{{.*}}tuning-gemm-narrow.txt:2", key = "sm_90a gemm bf16 m?n4096k1024 -"}

// dh = dy·W2ᵀ: both K-major (dx = dpre·W1ᵀ is the same code).
// NARROW-LABEL: flashc_ffn_ffn_bwd_dh(
// NARROW: wgmma_matmul_tb<false>(
// Weight gradient dW2 = hᵀ·dy: both operands MN-major panels.
// NARROW-LABEL: flashc_ffn_ffn_bwd_dw2(
// NARROW: wgmma_matmul_ta<false>([[DW:.+]], h_tile, dy_tile);  // += Aᵀ·B
// NARROW-NEXT: wgmma_wait<1>();
// NARROW: // launches flashc_ffn_ffn_bwd_dh (its code is that kernel's but for names)
// NARROW-LABEL: flashc_ffn_ffn_bwd_db2(
// NARROW-NOT: wgmma
// NARROW: matmul(
// Up projection: x [128 x 64] K-major, W1 [64 x 128] MN-major, one panel row of K a stage.
// NARROW-LABEL: flashc_ffn_ffn_up(
// NARROW: align_smem_1024(smem_raw)
// NARROW: const int k_steps = ceil_div(K, 64);
// NARROW: for (int k_step = 0, stage = 0; k_step < k_steps; k_step += 1, stage = (stage + 1) % 4) {
// NARROW: const SmemPanelTile<bf16, 128, 64> [[X:x_tile]] = smem_tile_at<SmemPanelTile<bf16, 128, 64>>(smem, kXTileOffset + stage * SmemPanelTile<bf16, 128, 64>::kBytes);
// NARROW-NEXT: const SmemPanelTile<bf16, 64, 128> [[W:w1_tile]] = smem_tile_at<SmemPanelTile<bf16, 64, 128>>(smem, kW1TileOffset + stage * SmemPanelTile<bf16, 64, 128>::kBytes);
// NARROW-NEXT: wgmma_matmul<false>([[ACC:acc]], [[X]], [[W]]);  // += A·B
// NARROW-NEXT: wgmma_wait<1>();
// NARROW: add_bias([[ACC]],
// NARROW: activation<Act::GeluTanh, true>([[ACC]]);
// WG80-NOT: wgmma
// PTXAS-NOT: serialized
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS: Compiling entry function 'flashc_ffn_ffn_bwd_act'
// PTXAS-NOT: serialized
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS-WS-NOT: serialized
// PTXAS-WS-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS-WS: Compiling entry function 'flashc_ffn_ffn_bwd_dpre'
// PTXAS-WS-NOT: serialized
// PTXAS-WS-NOT: {{[1-9][0-9]*}} bytes spill stores
// The backward's dh = dy·W2ᵀ is a plain GEMM: 128 x 256, 4 stages.
// WIDE-LABEL: namespace flashc_ffn_ffn_bwd_dh_config {
// WIDE-NEXT: // 128 x 256 blocks, 4 stages,
// WIDE-LABEL: namespace flashc_ffn_ffn_up_config {
// WIDE-NEXT: // 128 x 256 blocks, 4 stages,
// WIDE-LABEL: flashc_ffn_ffn_up(
// WIDE: const SmemPanelTile<bf16, 64, 256> [[W:.+]] = smem_tile_at<SmemPanelTile<bf16, 64, 256>>(
// WIDE-NEXT: wgmma_matmul<false>({{.+}}, [[W]]);
// The backward's dh GEMM keeps a group in flight too.
// OVL-LABEL: flashc_ffn_ffn_bwd_dh(
// OVL: wgmma_wait<1>();
// OVL-LABEL: flashc_ffn_ffn_bwd_dw2(
// OVL: wgmma_wait<1>();
// OVL-LABEL: flashc_ffn_ffn_up(
// OVL: RegTileF32<128, {{128|256}}, kWarps> [[ACC:acc]] = acc_zeros;
// OVL-NEXT: wgmma_fence_operand([[ACC]]);
// OVL-NEXT: // Pipeline prologue: loads of the first 2 iteration(s) in flight.
// OVL: for (int [[K:k_step]] = 0, stage = 0; [[K]] < k_steps; [[K]] += 1, stage = (stage + 1) % 4) {
// OVL-NEXT: cp_async_wait<1>();
// OVL: const int k_step_next = [[K]] + 2;
// OVL: smem_tile_at<SmemPanelTile<bf16, 128, 64>>(smem, kXTileOffset + ((stage + 2) % 4)
// OVL: wgmma_matmul<false>([[ACC]],
// OVL-NEXT: wgmma_wait<1>();
// OVL-NEXT: }
// OVL-NEXT: wgmma_wait<0>();
// OVL-NEXT: wgmma_fence_operand([[ACC]]);
// OVL: add_bias([[ACC]],
