// The sm_90a attention backward of heads wider than 128 (16-bit, head dims
// multiples of 8 up to 256, no softcap) is the warp-specialised TMA kernel
// wgmma_ws_sm90: the device library's attention_bwd_ws. 64 keys a block; a
// producer warp loads K and V once and streams each query block's Q, dO, lse
// and D through a 2-slot mbarrier ring; consumer warpgroup 0 forms
//   Pᵀ = exp(scale K Qᵀ - lse) and dV += Pᵀ dO,
// consumer warpgroup 1
//   dSᵀ = Pᵀ (V dOᵀ - D) and dK += dSᵀ Q,
// and each adds its half of dQ += scale dS K into dq_accum (the postprocess
// only converts). Tiles are 128 or 256 columns (D = 192 pads to 256, the TMA
// zero-fills); the stores keep the tensors' widths. Softcaps, sm_80 and
// D <= 128 keep their forms.
// RUN: flashc %s --emit=tile -o - | FileCheck %s --check-prefix=TILE
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: flashc %s --emit=tile --arch=sm_80 -o - | FileCheck %s --check-prefix=SM80
// RUN: rm -rf %t.bundle && flashc %s --emit=bundle --arch=sm_90a -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc
// RUN: flashc %s --emit=cubin --arch=sm_90a --ptxas-report -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// TILE-LABEL: tile.kernel @gemma_attention_bwd(
// TILE-SAME: block_m = 64 : i64, block_n = 64 : i64
// TILE-SAME: role_split = true>
// TILE-SAME: smem_bytes = 223272 : i64
// TILE-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 4
// SM80-LABEL: tile.kernel @gemma_attention_bwd(
// SM80-SAME: strategy = #tile.strategy<mma_sync_sm80>
// CUDA-LABEL: namespace flashc_gemma_attention_bwd_config {
// CUDA: kHeadDim = 256, kValueDim = 256, kHeadCols = 256, kValueCols = 256;
// CUDA: kStages = 2, kDqCols = 64;
// CUDA: kGroup = 4;
// CUDA: kWindowLeft = -1, kWindowRight = 0;
// CUDA: kScale = 6.250000000e-02f, kDqScale = kScale;
// CUDA: kProducerRegs = 24, kConsumerRegs = 240;
// CUDA: static_assert(Plan::kThreads == 384 && Plan::kSmemBytes == 223272
// CUDA: __launch_bounds__(384, 1)
// CUDA-NEXT: flashc_gemma_attention_bwd(const flashc::TensorArg q, const flashc::TensorArg k, const flashc::TensorArg v, const flashc::TensorArg dout, const flashc::TensorArg lse, const flashc::TensorArg delta, const flashc::TensorArg dq_accum, const flashc::TensorArg dk, const flashc::TensorArg dv, const __grid_constant__ flashc::TmaDescriptor q_map, const __grid_constant__ flashc::TmaDescriptor k_map, const __grid_constant__ flashc::TmaDescriptor v_map, const __grid_constant__ flashc::TmaDescriptor dout_map) {
// CUDA-NEXT: flashc::device::attention_bwd_ws<flashc_gemma_attention_bwd_config::Config>(q_map, k_map, v_map, dout_map, q, k, lse, delta, dq_accum, dk, dv, static_cast<int>(k.shape[2] - q.shape[2]));
// The postprocess converts dq_accum as it is (the main kernel scaled it).
// CUDA-LABEL: flashc_gemma_attention_bwd_postprocess(
// CUDA-NOT: scale(
// CUDA: store_tile
// MANIFEST-LABEL: kernel gemma_attention_bwd
// MANIFEST: tensormap q_map of q box [1, 1, 64, 64] swizzle 128
// MANIFEST-NEXT: tensormap k_map of k box [1, 1, 64, 64] swizzle 128
// MANIFEST-NEXT: tensormap v_map of v box [1, 1, 64, 64] swizzle 128
// MANIFEST-NEXT: tensormap dout_map of dout box [1, 1, 64, 64] swizzle 128
// MANIFEST-NEXT: grid cdiv(Sk, 64), 2, B
// MANIFEST-NEXT: block 384, 1, 1
// MANIFEST-NEXT: shared 223272
// ptxas reports the kernels in reverse order: the MLA-style kernel (below) first.
// PTXAS: Compiling entry function 'flashc_mla_attention_bwd'
// PTXAS-NEXT: Function properties
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS: Compiling entry function 'flashc_gemma_attention_bwd'
// PTXAS-NEXT: Function properties
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
func.func @gemma(%q: tensor<?x8x?x256xbf16>, %k: tensor<?x2x?x256xbf16>, %v: tensor<?x2x?x256xbf16>)
    -> (tensor<?x8x?x256xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.0625 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<?x8x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>)
      -> (tensor<?x8x?x256xbf16>, tensor<?x8x?xf32>)
  return %o, %lse : tensor<?x8x?x256xbf16>, tensor<?x8x?xf32>
}

