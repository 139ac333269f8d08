// The sm_90a attention forward (16-bit, head dims multiples of 8 up to 256, D
// above 32; tiles padded to whole panels) is by default the warp-specialised
// TMA kernel wgmma_ws_sm90: the device library's attention_fwd_ws (a TMA
// producer warpgroup, a K/V ring of 2 stages, consumer warpgroups of 64 query
// rows that take turns issuing their GEMMs: two, or three at head dims <= 64),
// taking q, k, v as tensor maps the runtime derives from the
// manifest's `tensormap` lines. A forward that does not qualify (D = 32, or
// sm_80) keeps its form silently. (The backward of heads above 128 is warp-specialised
// too: cuda-attention-bwd-ws.mlir.)
// The form it replaced as the default (cp.async loads from the computing
// warps) is a point of the tuning space, which a tuning-table entry selects
// for its key (bf16 D = 128 causal: @gqa only).
// RUN: flashc %s --emit=tile --tuning-table=none -o - | FileCheck %s --check-prefix=TILE
// RUN: flashc %s --emit=tile -o - | grep -E '@(window|d256|mla|d32)_attention_fwd\(' | FileCheck %s --check-prefix=NOTUNING
// RUN: flashc %s --emit=tile -o - | grep -E '@(gqa|d80)_attention_fwd\(' | FileCheck %s --check-prefix=BUILTIN
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-wgmma-forward.txt --emit=tile -o - | FileCheck %s --check-prefix=CPASYNC
// RUN: flashc %s --emit=cuda --tuning-table=none -o - | FileCheck %s --check-prefix=CUDA
// RUN: flashc %s --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefix=SM80
// RUN: rm -rf %t.bundle && flashc %s --emit=bundle --arch=sm_90a --tuning-table=none -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc
// RUN: flashc %s --emit=cubin --arch=sm_90a --tuning-table=none --ptxas-report -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// The persistent grid (a tuning-table entry's point, flash-order-blocks): the Config's kPersistent, and a manifest
// grid of min(units, SMs) blocks, a unit two query-row blocks of one (head, batch); num_sms is the runtime's.
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-persistent-forward.txt --emit=cuda -o - | FileCheck %s --check-prefix=PERSISTENT
// RUN: rm -rf %t.persistent && flashc %s --tuning-table=%S/Inputs/tuning-persistent-forward.txt --emit=bundle --arch=sm_90a -o %t.persistent
// RUN: FileCheck %s --check-prefix=PERSISTENT-MANIFEST < %t.persistent/manifest.flashc
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-persistent-forward.txt --emit=cubin --arch=sm_90a --ptxas-report -o %t.persistent.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS-PERSISTENT
// Three consumer warpgroups spill on the persistent grid: an entry that asks for both is refused.
// RUN: not flashc %s --tuning-table=%S/Inputs/tuning-persistent-three-consumers.txt --emit=tile -o /dev/null 2>&1 | FileCheck %s --check-prefix=PERSISTENT-THREE
// PERSISTENT-THREE: error: flash-order-blocks: @window_attention_fwd's tuning entry asks for the persistent grid, which only the warp-specialised forward with two consumer warpgroups takes

// GQA 16 query heads on 4 KV heads, causal, D = 128.
func.func @gqa(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x4x?x128xbf16>, %v: tensor<?x4x?x128xbf16>)
    -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.0883883 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x16x?x128xbf16>, tensor<?x4x?x128xbf16>, tensor<?x4x?x128xbf16>)
      -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>)
  return %o, %lse : tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>
}

// f16, D = 64, a sliding window and a softcap.
func.func @window(%q: tensor<?x8x?x64xf16>, %k: tensor<?x8x?x64xf16>, %v: tensor<?x8x?x64xf16>)
    -> (tensor<?x8x?x64xf16>, tensor<?x8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<sliding_window, left = 100, right = 0> softcap = 30.0 num_kv_heads = 8
      : (tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>)
      -> (tensor<?x8x?x64xf16>, tensor<?x8x?xf32>)
  return %o, %lse : tensor<?x8x?x64xf16>, tensor<?x8x?xf32>
}

