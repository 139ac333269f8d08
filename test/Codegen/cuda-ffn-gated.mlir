// A gated FFN (SwiGLU). The training forward's kernel (save_pre; here the
// fused one, with flash-tile's ffn-plan=two-kernel the gated_gemm up
// projection) writes g = x·Wg, u = x·Wu and h = silu(g) ∘ u; the backward runs
// dh = dy·W2ᵀ as a plain GEMM, then the elementwise kernel reads dh and the
// saved g and u: du = dh ∘ silu(g), dg = (dh ∘ silu'(g)) ∘ u (the device
// library's ffn_activation_grad). A tuning-table entry (key ...-grad-gated)
// plans the derivative into the first GEMM's epilogue instead (act_grad,
// gated: D = dy·W2ᵀ stays in registers, the saved g and u tiles are loaded by
// TMA under the products, dg and du leave by TMA): FUSED below. It is not the
// hand rule: at d = 4096 it ran slower than the two kernels it replaces.
// RUN: flashc %s --emit=tile -o - | FileCheck %s
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: flashc %s --emit=cubin --arch=sm_90a --ptxas-report -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-gated-act-grad.txt --emit=tile -o - | FileCheck %s --check-prefix=FUSED-TILE
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-gated-act-grad.txt --emit=cuda -o - | FileCheck %s --check-prefix=FUSED
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-gemm-gated-act-grad.txt --emit=cubin --arch=sm_90a --ptxas-report -o %t.fused.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS-FUSED
// The two-GEMM plan (flash-tile's ffn-plan), compiled on by flashc:
// RUN: flash-opt %s --flash-generate-backward --flash-tile=ffn-plan=two-kernel > %t.two.mlir
// RUN: flashc %t.two.mlir --emit=tile -o - | FileCheck %s --check-prefix=TWO
// Its gated_gemm up projection is by default the persistent warp-specialised GEMM (gemm_ws, kGated: both weights'
// 128-column blocks in one slot); a table entry pins the cp.async form, whose code CUDA-TWO checks.
// RUN: flashc %t.two.mlir --tuning-table=%S/Inputs/tuning-gemm-cp-async.txt --emit=cuda -o - | FileCheck %s --check-prefix=CUDA-TWO
// RUN: flashc %t.two.mlir --emit=cuda -o - | FileCheck %s --check-prefix=CUDA-TWO-WS
// RUN: flashc %t.two.mlir --emit=cubin --arch=sm_90a --ptxas-report -o %t.two.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS-TWO

