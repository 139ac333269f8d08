// The persistent GEMM with its last, partial wave of tiles split over K (gemm_ws.cuh kSplitTail, tail_split.cuh):
// a grid of G blocks over T tiles takes ceil(T / G) tile-times with whole tiles; the first floor(T / G) waves stay
// whole and the K blocks of the R = T mod G tiles left are dealt out in equal runs, so the kernel takes
// floor(T / G) + R · k_blocks / (G · k_blocks) of them. A tile of the tail is summed by the blocks whose runs cross
// it: each earlier one leaves its partial in its f32 slot and raises its flag, the one holding the tile's last K
// block adds them (sum over the slots) and runs the epilogue. A tuning-table knob (`split_tail`) of plain GEMMs on
// the cooperative form; flash-order-blocks gives the kernel its workspace (partials f32 [SMs, 128 · 256], flags
// i32 [SMs], zeroed), allocated by each program that launches it.
// RUN: flashc %S/Inputs/ffn-d1024.mlir --tuning-table=%S/Inputs/tuning-gemm-ws-split-tail.txt --emit=tile -o - | FileCheck %s --check-prefix=TILE
// RUN: flashc %S/Inputs/ffn-d1024.mlir --tuning-table=%S/Inputs/tuning-gemm-ws-split-tail.txt --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: rm -rf %t.bundle && flashc %S/Inputs/ffn-d1024.mlir --tuning-table=%S/Inputs/tuning-gemm-ws-split-tail.txt --emit=bundle --arch=sm_90a -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc
// The hand rule does not split (opt-in until the H200 says otherwise).
// RUN: flashc %S/Inputs/ffn-d1024.mlir --emit=tile -o - | FileCheck %s --check-prefix=HAND
// At d = 256 the ping-pong dpre does not take it (its tuning attribute does not name the knob), dx does.
// RUN: flashc %S/Inputs/ffn-d256.mlir --tuning-table=%S/Inputs/tuning-gemm-ws-split-tail.txt --emit=tile -o - | FileCheck %s --check-prefix=D256
// The table refuses it with ping-pong consumers.
// RUN: not flashc %S/Inputs/ffn-d1024.mlir --tuning-table=%S/Inputs/tuning-gemm-ws-split-tail-ping-pong.txt --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=PINGPONG
// A hand-edited kernel that splits its tail without the workspace: the kernel verifier refuses it.
// RUN: flashc %S/Inputs/ffn-d1024.mlir --emit=tile -o %t.tile.mlir
// RUN: sed -e '/tile.kernel @ffn_ffn_bwd_dx(/s/group = 8>/group = 8, split_tail = true>/' %t.tile.mlir > %t.no-workspace.mlir
// RUN: not flash-opt %t.no-workspace.mlir -o /dev/null 2>&1 | FileCheck %s --check-prefix=VERIFY
// The CPU executor runs the programs with the workspace (which only the GPU's tail uses).
// RUN: flash-run-tile %S/../Numerics/ffn-bf16.mlir --backward --tolerance=2e-2 --tuning-table=%S/Inputs/tuning-gemm-ws-split-tail.txt | FileCheck %s --check-prefix=EXEC

// dx = dpre·W1ᵀ: the workspace follows its tensors, the order says so, the tuning attribute names the knob.
// TILE-LABEL: tile.kernel @ffn_ffn_bwd_dx(
// TILE-SAME: %[[PARTIALS:.*]]: !tile.tensor<?x32768xf32>, %[[FLAGS:.*]]: !tile.tensor<?xi32>)
// TILE-SAME: grid_order = #tile.grid_order<order = persistent, group = 8, split_tail = true>
// TILE-SAME: split_tail = true
// The backward program allocates it from the device's SM count, the flags zeroed, and passes it last.
// TILE-LABEL: func.func @ffn_backward(
// TILE: %[[SMS:[0-9]+]] = tile.sm_count
// TILE-NEXT: tile.alloc_tensor(%[[SMS]]) {tile.name = "ffn_ffn_bwd_dpre_tail_partials"} : <?x32768xf32>
// TILE: %[[SMS2:[0-9]+]] = tile.sm_count
// TILE-NEXT: %[[P:.*]] = tile.alloc_tensor(%[[SMS2]]) {tile.name = "ffn_ffn_bwd_dw2_tail_partials"} : <?x32768xf32>
// TILE: %[[P:.*]] = tile.alloc_tensor(%{{[0-9]+}}) {tile.name = "ffn_ffn_bwd_dx_tail_partials"} : <?x32768xf32>
// TILE-NEXT: %[[F:.*]] = tile.alloc_tensor(%{{[0-9]+}}) {tile.name = "ffn_ffn_bwd_dx_tail_flags", tile.zero_fill} : <?xi32>
// TILE-NEXT: tile.launch @ffn_ffn_bwd_dx(%{{.*}}, %{{.*}}, %{{.*}}, %[[P]], %[[F]])

// CUDA-LABEL: // ---- ffn_ffn_bwd_dx ----
// CUDA: static constexpr bool kSplitTail = true;
// CUDA: flashc_ffn_ffn_bwd_dx(const flashc::TensorArg dpre, const flashc::TensorArg w1, const flashc::TensorArg dx, const flashc::TensorArg ffn_ffn_bwd_dx_tail_partials, const __grid_constant__ flashc::TensorArg ffn_ffn_bwd_dx_tail_flags,
// CUDA: flashc::device::gemm_ws<flashc_ffn_ffn_bwd_dx_config::Config>({{.*}}, 1.000000000e+00f, ffn_ffn_bwd_dx_tail_partials, ffn_ffn_bwd_dx_tail_flags);

// The workspace is the program's scratch: written and read by the kernel, the flags zeroed before the program.
// MANIFEST-LABEL: kernel ffn_ffn_bwd_dx
// MANIFEST: tensor ffn_ffn_bwd_dx_tail_partials f32 inout [num_sms, 32768] contiguous
// MANIFEST-NEXT: tensor ffn_ffn_bwd_dx_tail_flags i32 inout [num_sms] contiguous
// MANIFEST-LABEL: program ffn_backward
// MANIFEST: scratch ffn_ffn_bwd_dx_tail_partials
// MANIFEST-NEXT: scratch ffn_ffn_bwd_dx_tail_flags zero

// HAND-NOT: split_tail
// HAND-NOT: tail_partials

// D256-LABEL: tile.kernel @ffn_ffn_bwd_dpre(
// D256-NOT: tail
// D256-SAME: grid_order = #tile.grid_order<order = persistent, group = 8>
// D256-NOT: split_tail
// D256-SAME: tuning = {entry = "{{.*}}tuning-gemm-ws-split-tail.txt:2", key = "sm_90a gemm bf16 m?n1024k256-tb-grad -"}
// D256-LABEL: tile.kernel @ffn_ffn_bwd_dx(
// D256-SAME: grid_order = #tile.grid_order<order = persistent, group = 8, split_tail = true>

// PINGPONG: tuning-gemm-ws-split-tail-ping-pong.txt:1: split_tail=1 with ping_pong=1 or resident_b=1: the last wave is split over K on the cooperative persistent GEMM only

// VERIFY: 'tile.kernel' op grid_order split_tail needs the workspace as the last two arguments: the partial sums (f32, rank 2) and their flags (i32, rank 1)

// EXEC: @bf16_swiglu backward d_x: {{.*}} ok
// EXEC-NOT: FAIL
