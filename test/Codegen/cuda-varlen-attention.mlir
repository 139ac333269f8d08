// flash.varlen_attention in the generated CUDA C++ and the manifest: the plan kernel (one block: the offsets'
// check and the tile map) and the forward, the warp-specialised forward's body over one tile of the map
// (attention_fwd_ws_varlen: its shared memory and block asserted against the library's plan), taking 3-D TMA maps of
// the packed tensors (a box of rows of one head, a 64-column panel). The tile map is sized from the packed rows and
// the offsets' length; the verdict is zeroed and named for the runtime (meta status). Both kernels compile through
// NVRTC, and ptxas spills nothing.
//
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: rm -rf %t.bundle && flashc %s --emit=bundle -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc
// RUN: flashc %s --emit=cubin --arch=sm_90a --ptxas-report -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// The backward program (flash-generate-backward): delta and a zeroed dQ accumulator, the plan of key tiles (the
// offsets checked again), the warp-specialised backward over the key-tile map (3-D maps of the packed q, k, v, dout
// and of dq_accum, which dQ's TMA reductions add into), dQ's conversion; the forward names it.
// RUN: FileCheck %s --check-prefix=BACKWARD < %t.bundle/manifest.flashc
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=BWD-CUDA
// BACKWARD: kernel prefill_varlen_bwd_prepare
// BACKWARD: grid cdiv(Tq, 64), 32, 1
// BACKWARD: kernel prefill_varlen_key_plan
// BACKWARD: tensor key_map i32 out [max((Tk + (B1 - 1) * 127) / 128, 1), 2] contiguous
// BACKWARD: kernel prefill_varlen_bwd
// BACKWARD: tensor dq_accum f32 inout [Tq, 32, 128]
// BACKWARD: tensor dk bf16 out [Tk, 8, 128]
// BACKWARD: tensor dv bf16 out [Tk, 8, 128]
// BACKWARD: tensormap dq_accum_map of dq_accum box [64, 1, 32] swizzle 128
// BACKWARD: grid max((Tk + (B1 - 1) * 127) / 128, 1), 8, 1
// BACKWARD: kernel prefill_varlen_bwd_finish
// BACKWARD: tensor dq bf16 out [Tq, 32, 128]
// BACKWARD: program prefill_backward
// BACKWARD: scratch dq_accum
// BACKWARD: scratch status zero
// BACKWARD: meta op attention_varlen_backward
// BACKWARD: meta status status
// BACKWARD: program prefill
// BACKWARD: meta backward prefill_backward
// BWD-CUDA: flashc::device::attention_varlen_plan({{.*}}, 128, key_map, static_cast<int*>(status.data), /*key_tiles=*/true);
// BWD-CUDA: static constexpr bool kKeySplit = true, kDqTma = true;
// BWD-CUDA: flashc::device::attention_bwd_ws_varlen<{{.*}}::Config>(q_map, k_map, v_map, dout_map, q, k, lse, delta, dq_accum, dk, dv, cu_seqlens_q, cu_seqlens_k, key_map, static_cast<const int*>(status.data), &dq_accum_map);
// BWD-CUDA: flashc::device::attention_varlen_bwd_finish<flashc::device::bf16>(dq_accum, dq, static_cast<const int*>(status.data));

// CUDA: // ---- prefill_varlen_plan ----
// CUDA: extern "C" __global__ void __launch_bounds__(512)
// CUDA-NEXT: flashc_prefill_varlen_plan(const flashc::TensorArg cu_seqlens_q, const flashc::TensorArg cu_seqlens_k, const flashc::TensorArg q, const flashc::TensorArg k, const flashc::TensorArg tile_map, const flashc::TensorArg status)
// CUDA-NEXT: flashc::device::attention_varlen_plan(cu_seqlens_q, cu_seqlens_k, static_cast<int>(q.shape[0]), static_cast<int>(k.shape[0]), 128, tile_map, static_cast<int*>(status.data));
// CUDA: // ---- prefill_varlen_fwd ----
// CUDA: static constexpr int kHeadDim = 128, kValueDim = 128, kValueCols = 128;
// CUDA-NEXT: static constexpr int kBlockN = 128, kStages = 2;
// CUDA-NEXT: static constexpr int kGroup = 4;
// CUDA-NEXT: static constexpr int kWindowLeft = -1, kWindowRight = 0;
// CUDA: static constexpr bool kPingPong = true, kLongestFirst = true, kPersistent = false;
// CUDA: static_assert(Plan::kThreads == 384 && Plan::kSmemBytes == {{[0-9]+}}, "the manifest's block size and shared memory");
// CUDA: flashc_prefill_varlen_fwd(const flashc::TensorArg q, const flashc::TensorArg k, const flashc::TensorArg v, const flashc::TensorArg cu_seqlens_q, const flashc::TensorArg cu_seqlens_k, const flashc::TensorArg tile_map, const flashc::TensorArg status, const flashc::TensorArg out, const flashc::TensorArg lse, const __grid_constant__ flashc::TmaDescriptor q_map, const __grid_constant__ flashc::TmaDescriptor k_map, const __grid_constant__ flashc::TmaDescriptor v_map)
// CUDA-NEXT: flashc::device::attention_fwd_ws_varlen<{{.*}}::Config>(q_map, k_map, v_map, q, k, out, lse, cu_seqlens_q, cu_seqlens_k, tile_map, static_cast<const int*>(status.data));

// MANIFEST: kernel prefill_varlen_plan
// MANIFEST: role varlen_plan
// MANIFEST: tensor cu_seqlens_q i32 in [B1] contiguous
// MANIFEST: tensor tile_map i32 out [max((Tq + (B1 - 1) * 127) / 128, 1), 2] contiguous
// MANIFEST: tensor status i32 inout [4] contiguous
// MANIFEST: grid 1, 1, 1
// MANIFEST: block 512, 1, 1
// MANIFEST: kernel prefill_varlen_fwd
// MANIFEST: tensor q bf16 in [Tq, 32, 128] align=16 contiguous stride_multiple=8
// MANIFEST: tensor status i32 in [4] contiguous
// MANIFEST: tensor out bf16 out [Tq, 32, 128]
// MANIFEST: tensor lse f32 out [32, Tq] contiguous
// MANIFEST: tensormap q_map of q box [128, 1, 64] swizzle 128
// MANIFEST: tensormap k_map of k box [128, 1, 64] swizzle 128
// MANIFEST: tensormap v_map of v box [128, 1, 64] swizzle 128
// MANIFEST: grid max((Tq + (B1 - 1) * 127) / 128, 1), 32, 1
// MANIFEST: block 384, 1, 1
// MANIFEST: program prefill
// MANIFEST: scratch tile_map
// MANIFEST: scratch status zero
// MANIFEST: meta op attention_varlen
// MANIFEST: meta status status
// MANIFEST: meta window_left -1
// MANIFEST: meta window_right 0

// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS: flashc_prefill_varlen_fwd
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill

func.func @prefill(%q: tensor<?x32x128xbf16>, %k: tensor<?x8x128xbf16>, %v: tensor<?x8x128xbf16>,
                   %cu_q: tensor<?xi32>, %cu_k: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<32x?xf32>) {
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.0883883 mask = #flash.mask<causal>
      num_kv_heads = 8
      : (tensor<?x32x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x32x128xbf16>, tensor<32x?xf32>)
  return %out, %lse : tensor<?x32x128xbf16>, tensor<32x?xf32>
}
