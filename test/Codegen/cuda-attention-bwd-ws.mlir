// The sm_90a attention backward (16-bit, head dims multiples of 8 up to 256,
// one above 32, no softcap) is the warp-specialised TMA kernel wgmma_ws_sm90:
// the device library's attention_bwd_ws. A producer warp loads the block's K
// and V once and streams each query block's Q, dO, lse and D through a 2-slot
// mbarrier ring; the two consumer warpgroups split the block
// * by keys up to D = 192 with Dv <= 128: 128 keys on 8 warps,
//   warpgroup g owns keys 64g.. and forms, on them (at D = 192 in two halves
//   of 32 queries a step),
//     Pᵀ = exp(scale K Qᵀ - lse), dV += Pᵀ dO, dSᵀ = Pᵀ (V dOᵀ - D), dK += dSᵀ Q,
//   and both add their column half of dQ += scale dS K over all 128 keys
//   (at head dims <= 64 a step is 128 queries and each adds its row half);
// * by role above: 64 keys, consumer warpgroup 0 forms Pᵀ and dV += Pᵀ dO,
//   warpgroup 1 dSᵀ and dK += dSᵀ Q, and each adds its half of dQ.
// dq_accum takes the scaled dQ (the postprocess only converts). Tiles are 128,
// 192 or 256 columns (D = 80 pads to 128: the TMA zero-fills); the stores keep
// the tensors' widths. Softcaps and sm_80 keep their forms.
// RUN: flashc %s --emit=tile -o - | FileCheck %s --check-prefix=TILE
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: flashc %s --emit=cuda --tuning-table=none -o - | FileCheck %s --check-prefix=HAND
// The backward's ends (attention_bwd_ends.cuh) take the widths as template arguments: out's Dv, dq_accum's D
// (the MLA-style kernel's 128 / 192, Phi's padded 64 / 80).
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=ENDS
// ENDS: attention_bwd_preprocess<flashc::device::bf16, 256, 256>(out, dout, delta, &dq_accum);
// ENDS: attention_bwd_postprocess<flashc::device::bf16, 256>(dq_accum, dq);
// ENDS: attention_bwd_preprocess<flashc::device::f16, 128, 192>(out, dout, delta, &dq_accum);
// ENDS: attention_bwd_postprocess<flashc::device::f16, 192>(dq_accum, dq);
// ENDS: attention_bwd_preprocess<flashc::device::f16, 64, 80>(out, dout, delta, &dq_accum);
// ENDS: attention_bwd_postprocess<flashc::device::f16, 80>(dq_accum, dq);
// RUN: flashc %s --emit=tile --arch=sm_80 -o - | FileCheck %s --check-prefix=SM80
// RUN: rm -rf %t.bundle && flashc %s --emit=bundle --arch=sm_90a -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc
// RUN: flashc %s --emit=cubin --arch=sm_90a --ptxas-report -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// TILE-LABEL: tile.kernel @gemma_attention_bwd(
// TILE-SAME: block_m = 64 : i64, block_n = 64 : i64
// TILE-SAME: ping_pong = false, role_split = true>
// TILE-SAME: smem_bytes = 223272 : i64
// TILE-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 4
// SM80-LABEL: tile.kernel @gemma_attention_bwd(
// SM80-SAME: strategy = #tile.strategy<mma_sync_sm80>
// CUDA-LABEL: namespace flashc_gemma_attention_bwd_config {
// CUDA: kHeadDim = 256, kValueDim = 256, kHeadCols = 256, kValueCols = 256;
// CUDA: kStages = 2, kDqCols = 64;
// CUDA: kKeySplit = false;
// CUDA-NEXT: kDqTma = false;
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
// CUDA-NEXT: flashc::device::attention_bwd_postprocess<flashc::device::bf16, 256>(dq_accum, dq);
// MANIFEST-LABEL: kernel gemma_attention_bwd
// MANIFEST: tensormap q_map of q box [1, 1, 64, 64] swizzle 128
// MANIFEST-NEXT: tensormap k_map of k box [1, 1, 64, 64] swizzle 128
// MANIFEST-NEXT: tensormap v_map of v box [1, 1, 64, 64] swizzle 128
// MANIFEST-NEXT: tensormap dout_map of dout box [1, 1, 64, 64] swizzle 128
// MANIFEST-NEXT: grid cdiv(Sk, 64), 2, B
// MANIFEST-NEXT: block 384, 1, 1
// MANIFEST-NEXT: shared 223272
// ptxas reports the kernels in reverse order: the D = 80 and 128 key splits
// (below) first, then the MLA-style kernel. No wgmma is serialized (ptxas does
// that to a whole kernel when it runs short of registers).
// PTXAS-NOT: serialized
// PTXAS: Compiling entry function 'flashc_phi_attention_bwd'
// PTXAS-NEXT: Function properties
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS: Compiling entry function 'flashc_llama_attention_bwd'
// PTXAS-NEXT: Function properties
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// The D = 192 key split sits at the register budget: NVRTC's ptxas keeps a
// few words of loop state in local memory (64 bytes here, 68 bf16 causal;
// the form measured 1.2-1.4x the role split with them, session 21): at most
// 96 bytes.
// PTXAS: Compiling entry function 'flashc_mla_attention_bwd'
// PTXAS-NEXT: Function properties
// PTXAS-NEXT: {{[0-9]+}} bytes stack frame, {{[0-9]|[1-8][0-9]|9[0-6]}} bytes spill stores
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

