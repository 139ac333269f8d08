// The persistent GEMM with B resident (gemm_resident_b.cuh): at a static K of
// at most 256 a block takes a contiguous run of 64-row tiles in
// column-block-major order and keeps B's column block (all of K) in shared
// memory over the run, streaming only A's tiles (and the fused dpre's tile of
// P); its consumers take the tiles in turn. A point of the gemm tuning space
// (`resident_b=1`), not a hand rule: on the H200 the fused dpre at d = 256
// ran at 0.97x the ping-pong gemm_ws (session 30 call 3).
// RUN: flashc %S/Inputs/ffn-d256.mlir --tuning-table=%S/Inputs/tuning-gemm-resident-b.txt --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: rm -rf %t.bundle && flashc %S/Inputs/ffn-d256.mlir --tuning-table=%S/Inputs/tuning-gemm-resident-b.txt --emit=bundle --arch=sm_90a -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc
// RUN: flashc %S/Inputs/ffn-d256.mlir --tuning-table=%S/Inputs/tuning-gemm-resident-b.txt --emit=tile -o %t.tile.mlir
// RUN: FileCheck %s --check-prefix=TILE < %t.tile.mlir
// Without the entry the dpre keeps the hand rule's gemm_ws (ping-pong); at K = 1024 the form does not take it.
// RUN: flashc %S/Inputs/ffn-d256.mlir --emit=tile -o - | FileCheck %s --check-prefix=HAND
// RUN: flashc %S/Inputs/ffn-d1024.mlir --tuning-table=%S/Inputs/tuning-gemm-resident-b-all.txt --emit=tile -o - 2>&1 | FileCheck %s --check-prefix=LONG
// RUN: flashc %S/Inputs/ffn-d256.mlir --tuning-table=%S/Inputs/tuning-gemm-resident-b-all.txt --emit=tile -o - 2>&1 | FileCheck %s --check-prefix=ALL
// The space holds the resident points (128 columns, 3 or 2 slots of A) for the dpre's key only.
// RUN: flashc %S/Inputs/ffn-d256.mlir --print-tuning-space -o - | FileCheck %s --check-prefix=SPACE
// Entries the form cannot take: a 256-column slab at K = 256 (no room: the backward keeps its split form), the
// consumers not taking turns, a gated GEMM.
// RUN: flashc %S/Inputs/ffn-d256.mlir --tuning-table=%S/Inputs/tuning-gemm-resident-b-unfit.txt --emit=tile -o - | FileCheck %s --check-prefix=UNFIT
// RUN: not flashc %S/Inputs/ffn-d256.mlir --tuning-table=%S/Inputs/tuning-gemm-resident-b-no-turns.txt --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=TURNS
// RUN: not flashc %S/Inputs/ffn-d256.mlir --tuning-table=%S/Inputs/tuning-gemm-resident-b-gated.txt --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=GATED
// A hand-edited schedule keeping B resident without turns: the kernel verifier refuses it.
// RUN: sed -e '/tile.kernel @ffn_ffn_bwd_dpre(/s/ring_stages = 3, ping_pong = true/ring_stages = 3, ping_pong = false/' %t.tile.mlir > %t.no-turns.mlir
// RUN: not flash-opt %t.no-turns.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=VERIFY

// CUDA-LABEL: // ---- ffn_ffn_bwd_dpre ----
// CUDA: the device library's gemm_resident_b
// CUDA: static constexpr bool kTransB = true;
// CUDA: static constexpr bool kActGrad = true;
// An entry without a width: 128 columns (a 64 KB slab of B at K = 256), the deepest ring that fits.
// CUDA: static constexpr int kBlockN = 128, kResidentK = 256, kStages = 3;
// CUDA: static constexpr bool kPingPong = true;
// B 4 x 16 KB, A 3 x 4 x 8 KB, the tile buffers 2 warpgroups x 2 x 16 KB, 16 mbarriers, 1 KB of alignment.
// CUDA: using Plan = GemmResidentBPlan<Config>;
// CUDA-NEXT: static_assert(Plan::kThreads == 384 && Plan::kSmemBytes == 230528,
// The library's maps: A, B, C, then P.
// CUDA: flashc::device::gemm_resident_b<flashc_ffn_ffn_bwd_dpre_config::Config>(dy_map, w2_map, dpre_map, pre_map, dy, w2, dy, 1.000000000e+00f);
// dx = dpre·W1ᵀ contracts over h = 1024: gemm_ws.
// CUDA-LABEL: // ---- ffn_ffn_bwd_dx ----
// CUDA: flashc::device::gemm_ws<