// D = 256 (Gemma-style), causal: 64 keys a block (O [64 x 256] takes 128 of
// a consumer thread's registers), Q 64 KiB + 2 x (K + V) 64 KiB.
func.func @d256(%q: tensor<?x8x?x256xbf16>, %k: tensor<?x8x?x256xbf16>, %v: tensor<?x8x?x256xbf16>)
    -> (tensor<?x8x?x256xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.0625 mask = #flash.mask<causal> num_kv_heads = 8
      : (tensor<?x8x?x256xbf16>, tensor<?x8x?x256xbf16>, tensor<?x8x?x256xbf16>)
      -> (tensor<?x8x?x256xbf16>, tensor<?x8x?xf32>)
  return %o, %lse : tensor<?x8x?x256xbf16>, tensor<?x8x?xf32>
}

// D = 192 with Dv = 128 (DeepSeek MLA's training form): its own shape, V not
// padded; 128 keys a block.
func.func @mla(%q: tensor<?x16x?x192xbf16>, %k: tensor<?x16x?x192xbf16>, %v: tensor<?x16x?x128xbf16>)
    -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.0721688 mask = #flash.mask<none> num_kv_heads = 16
      : (tensor<?x16x?x192xbf16>, tensor<?x16x?x192xbf16>, tensor<?x16x?x128xbf16>)
      -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>)
  return %o, %lse : tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>
}

// D = 80 (Phi-2, Stable Diffusion): padded to 128-column tiles; the TMA
// zero-fills columns 80-127 of Q, K, V and the epilogue stores 80.
func.func @d80(%q: tensor<?x8x?x80xbf16>, %k: tensor<?x8x?x80xbf16>, %v: tensor<?x8x?x80xbf16>)
    -> (tensor<?x8x?x80xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.111803 mask = #flash.mask<causal> num_kv_heads = 8
      : (tensor<?x8x?x80xbf16>, tensor<?x8x?x80xbf16>, tensor<?x8x?x80xbf16>)
      -> (tensor<?x8x?x80xbf16>, tensor<?x8x?xf32>)
  return %o, %lse : tensor<?x8x?x80xbf16>, tensor<?x8x?xf32>
}

// D = 32: a 64-column panel would double Q Kᵀ, so mma.sync.
func.func @d32(%q: tensor<?x8x?x32xbf16>, %k: tensor<?x8x?x32xbf16>, %v: tensor<?x8x?x32xbf16>)
    -> (tensor<?x8x?x32xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.176777 mask = #flash.mask<none> num_kv_heads = 8
      : (tensor<?x8x?x32xbf16>, tensor<?x8x?x32xbf16>, tensor<?x8x?x32xbf16>)
      -> (tensor<?x8x?x32xbf16>, tensor<?x8x?xf32>)
  return %o, %lse : tensor<?x8x?x32xbf16>, tensor<?x8x?xf32>
}