// MLA-style D = 192 with Dv = 128, f16, a run-time key offset: the key split
// (128 keys on 8 warps) on 192-column Q / K tiles, V and dO on 128; each step's
// scores in two halves of 32 queries beside dK + dV (160 floats a thread);
// dQ's three 64-column products by TMA through three pairs of boxes (one dSᵀ
// buffer). dK stores 192 columns, dV 128.
// TILE-LABEL: tile.kernel @mla_attention_bwd(
// TILE-SAME: block_m = 64 : i64, block_n = 128 : i64
// TILE-SAME: smem_bytes = 231464 : i64
// TILE-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 8
// CUDA-LABEL: namespace flashc_mla_attention_bwd_config {
// CUDA: using Elem = flashc::device::f16;
// CUDA: kHeadDim = 192, kValueDim = 128, kHeadCols = 192, kValueCols = 128;
// CUDA: kKeySplit = true;
// CUDA-NEXT: kDqTma = true;
// CUDA: kGroup = 1;
// CUDA: const int key_offset) {
// CUDA-NEXT: attention_bwd_ws<flashc_mla_attention_bwd_config::Config>({{.*}}, dk, dv, key_offset, &dq_accum_map);
// MANIFEST-LABEL: kernel mla_attention_bwd
// MANIFEST: tensormap k_map of k box [1, 1, 128, 64] swizzle 128
// MANIFEST: tensormap dq_accum_map of dq_accum box [1, 1, 64, 32] swizzle 128
// MANIFEST-NEXT: scalar key_offset i32
// MANIFEST-NEXT: grid cdiv(Sk, 128), 4, B
// MANIFEST-NEXT: block 384, 1, 1
// MANIFEST-NEXT: shared 231464
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

// D = 128: the key split (128 keys on 8 warps; K / V boxes of 128 rows; dQ
// added by TMA tensor reductions through dq_accum's f32 map, 64 x 32 boxes).
// At two stages four dSᵀ buffers fit: the consumers take turns (ping-pong),
// each step's dQ issued in the next.
// TILE-LABEL: tile.kernel @llama_attention_bwd(
// TILE-SAME: block_m = 64 : i64, block_n = 128 : i64
// TILE-SAME: ring_stages = 2, ping_pong = true>
// TILE-SAME: smem_bytes = 231464 : i64
// TILE-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 8
// CUDA-LABEL: namespace flashc_llama_attention_bwd_config {
// CUDA: kHeadDim = 128, kValueDim = 128, kHeadCols = 128, kValueCols = 128;
// CUDA: kKeySplit = true;
// CUDA: kPingPong = true;
// CUDA: static_assert(Plan::kThreads == 384 && Plan::kSmemBytes == 231464
// MANIFEST-LABEL: kernel llama_attention_bwd
// MANIFEST: tensormap q_map of q box [1, 1, 64, 64] swizzle 128
// MANIFEST-NEXT: tensormap k_map of k box [1, 1, 128, 64] swizzle 128
// MANIFEST-NEXT: tensormap v_map of v box [1, 1, 128, 64] swizzle 128
// MANIFEST-NEXT: tensormap dout_map of dout box [1, 1, 64, 64] swizzle 128
// MANIFEST-NEXT: tensormap dq_accum_map of dq_accum box [1, 1, 64, 32] swizzle 128
// MANIFEST-NEXT: grid cdiv(Sk, 128), 2, B
// MANIFEST-NEXT: block 384, 1, 1
// MANIFEST-NEXT: shared 231464
func.func @llama(%q: tensor<?x2x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>)
    -> (tensor<?x2x?x128xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.088388 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>)
      -> (tensor<?x2x?x128xbf16>, tensor<?x2x?xf32>)
  return %o, %lse : tensor<?x2x?x128xbf16>, tensor<?x2x?xf32>
}

