// FFN widths that are not multiples of 8 (#22): d = 100, h = 1001, d_out = 77 in bf16. The kernels
// are the usual ones; the widths only reach them as column limits (tile.dim of the tensors, or the
// fused kernel's constant 77). A limit that may end inside a 16-byte chunk gets the device library's
// element-exact forms (`<kThreads, true>`, `atomic_add_tile<true>`): the chunk is read up to the
// width by cp.async's src-size (the rest zero-filled, so the zero K padding keeps every contraction
// exact) and stored element by element; the f32 split-K accumulators' atomics are pair-exact.
// Limits of whole chunks keep the chunked forms (cuda-ffn.mlir's CHUNKED). Compiles with NVRTC for
// sm_80 and sm_90a.
// RUN: flashc %s --emit=cuda -o - | FileCheck %s
// RUN: flashc %s --emit=cubin --arch=sm_90a -o %t.sm90.cubin
// RUN: flashc %s --emit=cubin --arch=sm_80 -o %t.sm80.cubin
// The gated FFN of d = 333, h = 1001 (gated GEMM, down GEMM, gated backward), f16:
// RUN: flashc %S/Inputs/ffn-gated-any-width.mlir --emit=cuda -o - | FileCheck %s --check-prefix=GATED
// The gated activation gradient: the device library's elementwise kernel (its chunks past h = 1001
// element by element).
// GATED: flashc::device::ffn_activation_grad<flashc_ffn_ffn_bwd_act_config::Config>(dh, gate, up, dgate, dup);
// GATED-LABEL: flashc_ffn_ffn_up(
// GATED: store_tile<kThreads, true>(matrix_view<f16>(hidden), row0, col0, M, N, hidden16);
// The training forward's up kernel stores g, u and h limited to hidden.
// GATED-LABEL: flashc_ffn_forward_train_ffn_up(
// GATED: store_tile<kThreads, true>(matrix_view<f16>(gate), row0, col0, M, N, g16);
// GATED: store_tile<kThreads, true>(matrix_view<f16>(up), row0, col0, M, N, u16);
// GATED: store_tile<kThreads, true>(matrix_view<f16>(h), row0, col0, M, N, hidden16);
// RUN: flashc %S/Inputs/ffn-gated-any-width.mlir --emit=cubin --arch=sm_90a -o %t.gated.sm90.cubin
// RUN: flashc %S/Inputs/ffn-gated-any-width.mlir --emit=cubin --arch=sm_80 -o %t.gated.sm80.cubin
// A hand-written padded tile loaded with a column limit of 36 (mid-chunk; was an emitter error):
// RUN: flashc %S/Inputs/partial-chunk-limit.mlir --emit=cuda -o - | FileCheck %s --check-prefix=CHUNK
// CHUNK: load_tile_async<kThreads, true>(arg0_tile, matrix_view<bf16>(arg0), {{.*}}, 0, arg0_dim0, 36);
// CHUNK: store_tile<kThreads>(matrix_view<bf16>(arg1), {{.*}}, 0, arg0_dim0, 40, {{.*}});
// RUN: flashc %S/Inputs/partial-chunk-limit.mlir --emit=cubin --arch=sm_80 -o %t.chunk.cubin

func.func @ffn(%x: tensor<?x100xbf16>, %w1: tensor<100x1001xbf16>, %b1: tensor<1001xbf16>,
               %w2: tensor<1001x77xbf16>, %b2: tensor<77xbf16>) -> tensor<?x77xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 bias %b2
      : (tensor<?x100xbf16>, tensor<100x1001xbf16>, tensor<1001xbf16>, tensor<1001x77xbf16>, tensor<77xbf16>)
      -> tensor<?x77xbf16>
  return %y : tensor<?x77xbf16>
}

// The backward's dh = dy·W2ᵀ: dy and W2 limited to d_out (K), dh stored to hidden; then the
// activation gradient (the device library's elementwise kernel: exact at the width).
// CHECK-LABEL: flashc_ffn_ffn_bwd_dh(
// CHECK: load_tile_async<kThreads, true>({{.*}}, matrix_view<bf16>(dy), row0, {{.*}}, M, K);
// CHECK: load_tile_async<kThreads, true>({{.*}}, matrix_view<bf16>(w2), col0, {{.*}}, N, K);
// CHECK: store_tile<kThreads, true>(matrix_view<bf16>(dh), row0, col0, M, N, {{.*}});
// CHECK: flashc::device::ffn_activation_grad<flashc_ffn_ffn_bwd_act_config::Config>(dh, pre, pre, dpre, dpre);
// A weight gradient: split K, f32 atomics limited to the accumulator's widths, then converted.
// CHECK-LABEL: flashc_ffn_ffn_bwd_dw2(
// CHECK: atomic_add_tile<true>(matrix_view<float>(dw2_accum), row0, col0, M, N, acc);
// CHECK-LABEL: flashc_ffn_ffn_bwd_dw2_convert(
// CHECK: load_tile_async<kThreads, true>({{.*}}, matrix_view<float>(dw2_accum), row0, col0, M, N);
// CHECK: store_tile<kThreads, true>(matrix_view<bf16>(dw2), row0, col0, M, N, {{.*}});
// The fused forward: W2 and y limited to the constant d_out = 77 on tiles of 96 columns.
// CHECK-LABEL: flashc_ffn_ffn_fused(
// CHECK: SmemTile<bf16, 64, 96>
// CHECK: store_tile<kThreads, true>(matrix_view<bf16>(y), row0, 0, M, 77, {{.*}});