// The plan: the wgmma blocks (128 x 128, 8 consumer warps, 2 stages) under the
// ws strategy, with the shared memory the library's plan needs (Q, 2 K and 2 V
// slots, 10 mbarriers -- Q landed, Q free for a block's next tile, full and
// empty per slot -- and 1024 bytes of alignment slack); D = 32 keeps mma.sync.
// D = 64: 192 query rows on 12 consumer warps (three warpgroups), Q 24 KiB +
// 2 x (K 16 KiB + V 16 KiB) + 10 mbarriers + 1024 = 91216.
// TILE-LABEL: tile.kernel @gqa_attention_fwd(
// TILE-SAME: block_m = 128 : i64, block_n = 128 : i64
// TILE-SAME: smem_bytes = 164944 : i64
// TILE-SAME: stages = 2 : i64, strategy = #tile.strategy<wgmma_ws_sm90>, warps = 8 : i64
// TILE-LABEL: tile.kernel @window_attention_fwd(
// TILE-SAME: block_m = 192 : i64, block_n = 128 : i64
// TILE-SAME: grid = [#tile.grid<ceildiv(arg0[2], 192)>
// TILE-SAME: schedule = #tile.warp_specialized<producer_registers = 24, consumer_warpgroups = 3, consumer_registers = 160
// TILE-SAME: smem_bytes = 91216 : i64
// TILE-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 12 : i64
// D = 256: 64 keys a block; Q 64 KiB + 2 x (K 32 KiB + V 32 KiB) + 10
// mbarriers + 1024 = 197712. D = 192, Dv = 128: 128 keys; Q 48 KiB + 2 x (K
// 48 KiB + V 32 KiB) + 10 mbarriers + 1024 = 214096.
// TILE-LABEL: tile.kernel @d256_attention_fwd(
// TILE-SAME: block_m = 128 : i64, block_n = 64 : i64
// TILE-SAME: smem_bytes = 197712 : i64
// TILE-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 8 : i64
// TILE-LABEL: tile.kernel @mla_attention_fwd(
// TILE-SAME: block_m = 128 : i64, block_n = 128 : i64
// TILE-SAME: smem_bytes = 214096 : i64
// TILE-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 8 : i64
// D = 80 plans D = 128's tiles.
// TILE-LABEL: tile.kernel @d80_attention_fwd(
// TILE-SAME: block_m = 128 : i64, block_n = 128 : i64
// TILE-SAME: smem_bytes = 164944 : i64
// TILE-SAME: strategy = #tile.strategy<wgmma_ws_sm90>
// TILE-LABEL: tile.kernel @d32_attention_fwd(
// TILE-SAME: strategy = #tile.strategy<mma_sync_sm80>
// Without an entry (the built-in table has none for these forwards' keys above
// their bounds; it has some for backward kernels of this file) no forward
// kernel names one; the causal D = 128 and D = 80 forwards take 192-key blocks
// above 4096 keys from it (session 38).
// NOTUNING-NOT: tuning =
// BUILTIN: tile.kernel @gqa_attention_fwd({{.*}}block_n = 192 : i64{{.*}}key = "sm_90a attention_forward bf16 d128 causal"
// BUILTIN: tile.kernel @d80_attention_fwd({{.*}}block_n = 192 : i64{{.*}}key = "sm_90a attention_forward bf16 d80 causal"
// The table's entry: the cp.async wgmma forward, named in the kernel; the
// other forwards' keys have no entry (the hand rules).
// CPASYNC-LABEL: tile.kernel @gqa_attention_fwd(
// CPASYNC-SAME: strategy = #tile.strategy<wgmma_sm90>
// CPASYNC-SAME: tuning = {entry = "{{.*}}tuning-wgmma-forward.txt:3", key = "sm_90a attention_forward bf16 d128 causal"}
// CPASYNC-LABEL: tile.kernel @window_attention_fwd(
// CPASYNC-SAME: strategy = #tile.strategy<wgmma_ws_sm90>
// CPASYNC-NOT: tuning =
// CPASYNC-SAME: warps = 12 : i64}

