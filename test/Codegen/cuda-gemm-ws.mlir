// The warp-specialised persistent GEMM (strategy wgmma_ws_sm90, the device
// library's gemm_ws.cuh): a plain or gated 16-bit GEMM whose tensors a TMA map
// describes (rank 2 or batched, rows a static multiple of 8 elements, A and B
// not both transposed; accumulating, or with the activation's derivative in
// its epilogue, act_grad). A persistent grid of min(tiles, SMs) blocks
// walks the 128 x block_n tiles in groups of `group` row blocks; one producer
// thread streams 64 columns of K of A and B through the ring by TMA; two
// consumer warpgroups of 64 rows; the epilogue (alpha, bias, activation, the
// saved pre-activation) leaves in 64 x 64 pieces stored by TMA. It is the
// hand rule on sm_90a wherever it takes the GEMM (measured on the H200: the
// FFN step 1.08x eager PyTorch at d = 4096, 0.99x at d = 1024); the cp.async
// wgmma form it replaced stays for the GEMMs it does not take and as a point
// of the gemm tuning space. Table entries choose its tile width, depth and
// group (the entries below), or the cp.async form.
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-ws.txt --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: rm -rf %t.bundle && flashc %s --tuning-table=%S/Inputs/tuning-gemm-ws.txt --emit=bundle --arch=sm_90a -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-ws.txt --emit=tile -o - | FileCheck %s --check-prefix=TILE
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=HAND
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-cp-async.txt --emit=cuda -o - | FileCheck %s --check-prefix=CP-ASYNC
// RUN: flashc %s --print-tuning-space --tuning-table=none | FileCheck %s --check-prefix=SPACE
// The weight gradients (fewer 128 x 128 tiles than the GPU has SMs: split-K) on the ws form (the hand rule; here
// through a table entry as well): units of (slice of 4096 rows of K, 128 x 128 tile) on the
// persistent grid, each unit's sum added into the zeroed f32 accumulator by reductions from registers (no
// epilogue pieces: 4 slots of 32 KB + 8 barriers + 1024), then converted. dW2 = hᵀ·dy: h [M, 1024] is A stored
// [K, M]; dW1 = xᵀ·dpre is the same kernel but for names.
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-ws-split-k.txt --emit=cuda -o - | FileCheck %s --check-prefix=SPLITK
// RUN: rm -rf %t.s.bundle && flashc %s --tuning-table=%S/Inputs/tuning-gemm-ws-split-k.txt --emit=bundle --arch=sm_90a -o %t.s.bundle
// RUN: FileCheck %s --check-prefix=SPLITK-MANIFEST < %t.s.bundle/manifest.flashc
// A backward with no split-K, no elementwise kernel (d = 1024: the fused dpre and plain GEMMs) is still described
// as the FFN's backward (flashc-run pairs programs by it).
// RUN: rm -rf %t.d.bundle && flashc %S/Inputs/ffn-d1024.mlir --emit=bundle --arch=sm_90a -o %t.d.bundle
// RUN: FileCheck %s --check-prefix=OP < %t.d.bundle/manifest.flashc
// OP-LABEL: program ffn_backward
// OP: meta op ffn_backward
// A block-size override outside the form (64 columns) plans the cp.async wgmma GEMM instead.
// RUN: flash-opt %s --flash-generate-backward --flash-tile | flash-opt --flash-plan-memory="block-n=64" | FileCheck %s --check-prefix=OVERRIDE
// The gated up projection (gated_gemm): 128 columns of each weight a tile, one
// m64n256 product computing x·W_gate and x·W_up side by side; the training
// forward's also stores g and u.
// RUN: flashc %S/Inputs/ffn-gated-d512.mlir --emit=cuda -o - | FileCheck %s --check-prefix=GATED
// Batched token streams [B, S, d] (A and C rank 3, weights rank 2): 3-D maps.
// RUN: rm -rf %t.b.bundle && flashc %S/../GPU/Inputs/ffn_batched_gelu_d128_bf16.mlir --emit=bundle --arch=sm_90a -o %t.b.bundle
// RUN: FileCheck %s --check-prefix=BATCHED < %t.b.bundle/manifest.flashc
// The gated backward's dx += du·W_upᵀ (accumulate): the tile of C is read by TMA before the sum is stored.
// RUN: flashc %S/Inputs/ffn-gated-d512.mlir --emit=cuda -o - | FileCheck %s --check-prefix=ACC
// A table entry for the fused dpre whose ws plan does not fit (4 stages at 256 columns with P's tile) keeps the split form.
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-ws-grad-unfit.txt --emit=tile -o - | FileCheck %s --check-prefix=UNFIT
// A kernel the form does not take (rows of 1001 and 77 elements: no TMA map) is refused for a table entry.
// RUN: not flashc %S/../GPU/Inputs/ffn_any_width_d100_h1001_o77_bf16.mlir --tuning-table=%S/Inputs/tuning-gemm-ws-refused.txt --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=REFUSED

