// A gated FFN (SwiGLU): the backward computes the gate and up pre-activations
// again as plain GEMMs (g = x·Wg, u = x·Wu), then its hidden kernel runs
// dh = dy·W2ᵀ with one accumulator and reads g and u in the epilogue:
//   du = dh ∘ silu(g), h = silu(g) ∘ u, dg = (dh ∘ silu'(g)) ∘ u,
// in that order, so that at most three f32 tiles are live (dh and g die before
// u is converted). 128 x 128 on sm_90a: an 84-byte spill in the epilogue
// (four live tiles spilled 468 bytes; 128 x 64 had none but ran at 0.55x the
// dx GEMM's rate, bench/results/2026-12-01-h200-session11.md).
// RUN: flashc %s --emit=tile -o - | FileCheck %s
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: flashc %s --emit=cubin --arch=sm_90a --ptxas-report -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

func.func @ffn(%x: tensor<?x64xbf16>, %w_gate: tensor<64x256xbf16>, %w_up: tensor<64x256xbf16>,
               %w2: tensor<256x64xbf16>) -> tensor<?x64xbf16> {
  %y = flash.ffn silu %x, %w_gate up %w_up, %w2
      : (tensor<?x64xbf16>, tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_gate
// CHECK-SAME: role = gemm, activation = identity
// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_up
// CHECK-SAME: role = gemm, activation = identity
// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_hidden
// CHECK-SAME: block_m = 128 : i64, block_n = 128 : i64
// CHECK-SAME: stages = 4 : i64, strategy = #tile.strategy<wgmma_sm90>
// CHECK-LABEL: func.func @ffn_backward(
// CHECK: tile.launch @ffn_ffn_bwd_gate(%arg0, %arg1, %[[G:.*]]) :
// CHECK: tile.launch @ffn_ffn_bwd_up(%arg0, %arg2, %[[U:.*]]) :
// CHECK: tile.launch @ffn_ffn_bwd_hidden(%arg4, %arg3, %[[G]], %[[U]], %{{.*}}, %{{.*}}, %{{.*}}) :

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
// CUDA: store_tile<kThreads>(matrix_view<bf16>(h),
// CUDA: store_tile<kThreads>(matrix_view<bf16>(dgate),

// PTXAS: Compiling entry function 'flashc_ffn_ffn_bwd_hidden'
// PTXAS-NEXT: Function properties
// PTXAS-NEXT: {{[0-9]?[0-9]}} bytes spill stores, {{[0-9]?[0-9]}} bytes spill loads