// D = 80 with Dv = 64, f16, a window: the key split on a 128-column Q / K tile
// and a 64-column V / dO tile; dK stores 80 columns.
// TILE-LABEL: tile.kernel @phi_attention_bwd(
// TILE-SAME: block_n = 128 : i64
// TILE-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 8
// CUDA-LABEL: namespace flashc_phi_attention_bwd_config {
// CUDA: using Elem = flashc::device::f16;
// CUDA: kHeadDim = 128, kValueDim = 64, kHeadCols = 80, kValueCols = 64;
// CUDA: kKeySplit = true;
// CUDA: kWindowLeft = 100, kWindowRight = 0;
func.func @phi(%q: tensor<?x4x?x80xf16>, %k: tensor<?x2x?x80xf16>, %v: tensor<?x2x?x64xf16>)
    -> (tensor<?x4x?x64xf16>, tensor<?x4x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.1118034 mask = #flash.mask<sliding_window, left = 100, right = 0> num_kv_heads = 2
      : (tensor<?x4x?x80xf16>, tensor<?x2x?x80xf16>, tensor<?x2x?x64xf16>)
      -> (tensor<?x4x?x64xf16>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x64xf16>, tensor<?x4x?xf32>
}

// D = Dv = 64, causal: the key split on 128 queries a step (FlashAttention-3's
// 128 x 128 tile there), Q / K tiles of 64 columns, dQ by row halves. The
// built-in table's entry for bf16 D = 64 causal (the tuner, session 50 on the
// H200: 1.034x) has the consumers take turns with two dSᵀ buffers, in head
// groups of 4.
// TILE-LABEL: tile.kernel @small_attention_bwd(
// TILE-SAME: block_m = 128 : i64, block_n = 128 : i64
// TILE-SAME: grid_order = #tile.grid_order<order = head_groups, group = 4>
// TILE-SAME: ring = ["q", "dout"], ring_stages = 2, ping_pong = true>
// TILE-SAME: smem_bytes = 199720 : i64
// TILE-SAME: strategy = #tile.strategy<wgmma_ws_sm90>
// TILE-SAME: warps = 8
// CUDA-LABEL: namespace flashc_small_attention_bwd_config {
// CUDA: kHeadDim = 64, kValueDim = 64, kHeadCols = 64, kValueCols = 64;
// CUDA-NEXT: static constexpr int kBlockM = 128;  // queries a step (dQ split by rows)
// CUDA: kKeySplit = true;
// CUDA: kPingPong = true;
// The hand rule there (no table): the consumers meet every step.
// HAND-LABEL: namespace flashc_small_attention_bwd_config {
// HAND: static constexpr int kBlockM = 128;
// HAND: kPingPong = false;
// MANIFEST-LABEL: kernel small_attention_bwd
// MANIFEST: tensormap q_map of q box [1, 1, 128, 64] swizzle 128
// MANIFEST-NEXT: tensormap k_map of k box [1, 1, 128, 64] swizzle 128
// MANIFEST-NEXT: tensormap v_map of v box [1, 1, 128, 64] swizzle 128
// MANIFEST-NEXT: tensormap dout_map of dout box [1, 1, 128, 64] swizzle 128
// MANIFEST-NEXT: tensormap dq_accum_map of dq_accum box [1, 1, 64, 32] swizzle 128
// MANIFEST-NEXT: grid cdiv(Sk, 128), 2, B
// MANIFEST-NEXT: block 384, 1, 1
// MANIFEST-NEXT: shared 199720
func.func @small(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>)
    -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>)
      -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>)
  return %o, %lse : tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
}