// d = 512, h = 1024, b1, gelu_tanh: up, down, dx = dpre·W1ᵀ and the training
// forward's up projection (which also stores pre) are plain GEMMs; the
// backward's dpre = (dy·W2ᵀ) ∘ gelu'(pre) is one GEMM with the derivative in
// its epilogue (act_grad: the tile of pre loaded by TMA under the product).
func.func @ffn(%x: tensor<?x512xbf16>, %w1: tensor<512x1024xbf16>, %b1: tensor<1024xbf16>, %w2: tensor<1024x512xbf16>) -> tensor<?x512xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 : (tensor<?x512xbf16>, tensor<512x1024xbf16>, tensor<1024xbf16>, tensor<1024x512xbf16>) -> tensor<?x512xbf16>
  return %y : tensor<?x512xbf16>
}

// dpre = (dy·W2ᵀ) ∘ gelu'(pre): W2 [h, d] is B stored [N, K]; the tile of pre
// (P) is read through map_pre into a buffer a 64-column piece (256 columns:
// 8 x 8 KB), so the ring keeps 3 stages (its table entry).
// CUDA-LABEL: // ---- ffn_ffn_bwd_dpre ----
// CUDA-NEXT: // computes #tile.gemm<role = gemm, activation = gelu_tanh, transpose_a = false, transpose_b = true, {{.*}}, act_grad = true>
// CUDA: struct Config {
// CUDA-NEXT: using Elem = bf16;
// CUDA-NEXT: static constexpr bool kTransA = false, kTransB = true;
// CUDA-NEXT: static constexpr Act kAct = Act::GeluTanh;
// CUDA-NEXT: static constexpr bool kBias = false, kSavePre = false;
// CUDA-NEXT: static constexpr bool kBatched = false;
// CUDA-NEXT: static constexpr bool kAccumulate = false;
// CUDA-NEXT: static constexpr bool kActGrad = true;
// CUDA-NEXT: static constexpr bool kGated = false;
// CUDA-NEXT: static constexpr int kBlockN = 256, kStages = 3, kGroup = 8;
// CUDA: static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
// CUDA: using Plan = GemmWsPlan<Config>;
// 3 x 48 KB of ring, 8 pieces of 8 KB, 14 mbarriers, 1 KB of alignment.
// CUDA-NEXT: static_assert(Plan::kThreads == 384 && Plan::kSmemBytes == 214128,
// CUDA: __launch_bounds__(384, 1)
// CUDA-NEXT: flashc_ffn_ffn_bwd_dpre(const flashc::TensorArg [[DY:[a-z0-9_]+]], const flashc::TensorArg [[W2:[a-z0-9_]+]], const flashc::TensorArg [[P:[a-z0-9_]+]], const flashc::TensorArg [[DPRE:[a-z0-9_]+]], const __grid_constant__ flashc::TmaDescriptor [[DYM:[a-z0-9_]+]], const __grid_constant__ flashc::TmaDescriptor [[W2M:[a-z0-9_]+]], const __grid_constant__ flashc::TmaDescriptor [[DPREM:[a-z0-9_]+]], const __grid_constant__ flashc::TmaDescriptor [[PM:[a-z0-9_]+]])
// The absent second weight's map is B's, the absent pre2 maps C's, the absent bias A (none read).
// CUDA-NEXT: flashc::device::gemm_ws<flashc_ffn_ffn_bwd_dpre_config::Config>([[DYM]], [[W2M]], [[W2M]], [[DPREM]], [[PM]], [[DPREM]], [[DY]], [[W2]], [[DY]], 1.000000000e+00f);
// dx = dpre·W1ᵀ: 128 columns, 3 stages, groups of 16 (its table entry).
// CUDA-LABEL: // ---- ffn_ffn_bwd_dx ----
// CUDA: static constexpr int kBlockN = 128, kStages = 3, kGroup = 16;
// CUDA: static_assert(Plan::kThreads == 384 && Plan::kSmemBytes == 132144,
// The inference up projection: bias and GELU in the epilogue.
// CUDA-LABEL: // ---- ffn_ffn_up ----
// CUDA: static constexpr bool kTransA = false, kTransB = false;
// CUDA-NEXT: static constexpr Act kAct = Act::GeluTanh;
// CUDA-NEXT: static constexpr bool kBias = true, kSavePre = false;
// CUDA: flashc::device::gemm_ws<flashc_ffn_ffn_up_config::Config>(
// The training forward's up projection also stores pre = x·W1 + b1 (before C).
// CUDA-LABEL: // ---- ffn_forward_train_ffn_up ----
// CUDA: static constexpr bool kBias = true, kSavePre = true;
// CUDA: flashc_ffn_forward_train_ffn_up(const flashc::TensorArg [[X:[a-z0-9_]+]], const flashc::TensorArg [[W1:[a-z0-9_]+]], const flashc::TensorArg [[B1:[a-z0-9_]+]], const flashc::TensorArg [[PRE:[a-z0-9_]+]], const flashc::TensorArg [[H:[a-z0-9_]+]], const __grid_constant__ flashc::TmaDescriptor [[XM:[a-z0-9_]+]], const __grid_constant__ flashc::TmaDescriptor [[W1M:[a-z0-9_]+]], const __grid_constant__ flashc::TmaDescriptor [[HM:[a-z0-9_]+]], const __grid_constant__ flashc::TmaDescriptor [[PREM:[a-z0-9_]+]])
// CUDA-NEXT: flashc::device::gemm_ws<flashc_ffn_forward_train_ffn_up_config::Config>([[XM]], [[W1M]], [[W1M]], [[HM]], [[PREM]], [[HM]], [[X]], [[W1]], [[B1]], 1.000000000e+00f);