// The kernel: tensors, then the tensor maps (__grid_constant__: the TMA unit
// reads them in parameter space), one call of the library's forward with the
// recipe as its Config (GQA group 4 from the static head counts).
// CUDA-LABEL: namespace flashc_gqa_attention_fwd_config {
// CUDA-NEXT: struct Config {
// CUDA-NEXT: using Elem = flashc::device::bf16;
// CUDA-NEXT: static constexpr int kHeadDim = 128, kValueDim = 128, kValueCols = 128;
// CUDA-NEXT: static constexpr int kBlockN = 128, kStages = 2;
// CUDA-NEXT: static constexpr int kGroup = 4;
// CUDA-NEXT: static constexpr int kWindowLeft = -1, kWindowRight = 0;
// CUDA-NEXT: static constexpr float kScale = 8.83883{{[0-9]+}}e-02f, kSoftcap = 0.000000000e+00f;
// The schedule flash-warp-specialize chose, printed: register budgets, ping-pong; flash-order-blocks': causal
// blocks longest first.
// CUDA-NEXT: // schedule (flash-warp-specialize): register budgets of the producer and
// CUDA-NEXT: // consumer warpgroups, ping-pong; block order (flash-order-blocks)
// CUDA-NEXT: static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
// CUDA-NEXT: static constexpr bool kPingPong = true, kLongestFirst = true,
// CUDA-NEXT: kPersistent = false;
// CUDA: static_assert(Plan::kThreads == 384 && Plan::kSmemBytes == 164944,
// CUDA: extern "C" __global__ void __launch_bounds__(384, 1)
// CUDA-NEXT: flashc_gqa_attention_fwd(const flashc::TensorArg q, const flashc::TensorArg k, const flashc::TensorArg v, const flashc::TensorArg out, const flashc::TensorArg lse, const __grid_constant__ flashc::TmaDescriptor q_map, const __grid_constant__ flashc::TmaDescriptor k_map, const __grid_constant__ flashc::TmaDescriptor v_map) {
// CUDA-NEXT: flashc::device::attention_fwd_ws<flashc_gqa_attention_fwd_config::Config>(q_map, k_map, v_map, q, k, out, lse, static_cast<int>(k.shape[2] - q.shape[2]));
// CUDA-NEXT: }
// f16, the window [-100, 0] and the softcap as the recipe has them.
// CUDA-LABEL: namespace flashc_window_attention_fwd_config {
// CUDA: using Elem = flashc::device::f16;
// CUDA-NEXT: static constexpr int kHeadDim = 64, kValueDim = 64, kValueCols = 64;
// CUDA-NEXT: static constexpr int kBlockN = 128, kStages = 2;
// CUDA-NEXT: static constexpr int kGroup = 1;
// CUDA-NEXT: static constexpr int kWindowLeft = 100, kWindowRight = 0;
// CUDA-NEXT: static constexpr float kScale = 1.250000000e-01f, kSoftcap = 3.000000000e+01f;
// Three consumer warpgroups share the register file four ways: 160 each.
// CUDA: static constexpr int kProducerRegs = 24, kConsumerRegs = 160;
// CUDA-NEXT: static constexpr bool kPingPong = true, kLongestFirst = false,
// CUDA-NEXT: kPersistent = false;
// CUDA-NEXT: static constexpr int kConsumerWarpgroups = 3;
// CUDA: static_assert(Plan::kThreads == 512 && Plan::kSmemBytes == 91216,
// CUDA: extern "C" __global__ void __launch_bounds__(512, 1)
// CUDA: flashc::device::attention_fwd_ws<flashc_window_attention_fwd_config::Config>(
// CUDA-LABEL: namespace flashc_d256_attention_fwd_config {
// CUDA: static constexpr int kHeadDim = 256, kValueDim = 256, kValueCols = 256;
// CUDA-NEXT: static constexpr int kBlockN = 64, kStages = 2;
// CUDA-LABEL: namespace flashc_mla_attention_fwd_config {
// CUDA: static constexpr int kHeadDim = 192, kValueDim = 128, kValueCols = 128;
// CUDA-NEXT: static constexpr int kBlockN = 128, kStages = 2;
// CUDA: flashc_mla_attention_fwd(const flashc::TensorArg q, const flashc::TensorArg k, const flashc::TensorArg v, const flashc::TensorArg out, const flashc::TensorArg lse, const __grid_constant__ flashc::TmaDescriptor q_map, const __grid_constant__ flashc::TmaDescriptor k_map, const __grid_constant__ flashc::TmaDescriptor v_map) {
// D = 80: 128-column tiles, 80 columns stored.
// CUDA-LABEL: namespace flashc_d80_attention_fwd_config {
// CUDA: static constexpr int kHeadDim = 128, kValueDim = 128, kValueCols = 80;
// D = 32: printed op by op (mma.sync).
// CUDA-LABEL: flashc_d32_attention_fwd(const flashc::TensorArg q, const flashc::TensorArg k, const flashc::TensorArg v, const flashc::TensorArg out, const flashc::TensorArg lse) {
// CUDA-NOT: attention_fwd_ws
// CUDA: matmul_tb(
// sm_80: no kernel qualifies.
// SM80-NOT: attention_fwd_ws
// SM80-NOT: TmaDescriptor
// SM80-LABEL: flashc_gqa_attention_fwd(const flashc::TensorArg q, const flashc::TensorArg k, const flashc::TensorArg v, const flashc::TensorArg out, const flashc::TensorArg lse) {
// SM80-NOT: attention_fwd_ws
// SM80-NOT: TmaDescriptor