// MLA-style D = 192 with Dv = 128, f16, a run-time key offset: Q and K on
// 256-column tiles, V and dO on 128; dK stores 192 columns, dV 128.
// TILE-LABEL: tile.kernel @mla_attention_bwd(
// TILE-SAME: smem_bytes = 174120 : i64
// TILE-SAME: strategy = #tile.strategy<wgmma_ws_sm90>
// CUDA-LABEL: namespace flashc_mla_attention_bwd_config {
// CUDA: using Elem = flashc::device::f16;
// CUDA: kHeadDim = 256, kValueDim = 128, kHeadCols = 192, kValueCols = 128;
// CUDA: kGroup = 1;
// CUDA: const int key_offset) {
// CUDA-NEXT: attention_bwd_ws<flashc_mla_attention_bwd_config::Config>({{.*}}, dk, dv, key_offset);
// MANIFEST-LABEL: kernel mla_attention_bwd
// MANIFEST: scalar key_offset i32
// MANIFEST-NEXT: grid cdiv(Sk, 64), 4, B
// MANIFEST-NEXT: block 384, 1, 1
// MANIFEST-NEXT: shared 174120
func.func @mla(%q: tensor<?x4x?x192xf16>, %k: tensor<?x4x?x192xf16>, %v: tensor<?x4x?x128xf16>, %off: i32)
    -> (tensor<?x4x?x128xf16>, tensor<?x4x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v key_offset = %off scale = 0.072168784 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x?x192xf16>, tensor<?x4x?x192xf16>, tensor<?x4x?x128xf16>, i32)
      -> (tensor<?x4x?x128xf16>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x128xf16>, tensor<?x4x?xf32>
}

// A softcap (its derivative is not in the library's form) keeps mma.sync.
// TILE-LABEL: tile.kernel @capped_attention_bwd(
// TILE-NOT: schedule =
// TILE-SAME: strategy = #tile.strategy<mma_sync_sm80>
func.func @capped(%q: tensor<?x2x?x256xbf16>, %k: tensor<?x2x?x256xbf16>, %v: tensor<?x2x?x256xbf16>)
    -> (tensor<?x2x?x256xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.0625 mask = #flash.mask<none> softcap = 30.0 num_kv_heads = 2
      : (tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>)
      -> (tensor<?x2x?x256xbf16>, tensor<?x2x?xf32>)
  return %o, %lse : tensor<?x2x?x256xbf16>, tensor<?x2x?xf32>
}

// D = 128 keeps the Sᵀ wgmma backward (128 keys a block: it ran 1.3x the ws
// form's 64 there).
// TILE-LABEL: tile.kernel @llama_attention_bwd(
// TILE-NOT: schedule =
// TILE-SAME: strategy = #tile.strategy<wgmma_sm90>
func.func @llama(%q: tensor<?x2x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>)
    -> (tensor<?x2x?x128xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.088388 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>)
      -> (tensor<?x2x?x128xbf16>, tensor<?x2x?xf32>)
  return %o, %lse : tensor<?x2x?x128xbf16>, tensor<?x2x?xf32>
}