// The manifest: a persistent grid of min(tiles, SMs) blocks, 384 threads, the
// library's shared memory; maps of A (128 rows x 64), B ([N, K]: 256 rows), C.
// MANIFEST-LABEL: kernel ffn_ffn_bwd_dpre
// MANIFEST: tensor pre bf16 in [M, 1024]
// MANIFEST: tensormap dy_map of dy box [128, 64] swizzle 128
// MANIFEST-NEXT: tensormap w2_map of w2 box [256, 64] swizzle 128
// MANIFEST-NEXT: tensormap dpre_map of dpre box [64, 64] swizzle 128
// MANIFEST-NEXT: tensormap pre_map of pre box [64, 64] swizzle 128
// MANIFEST-NEXT: grid min(cdiv(M, 128) * 4 * 1, num_sms), 1, 1
// MANIFEST-NEXT: block 384, 1, 1
// MANIFEST-NEXT: shared 214128
// MANIFEST-LABEL: kernel ffn_ffn_up
// MANIFEST: tensormap w1_map of w1 box [64, 64] swizzle 128
// MANIFEST-LABEL: kernel ffn_forward_train_ffn_up
// MANIFEST: tensormap h_map of h box [64, 64] swizzle 128
// MANIFEST-NEXT: tensormap pre_map of pre box [64, 64] swizzle 128

// The tile IR: the schedule (nothing resident, a and b streamed) and the
// persistent order with the entry's group.
// TILE-LABEL: tile.kernel @ffn_ffn_bwd_dpre(
// TILE-SAME: grid_order = #tile.grid_order<order = persistent, group = 8>
// TILE-SAME: resident = [], ring = ["a", "b"], ring_stages = 3
// TILE-SAME: strategy = #tile.strategy<wgmma_ws_sm90>