// A's box a 64-row tile's K block, B's 128 rows of [N, K]; the grid counts 64-row tiles, at most one block an SM.
// MANIFEST-LABEL: kernel ffn_ffn_bwd_dpre
// MANIFEST: tensormap dy_map of dy box [64, 64] swizzle 128
// MANIFEST-NEXT: tensormap w2_map of w2 box [128, 64] swizzle 128
// MANIFEST-NEXT: tensormap dpre_map of dpre box [64, 64] swizzle 128
// MANIFEST-NEXT: tensormap pre_map of pre box [64, 64] swizzle 128
// MANIFEST-NEXT: grid min(2 * cdiv(M, 128) * 8 * 1, num_sms), 1, 1
// MANIFEST-NEXT: block 384, 1, 1
// MANIFEST-NEXT: shared 230528

// The schedule says it (flash-warp-specialize: b resident, a in the ring, turns); the tuning attribute names the knob.
// TILE-LABEL: tile.kernel @ffn_ffn_bwd_dpre(
// TILE-SAME: block_n = 128
// TILE-SAME: resident = ["b"], ring = ["a"], ring_stages = 3, ping_pong = true>
// TILE-SAME: resident_b = true
// TILE-LABEL: tile.kernel @ffn_ffn_bwd_dx(
// TILE-SAME: resident = [], ring = ["a", "b"]

// HAND-LABEL: tile.kernel @ffn_ffn_bwd_dpre(
// HAND-SAME: resident = [], ring = ["a", "b"], ring_stages = 4, ping_pong = true>

// An entry for every plain GEMM: at d = 1024 (K = 1024 everywhere) no kernel keeps B resident, and nothing errs.
// LONG-NOT: error
// LONG-NOT: resident = ["b"]
// LONG-LABEL: tile.kernel @ffn_ffn_bwd_dpre(
// LONG-SAME: resident = [], ring = ["a", "b"]
// (Its tuning attribute names the entry but not a knob the kernel cannot take.)
// LONG-NOT: resident_b
// LONG-SAME: tuning = {entry = "{{.*}}tuning-gemm-resident-b-all.txt:1", key = "sm_90a gemm bf16 m?n4096k1024-tb-grad -"}
// LONG-NOT: resident = ["b"]
// At d = 256 it takes the dpre (K = 256) only, not dx (K = 1024).
// ALL-NOT: error
// ALL-LABEL: tile.kernel @ffn_ffn_bwd_dpre(
// ALL-SAME: resident = ["b"], ring = ["a"]
// ALL-LABEL: tile.kernel @ffn_ffn_bwd_dx(
// ALL-SAME: resident = [], ring = ["a", "b"]

// SPACE: "kernel": "ffn_ffn_bwd_dpre"
// SPACE: "plan": "strategy=wgmma_ws_sm90 block_m=128 block_n=256 block_k=64 warps=8 stages=4 ping_pong=1 group=8 resident_b=0"
// SPACE: "strategy=wgmma_ws_sm90 block_m=128 block_n=128 block_k=64 warps=8 stages=3 ping_pong=1 group=8 resident_b=1"
// SPACE-NEXT: "strategy=wgmma_ws_sm90 block_m=128 block_n=128 block_k=64 warps=8 stages=2 ping_pong=1 group=8 resident_b=1"
// SPACE: "kernel": "ffn_ffn_bwd_dw2"
// SPACE-NOT: resident_b
// SPACE: "kernel": "ffn_ffn_bwd_dx"
// SPACE-NOT: resident_b=1
// SPACE: "kernel": "ffn_ffn_fused"

// UNFIT-NOT: tile.kernel @ffn_ffn_bwd_dpre(
// UNFIT: tile.kernel @ffn_ffn_bwd_dh(
// UNFIT: tile.kernel @ffn_ffn_bwd_act(

// TURNS: tuning-gemm-resident-b-no-turns.txt:1: resident_b=1 with ping_pong=0: the resident-B GEMM's consumers always take its tiles in turn
// GATED: tuning-gemm-resident-b-gated.txt:1: field 'resident_b' does not apply to gated_gemm kernels
// VERIFY: error: 'tile.kernel' op schedule keeps a GEMM operand resident but does not ping-pong