func.func @ffn(%x: tensor<?x64xbf16>, %w_gate: tensor<64x256xbf16>, %w_up: tensor<64x256xbf16>,
               %w2: tensor<256x64xbf16>) -> tensor<?x64xbf16> {
  %y = flash.ffn silu %x, %w_gate up %w_up, %w2
      : (tensor<?x64xbf16>, tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// The entry's plan: 128 columns (the two read tiles' pieces beside a 4-stage
// ring), the consumers ping-ponging (K = d = 64 is short).
// FUSED-TILE-LABEL: tile.kernel @ffn_ffn_bwd_dpre
// FUSED-TILE-SAME: block_m = 128 : i64, block_n = 128 : i64
// FUSED-TILE-SAME: ring_stages = 4, ping_pong = true
// FUSED-TILE-SAME: role = gemm, activation = silu, transpose_a = false, transpose_b = true
// FUSED-TILE-SAME: gated = true
// FUSED-TILE-SAME: act_grad = true
// The tile body (what the CPU executor runs): D in registers, g and u loaded;
// du = D ∘ silu(g) stored, then dg = (D ∘ silu'(g)) ∘ u.
// FUSED-TILE: %[[D:.*]] = scf.for
// FUSED-TILE: tile.matmul {{.*}} transpose_b
// FUSED-TILE: %[[GS:.*]] = tile.load %arg2
// FUSED-TILE-NEXT: %[[G:.*]] = tile.convert %[[GS]] : <128x128xbf16, shared> -> <128x128xf32, register>
// FUSED-TILE-NEXT: %[[US:.*]] = tile.load %arg3
// FUSED-TILE-NEXT: %[[U:.*]] = tile.convert %[[US]] : <128x128xbf16, shared> -> <128x128xf32, register>
// FUSED-TILE-NEXT: %[[ACT:.*]] = tile.activation silu %[[G]]
// FUSED-TILE-NEXT: %[[DU:.*]] = tile.mul %[[D]], %[[ACT]]
// FUSED-TILE-NEXT: %[[DU16:.*]] = tile.convert %[[DU]]
// FUSED-TILE-NEXT: tile.store %[[DU16]], %arg5
// FUSED-TILE-NEXT: %[[DGRAD:.*]] = tile.activation_grad silu %[[D]], %[[G]]
// FUSED-TILE-NEXT: %[[DG:.*]] = tile.mul %[[DGRAD]], %[[U]]
// FUSED-TILE-NEXT: %[[DG16:.*]] = tile.convert %[[DG]]
// FUSED-TILE-NEXT: tile.store %[[DG16]], %arg4
// FUSED-TILE-NOT: tile.kernel @ffn_ffn_bwd_act
// The backward reads the saved gate, up and h (before dy) and recomputes nothing.
// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_dh
// CHECK-SAME: block_m = 128 : i64, block_n = 256 : i64
// CHECK-SAME: role = gemm, activation = identity, transpose_a = false, transpose_b = true
// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_act
// CHECK-SAME: role = ffn_activation_grad, activation = silu
// CHECK-SAME: gated = true
// CHECK-LABEL: func.func @ffn_backward(
// CHECK-SAME: tile.name = "gate"
// CHECK-SAME: tile.name = "up"
// CHECK-SAME: tile.name = "h"
// CHECK-SAME: tile.name = "dy"
// CHECK: tile.launch @ffn_ffn_bwd_dh(%arg7, %arg3, %[[DH:.*]]) :
// CHECK: tile.launch @ffn_ffn_bwd_act(%[[DH]], %arg4, %arg5, %{{.*}}, %{{.*}}) :
// CHECK: tile.launch @ffn_ffn_bwd_dw2(%arg6, %arg7,
// FUSED-TILE-LABEL: func.func @ffn_backward(
// FUSED-TILE: tile.launch @ffn_ffn_bwd_dpre(%arg7, %arg3, %arg4, %arg5, %[[DG:.*]], %[[DUP:.*]]) :
// FUSED-TILE: tile.launch @ffn_ffn_bwd_dw2(%arg6, %arg7,
// CHECK-LABEL: tile.kernel @ffn_forward_train_ffn_fused
// CHECK-SAME: role = ffn_fused, activation = silu
// CHECK-SAME: save_pre = true
// CHECK-LABEL: func.func @ffn_forward_train(
// CHECK-SAME: tile.name = "y"
// CHECK-SAME: tile.name = "gate"
// CHECK-SAME: tile.name = "up"
// CHECK-SAME: tile.name = "h"
// CHECK: tile.launch @ffn_forward_train_ffn_fused(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7) :
// TWO-LABEL: tile.kernel @ffn_forward_train_ffn_up
// TWO-SAME: role = gated_gemm, activation = silu
// TWO-SAME: save_pre = true
// TWO-LABEL: func.func @ffn_forward_train(
// TWO: tile.launch @ffn_forward_train_ffn_up(%arg0, %arg1, %arg2, %arg5, %arg6, %arg7) :
// TWO: tile.launch @ffn_forward_train_ffn_down(%arg7, %arg3, %arg4) :

// The gated act_grad on the persistent GEMM: both read tiles' maps, both
// written ones' (dg through C's, du through the second output's).
// FUSED-LABEL: // ---- ffn_ffn_bwd_dpre ----
// FUSED: static constexpr bool kActGrad = true;
// FUSED: static constexpr int kBlockN = 128, kStages = 4, kGroup = 8;
// FUSED-NEXT: static constexpr bool kGatedActGrad = true;
// FUSED: static constexpr bool kPingPong = true;
// 4 x (8 + 16) KB of ring, 2 warpgroups x 4 pieces of 8 KB, 16 mbarriers, 1 KB of alignment.
// FUSED: static_assert(Plan::kThreads == 384 && Plan::kSmemBytes == 164992,
// FUSED: flashc::device::gemm_ws_gated_act_grad<flashc_ffn_ffn_bwd_dpre_config::Config>(dy_map, w2_map, dgate_map, dup_map, gate_map, up_map, dy, w2, 1.000000000e+00f);
// CUDA-LABEL: namespace flashc_ffn_ffn_bwd_act_config {
// CUDA: static constexpr flashc::device::Act kAct = flashc::device::Act::Silu;
// CUDA-NEXT: static constexpr bool kGated = true, kBatched = false;
// CUDA: flashc::device::ffn_activation_grad<flashc_ffn_ffn_bwd_act_config::Config>(dh, gate, up, dgate, dup);
// The training forward's fused kernel: per hidden block g and u stored from the
// accumulators, then h, the A operand of ·W2.
// CUDA-LABEL: flashc_ffn_forward_train_ffn_fused(
// CUDA: store_tile<kThreads>(matrix_view<bf16>(gate), row0, h0, M, hidden, g16);
// CUDA: store_tile<kThreads>(matrix_view<bf16>(up), row0, h0, M, hidden, u16);
// CUDA: activation<Act::Silu, true>(
// CUDA: store_tile<kThreads>(matrix_view<bf16>(h), row0, h0, M, hidden, hidden16);
// CUDA: store_tile<kThreads>(matrix_view<bf16>(y),
// The two-kernel plan's up kernel: g and u stored from the accumulators, then h.
// CUDA-TWO-LABEL: flashc_ffn_forward_train_ffn_up(
// CUDA-TWO: store_tile<kThreads>(matrix_view<bf16>(gate),
// CUDA-TWO: store_tile<kThreads>(matrix_view<bf16>(up),
// CUDA-TWO: activation<Act::Silu, true>(
// CUDA-TWO: store_tile<kThreads>(matrix_view<bf16>(h),
// CUDA-TWO-WS-LABEL: // ---- ffn_forward_train_ffn_up ----
// CUDA-TWO-WS: static constexpr bool kGated = true;
// CUDA-TWO-WS: gemm_ws<flashc_ffn_forward_train_ffn_up_config::Config>(x_map, w1_map, w_up_map, h_map, gate_map, up_map,

// PTXAS: Compiling entry function 'flashc_ffn_forward_train_ffn_fused'
// PTXAS-NEXT: Function properties
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-TWO: Compiling entry function 'flashc_ffn_forward_train_ffn_up'
// PTXAS-TWO-NEXT: Function properties
// PTXAS-TWO-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// The elementwise kernel within 64 registers (8 blocks of 128 threads an SM): at most a few bytes of spill.
// PTXAS: Compiling entry function 'flashc_ffn_ffn_bwd_act'
// PTXAS-NEXT: Function properties
// PTXAS-NEXT: {{[0-9]}} bytes stack frame, {{[0-9]}} bytes spill stores, {{[0-9]}} bytes spill loads
// The fused form: no spill.
// PTXAS-FUSED: Compiling entry function 'flashc_ffn_ffn_bwd_dpre'
// PTXAS-FUSED-NEXT: Function properties
// PTXAS-FUSED-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
