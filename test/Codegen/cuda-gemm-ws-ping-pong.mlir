// The persistent GEMM's consumers ping-ponging (gemm_ws.cuh kPingPong): the
// two consumer warpgroups take 64-row tiles in turn, so one's epilogue runs
// under the other's products. The hand rule for the fused dpre,
// dpre = (dy·W2ᵀ) ∘ gelu'(pre), at a static K of at most 256 (its epilogue of
// ~10 operations an element outlasts four K blocks of products; on the H200
// 144 -> 129 us at d = 256); a tuning-table knob (`ping_pong`) of the plain
// and gated GEMMs elsewhere, never of split-K's units.
// RUN: flashc %S/Inputs/ffn-d256.mlir --emit=cuda -o - | FileCheck %s --check-prefix=HAND
// RUN: rm -rf %t.bundle && flashc %S/Inputs/ffn-d256.mlir --emit=bundle --arch=sm_90a -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc
// RUN: flashc %S/Inputs/ffn-d256.mlir --emit=tile -o - | FileCheck %s --check-prefix=TILE
// RUN: flashc %S/Inputs/ffn-d256.mlir --tuning-table=%S/Inputs/tuning-gemm-ws-ping-pong.txt --emit=cuda -o - | FileCheck %s --check-prefix=TABLE
// RUN: not flashc %S/Inputs/ffn-d256.mlir --tuning-table=%S/Inputs/tuning-gemm-ws-split-k-ping-pong.txt --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=SPLITK
// RUN: flashc %S/Inputs/ffn-d256.mlir --tuning-table=%S/Inputs/tuning-gemm-ws-ping-pong-off.txt --emit=tile -o - | FileCheck %s --check-prefix=OFF
// A hand-edited split-K kernel whose schedule ping-pongs: the kernel verifier refuses it.
// RUN: flashc %S/Inputs/ffn-d256.mlir --emit=tile -o %t.tile.mlir
// RUN: sed -e '/tile.kernel @ffn_ffn_bwd_dw2(/s/ping_pong = false/ping_pong = true/' %t.tile.mlir > %t.split-pp.mlir
// RUN: not flash-opt %t.split-pp.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=VERIFY
// At d = 1024 (K = 1024) the hand rule keeps the cooperative form.
// RUN: flashc %S/Inputs/ffn-d1024.mlir --emit=cuda -o - | FileCheck %s --check-prefix=LONG

// HAND-LABEL: // ---- ffn_ffn_bwd_dpre ----
// HAND: static constexpr bool kActGrad = true;
// 64-row A slots (8 KB) leave room for 4 stages beside the 256-column tile of pre.
// HAND: static constexpr int kBlockN = 256, kStages = 4, kGroup = 8;
// HAND: static constexpr bool kPingPong = true;
// 4 x (8 + 32) KB of ring, 2 warpgroups x 4 pieces of 8 KB, 16 mbarriers, 1 KB of alignment.
// HAND: static_assert(Plan::kThreads == 384 && Plan::kSmemBytes == 230528,
// dx = dpre·W1ᵀ contracts over h = 1024: cooperative.
// HAND-LABEL: // ---- ffn_ffn_bwd_dx ----
// HAND: static constexpr bool kPingPong = false;

// A's box is a ping-pong tile's 64 rows; the grid counts 64-row tiles (twice
// the plan's 128-row blocks), at most one block an SM.
// MANIFEST-LABEL: kernel ffn_ffn_bwd_dpre
// MANIFEST: tensormap dy_map of dy box [64, 64] swizzle 128
// MANIFEST-NEXT: tensormap w2_map of w2 box [256, 64] swizzle 128
// MANIFEST-NEXT: tensormap dpre_map of dpre box [64, 64] swizzle 128
// MANIFEST-NEXT: tensormap pre_map of pre box [64, 64] swizzle 128
// MANIFEST-NEXT: grid min(2 * cdiv(M, 128) * 4 * 1, num_sms), 1, 1
// MANIFEST-NEXT: block 384, 1, 1
// MANIFEST-NEXT: shared 230528
// MANIFEST-LABEL: kernel ffn_ffn_bwd_dx
// MANIFEST: tensormap dpre_map of dpre box [128, 64] swizzle 128
// MANIFEST: grid min(cdiv(M, 128) * 1 * 1, num_sms), 1, 1

// The schedule says it (flash-warp-specialize); the emitter only prints it.
// TILE-LABEL: tile.kernel @ffn_ffn_bwd_dpre(
// TILE-SAME: ring_stages = 4, ping_pong = true>
// TILE-LABEL: tile.kernel @ffn_ffn_bwd_dx(
// TILE-SAME: ping_pong = false>

// A table entry overrides the hand rule either way.
// TABLE-LABEL: // ---- ffn_ffn_bwd_dpre ----
// TABLE: static constexpr int kBlockN = 256, kStages = 3, kGroup = 8;
// TABLE: static constexpr bool kPingPong = false;
// TABLE: static_assert(Plan::kThreads == 384 && Plan::kSmemBytes == 214128,
// TABLE-LABEL: // ---- ffn_ffn_bwd_dx ----
// TABLE: static constexpr int kBlockN = 128, kStages = 4, kGroup = 8;
// TABLE: static constexpr bool kPingPong = true;

// SPLITK: tuning-gemm-ws-split-k-ping-pong.txt:2: field 'ping_pong' does not apply to gemm_split_k kernels
// VERIFY: error: 'tile.kernel' op schedule ping-pongs, which a GEMM split over K (#tile.gemm<role = gemm_split_k>) does not

// LONG-LABEL: // ---- ffn_ffn_bwd_dpre ----
// LONG: static constexpr bool kPingPong = false;

// An entry that turns ping-pong off without a depth: the fused dpre stays on
// the ws form with the deepest ring the cooperative plan fits (not the hand
// rule's 4, chosen for ping-pong, which would not fit and demote it).
// OFF-LABEL: tile.kernel @ffn_ffn_bwd_dpre(
// OFF-SAME: ring_stages = 3, ping_pong = false>
// OFF-SAME: strategy = #tile.strategy<wgmma_ws_sm90>