// The hand rule: 128 x 256, 4 stages, groups of 8, for every plain GEMM; 3
// stages where the epilogue reads a tile (dpre's P); the weight gradients on
// the ws form split over K, 128 x 128 (below, SPLITK).
// HAND-LABEL: // ---- ffn_ffn_bwd_dpre ----
// HAND: static constexpr int kBlockN = 256, kStages = 3, kGroup = 8;
// HAND: flashc::device::gemm_ws<
// HAND-LABEL: // ---- ffn_ffn_bwd_dw2 ----
// HAND: static constexpr int kBlockN = 128, kStages = 4, kGroup = 8;
// HAND-NEXT: static constexpr int kSplitK = 4096;
// HAND: flashc::device::gemm_ws_split_k<
// HAND-LABEL: // ---- ffn_ffn_bwd_dx ----
// HAND: static constexpr int kBlockN = 256, kStages = 4, kGroup = 8;
// HAND-LABEL: // ---- ffn_ffn_up ----
// HAND: flashc::device::gemm_ws<
// A table entry pins the cp.async form: the backward keeps the split form
// (dh = dy·W2ᵀ, then the derivative elementwise).
// CP-ASYNC-NOT: gemm_ws<
// CP-ASYNC-LABEL: flashc_ffn_ffn_bwd_dh(
// CP-ASYNC-LABEL: flashc_ffn_ffn_bwd_act(
// CP-ASYNC-NOT: gemm_ws<

// SPLITK-LABEL: // ---- ffn_ffn_bwd_dw2 ----
// SPLITK: static constexpr bool kTransA = true, kTransB = false;
// SPLITK: static constexpr int kBlockN = 128, kStages = 4, kGroup = 8;
// SPLITK-NEXT: static constexpr int kSplitK = 4096;
// SPLITK: static_assert(Plan::kThreads == 384 && Plan::kSmemBytes == 132160,
// SPLITK: flashc_ffn_ffn_bwd_dw2(const flashc::TensorArg h, const flashc::TensorArg dy, const flashc::TensorArg dw2_accum, const __grid_constant__ flashc::TmaDescriptor h_map, const __grid_constant__ flashc::TmaDescriptor dy_map)
// SPLITK-NEXT: flashc::device::gemm_ws_split_k<flashc_ffn_ffn_bwd_dw2_config::Config>(h_map, dy_map, h, dy, dw2_accum, 1.000000000e+00f);
// SPLITK-LABEL: // ---- ffn_ffn_bwd_dw1 ----
// SPLITK-NEXT: // launches flashc_ffn_ffn_bwd_dw2 (its code is that kernel's but for names)
// The grid: min(units, SMs), a unit a (tile, slice) pair; no map of the f32 accumulator (its sums are reductions).
// SPLITK-MANIFEST-LABEL: kernel ffn_ffn_bwd_dw2
// SPLITK-MANIFEST: tensor dw2_accum f32 inout [1024, 512]
// SPLITK-MANIFEST-NEXT: tensormap h_map of h box [64, 64] swizzle 128
// SPLITK-MANIFEST-NEXT: tensormap dy_map of dy box [64, 64] swizzle 128
// SPLITK-MANIFEST-NEXT: grid min(8 * 4 * cdiv(M, 4096), num_sms), 1, 1
// SPLITK-MANIFEST-NEXT: block 384, 1, 1
// SPLITK-MANIFEST-NEXT: shared 132160

// OVERRIDE-LABEL: tile.kernel @ffn_ffn_bwd_dpre(
// OVERRIDE-SAME: block_n = 64 : i64
// OVERRIDE-SAME: strategy = #tile.strategy<wgmma_sm90>

