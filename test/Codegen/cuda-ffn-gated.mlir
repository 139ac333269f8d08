// A gated FFN (SwiGLU). The training forward's kernel (save_pre; here the
// fused one, with --ffn-plan=two-kernel the gated_gemm up projection) writes
// g = x·Wg, u = x·Wu and h = silu(g) ∘ u; the backward's
// hidden kernel runs dh = dy·W2ᵀ with one accumulator and reads the saved g
// and u in the epilogue:
//   du = dh ∘ silu(g), dg = (dh ∘ silu'(g)) ∘ u,
// in that order, so that at most three f32 tiles are live (dh and g die before
// u is converted). 128 x 128 on sm_90a without spills (it spilled 84 bytes
// while it also wrote h: bench/results/2026-12-01-h200-session11.md).
// RUN: flashc %s --emit=tile -o - | FileCheck %s
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: flashc %s --emit=cubin --arch=sm_90a --ptxas-report -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// The two-GEMM plan (flash-tile's ffn-plan), compiled on by flashc:
// RUN: flash-opt %s --flash-generate-backward --flash-tile=ffn-plan=two-kernel > %t.two.mlir
// RUN: flashc %t.two.mlir --emit=tile -o - | FileCheck %s --check-prefix=TWO
// RUN: flashc %t.two.mlir --emit=cuda -o - | FileCheck %s --check-prefix=CUDA-TWO
// RUN: flashc %t.two.mlir --emit=cubin --arch=sm_90a --ptxas-report -o %t.two.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS-TWO

func.func @ffn(%x: tensor<?x64xbf16>, %w_gate: tensor<64x256xbf16>, %w_up: tensor<64x256xbf16>,
               %w2: tensor<256x64xbf16>) -> tensor<?x64xbf16> {
  %y = flash.ffn silu %x, %w_gate up %w_up, %w2
      : (tensor<?x64xbf16>, tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_hidden
// CHECK-SAME: block_m = 128 : i64, block_n = 128 : i64
// CHECK-SAME: stages = 4 : i64, strategy = #tile.strategy<wgmma_sm90>
// The backward reads the saved gate, up and h (before dy) and recomputes nothing.
// CHECK-LABEL: func.func @ffn_backward(
// CHECK-SAME: tile.name = "gate"
// CHECK-SAME: tile.name = "up"
// CHECK-SAME: tile.name = "h"
// CHECK-SAME: tile.name = "dy"
// CHECK-NOT: role = gemm, activation = identity, transpose_a = false, transpose_b = false
// CHECK: tile.launch @ffn_ffn_bwd_hidden(%arg7, %arg3, %arg4, %arg5, %{{.*}}, %{{.*}}) :
// CHECK: tile.launch @ffn_ffn_bwd_dw2(%arg6, %arg7,
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

// The g and u tiles are issued before the product loop and land under it
// (waited for with the loop's last buffers, not after it).
// CUDA-LABEL: flashc_ffn_ffn_bwd_hidden(
// CUDA: load_tile_async<kThreads>([[G:gate_tile]], matrix_view<bf16>(gate), row0, h0, M, hidden);
// CUDA-NEXT: cp_async_commit();
// CUDA: load_tile_async<kThreads>([[U:up_tile]], matrix_view<bf16>(up), row0, h0, M, hidden);
// CUDA-NEXT: cp_async_commit();
// CUDA: for (int k_step
// CUDA: wgmma_matmul_tb<false>(dh,
// CUDA: cp_async_wait<0>();
// CUDA-NEXT: fence_async_shared();
// CUDA-NEXT: __syncthreads();  // the last iteration's buffers are free for what follows
// CUDA-NEXT: RegTileF32<128, 128, kWarps> g;
// CUDA-NEXT: convert(g, [[G]]);
// CUDA-NOT: cp_async_wait
// CUDA: store_tile<kThreads>(matrix_view<bf16>(dup),
// CUDA: convert(u, [[U]]);
// CUDA-NOT: matrix_view<bf16>(h)
// CUDA: store_tile<kThreads>(matrix_view<bf16>(dgate),
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

// PTXAS: Compiling entry function 'flashc_ffn_forward_train_ffn_fused'
// PTXAS-NEXT: Function properties
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-TWO: Compiling entry function 'flashc_ffn_forward_train_ffn_up'
// PTXAS-TWO-NEXT: Function properties
// PTXAS-TWO-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS: Compiling entry function 'flashc_ffn_ffn_bwd_hidden'
// PTXAS-NEXT: Function properties
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