// The manifest: the three maps after the tensors (the ABI order), boxes in the
// tensors' dim order ([B, H, S, D]: one head, 128 rows, one 64-column panel of
// 128 bytes), 128-byte swizzle; block and shared memory of the golden launcher.
// PERSISTENT-LABEL: namespace flashc_gqa_attention_fwd_config {
// PERSISTENT: static constexpr bool kPingPong = true, kLongestFirst = false,
// PERSISTENT-NEXT: kPersistent = true;
// (The table's entry gives the D = 64 forward two warpgroups too: block_m = 128, warps = 8.)
// PERSISTENT-LABEL: namespace flashc_window_attention_fwd_config {
// PERSISTENT: kPersistent = true;
// PERSISTENT-NEXT: static constexpr int kConsumerWarpgroups = 2;
// PERSISTENT-MANIFEST-LABEL: kernel gqa_attention_fwd
// PERSISTENT-MANIFEST: grid min(cdiv(cdiv(Sq, 128), 2) * 16 * B, num_sms), 1, 1
// PERSISTENT-MANIFEST-NEXT: block 384, 1, 1
// PERSISTENT-MANIFEST-NEXT: shared 164944
// PERSISTENT-MANIFEST-LABEL: kernel window_attention_fwd
// PERSISTENT-MANIFEST: grid min(cdiv(cdiv(Sq, 128), 2) * 8 * B, num_sms), 1, 1
// MANIFEST-LABEL: kernel gqa_attention_fwd
// MANIFEST: tensor lse f32 out [B, 16, Sq]
// MANIFEST-NEXT: tensormap q_map of q box [1, 1, 128, 64] swizzle 128
// MANIFEST-NEXT: tensormap k_map of k box [1, 1, 128, 64] swizzle 128
// MANIFEST-NEXT: tensormap v_map of v box [1, 1, 128, 64] swizzle 128
// MANIFEST-NEXT: grid cdiv(Sq, 128), 16, B
// MANIFEST-NEXT: block 384, 1, 1
// MANIFEST-NEXT: shared 164944
// MANIFEST-LABEL: kernel window_attention_fwd
// MANIFEST: tensormap q_map of q box [1, 1, 192, 64] swizzle 128
// MANIFEST: grid cdiv(Sq, 192), 8, B
// MANIFEST-NEXT: block 512, 1, 1
// MANIFEST-NEXT: shared 91216
// MANIFEST-LABEL: kernel d256_attention_fwd
// MANIFEST: tensormap k_map of k box [1, 1, 64, 64] swizzle 128
// MANIFEST-NEXT: tensormap v_map of v box [1, 1, 64, 64] swizzle 128
// MANIFEST: shared 197712
// MANIFEST-LABEL: kernel mla_attention_fwd
// MANIFEST: tensor v bf16 in [B, 16, Sk, 128]
// MANIFEST: tensormap k_map of k box [1, 1, 128, 64] swizzle 128
// MANIFEST-NEXT: tensormap v_map of v box [1, 1, 128, 64] swizzle 128
// MANIFEST: shared 214096
// MANIFEST-LABEL: kernel d80_attention_fwd
// MANIFEST: tensor q bf16 in [B, 8, Sq, 80]
// MANIFEST: tensormap q_map of q box [1, 1, 128, 64] swizzle 128
// MANIFEST: shared 164944
// MANIFEST-LABEL: kernel d32_attention_fwd
// MANIFEST-NOT: tensormap
// MANIFEST: block 128, 1, 1
// MANIFEST-NOT: tensormap
// MANIFEST-LABEL: program gqa{{$}}

// ptxas: the ws forwards fit the launch bound's 168 registers without spills
// (setmaxnreg then gives the consumers 240, the producer 24), the D = 64 one
// with three consumer warpgroups 128 (512 threads; the consumers then take
// 160). ptxas reports the kernels last to first.
// PTXAS: Compiling entry function 'flashc_d80_attention_fwd'
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS: Used 168 registers
// PTXAS: Compiling entry function 'flashc_mla_attention_fwd'
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS: Used 168 registers
// PTXAS: Compiling entry function 'flashc_d256_attention_fwd'
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS: Used 168 registers
// PTXAS: Compiling entry function 'flashc_window_attention_fwd'
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS: Used 128 registers
// PTXAS: Compiling entry function 'flashc_gqa_attention_fwd'
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS: Used 168 registers
// On the persistent grid, every forward with two consumer warpgroups: no spills at 168.
// PTXAS-PERSISTENT: Compiling entry function 'flashc_d80_attention_fwd'
// PTXAS-PERSISTENT-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS-PERSISTENT: Used 168 registers
// PTXAS-PERSISTENT: Compiling entry function 'flashc_mla_attention_fwd'
// PTXAS-PERSISTENT-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS-PERSISTENT: Used 168 registers
// PTXAS-PERSISTENT: Compiling entry function 'flashc_d256_attention_fwd'
// PTXAS-PERSISTENT-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS-PERSISTENT: Used 168 registers
// PTXAS-PERSISTENT: Compiling entry function 'flashc_window_attention_fwd'
// PTXAS-PERSISTENT-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS-PERSISTENT: Used 168 registers
// PTXAS-PERSISTENT: Compiling entry function 'flashc_gqa_attention_fwd'
// PTXAS-PERSISTENT-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS-PERSISTENT: Used 168 registers