// The gemm kind's space holds the ws points (those that fit: 256 columns with
// P's tile at 3 stages, not 4, unless the consumers ping-pong, whose 64-row A
// slots leave room for 4), each with ping_pong; so does split-K's, its hand
// rule first, without ping_pong (its units never take turns).
// SPACE: "kernel": "ffn_ffn_bwd_dpre"
// SPACE: "key": "sm_90a gemm bf16 m?n1024k512-tb-grad -"
// SPACE: "plan": "strategy=wgmma_ws_sm90 block_m=128 block_n=256 block_k=64 warps=8 stages=3 ping_pong=0 group=8",
// SPACE-NOT: block_n=256 block_k=64 warps=8 stages=4 ping_pong=0
// SPACE: strategy=wgmma_ws_sm90 block_m=128 block_n=256 block_k=64 warps=8 stages=3 ping_pong=0 group=8
// SPACE: strategy=wgmma_ws_sm90 block_m=128 block_n=128 block_k=64 warps=8 stages=4 ping_pong=0 group=8
// SPACE: strategy=wgmma_ws_sm90 block_m=128 block_n=256 block_k=64 warps=8 stages=4 ping_pong=1 group=8
// SPACE: "kernel": "ffn_ffn_bwd_dw2"
// SPACE: "plan": "strategy=wgmma_ws_sm90 block_m=128 block_n=128 block_k=64 warps=8 stages=4 group=8",
// SPACE: "candidates": [
// SPACE-NEXT: "strategy=wgmma_ws_sm90 block_m=128 block_n=128 block_k=64 warps=8 stages=4 group=8",
// SPACE-NOT: ping_pong
// SPACE: "strategy=wgmma_ws_sm90 block_m=128 block_n=256 block_k=64 warps=8 stages=4 group=8",
// SPACE-NOT: ping_pong
// SPACE: "strategy=wgmma_sm90 block_m=128 block_n=128
// SPACE: "kernel": "ffn_ffn_bwd_dx"

// GATED-LABEL: // ---- ffn_forward_train_ffn_up ----
// GATED: static constexpr Act kAct = Act::Silu;
// GATED-NEXT: static constexpr bool kBias = false, kSavePre = true;
// GATED-NEXT: static constexpr bool kBatched = false;
// GATED-NEXT: static constexpr bool kAccumulate = false;
// GATED-NEXT: static constexpr bool kActGrad = false;
// GATED-NEXT: static constexpr bool kGated = true;
// GATED-NEXT: static constexpr int kBlockN = 128, kStages = 4, kGroup = 8;
// GATED: static_assert(Plan::kThreads == 384 && Plan::kSmemBytes == 230464,
// x, W_gate, W_up; C = h; the saved g and u.
// GATED: gemm_ws<flashc_ffn_forward_train_ffn_up_config::Config>(x_map, w1_map, w_up_map, h_map, gate_map, up_map, x, w1, x, 1.000000000e+00f);

// (d = 128: the fused dpre's K is short, so its consumers ping-pong by the
// hand rule: 64-row boxes of A, the grid counted in 64-row tiles.)
// BATCHED-LABEL: kernel ffn_ffn_bwd_dpre
// BATCHED: tensormap dy_map of dy box [1, 64, 64] swizzle 128
// BATCHED-NEXT: tensormap w2_map of w2 box [256, 64] swizzle 128
// BATCHED-NEXT: tensormap dpre_map of dpre box [1, 64, 64] swizzle 128
// BATCHED-NEXT: tensormap pre_map of pre box [1, 64, 64] swizzle 128
// BATCHED-NEXT: grid min(2 * cdiv(M, 128) * 3 * Bf, num_sms), 1, 1
// BATCHED-LABEL: kernel ffn_ffn_bwd_dx
// BATCHED: tensormap dpre_map of dpre box [1, 128, 64] swizzle 128

// The tile of C is read into a buffer a piece, as act_grad's P: 3 stages at 256 columns.
// ACC-LABEL: // ---- ffn_ffn_bwd_dx_up ----
// ACC: static constexpr bool kAccumulate = true;
// ACC: static constexpr int kBlockN = 256, kStages = 3, kGroup = 8;
// ACC: static_assert(Plan::kThreads == 384 && Plan::kSmemBytes == 214128,
// ACC: flashc::device::gemm_ws<

// REFUSED: error: flash-plan-memory: tuning table entry {{.*}}tuning-gemm-ws-refused.txt:2 asks for strategy wgmma_ws_sm90, which is not in the tuning space of @ffn_ffn_bwd_dh (sm_90a gemm bf16 m?n1001k77-tb -): the warp-specialised GEMM does not take it, a tensor's rows are 77 elements wide: TMA maps need a static multiple of 8

// UNFIT-NOT: act_grad = true
// UNFIT-LABEL: tile.kernel @ffn_ffn_bwd_dh(
// UNFIT-LABEL: tile.kernel @ffn_ffn_bwd_act(
