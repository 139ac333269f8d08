// The sm_90a fused FFN is by default the warp-specialised TMA kernel (16-bit,
// not gated, d and d_out multiples of 8 up to 256; 2.9x the mma.sync fused
// kernel at d = 256 on the H200). The device library's ffn_fwd_ws: a TMA
// producer warpgroup loads x's 128-row block once and streams W1's columns and
// W2's rows of each hidden block through a ring; two consumer warpgroups issue
// H = x·W1 (SS), apply b1 and the activation while y += act(H)·W2 (RS) of the
// previous block runs. The tiles are the attention forward's (x as Q, W2 as
// V): d padded to whole 64-column panels, d_out to a wgmma N, the TMA
// zero-filling past the tensors and the epilogue storing d_out columns.
// Gated or sm_80: the mma.sync fused kernel; d_out above 256 never fuses. The
// mma.sync kernel is a point of every ffn_fused tuning space, which a
// tuning-table entry selects (the form the ws kernel replaced as the default).
// RUN: flashc %s --emit=tile -o - | FileCheck %s --check-prefix=TILE
// RUN: flashc %s --tuning-table=%S/Inputs/tuning-mma-fused-ffn.txt --emit=tile -o - | FileCheck %s --check-prefix=MMA
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: flashc %s --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefix=SM80
// RUN: rm -rf %t.bundle && flashc %s --emit=bundle --arch=sm_90a -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc
// RUN: flashc %s --emit=cubin --arch=sm_90a --ptxas-report -o %t.cubin 2> %t.ptxas
// RUN: FileCheck %s --check-prefix=PTXAS-WIDE < %t.ptxas
// RUN: FileCheck %s --check-prefix=PTXAS-PADDED < %t.ptxas
// RUN: FileCheck %s --check-prefix=PTXAS < %t.ptxas

// d = d_out = 256, h = 1024, biases, gelu_tanh (the benchmark's d = 256 row):
// 64 hidden columns a block (y [64 x 256] takes 128 of a consumer thread's
// registers), x 64 KiB + 2 x (W1 + W2) 64 KiB.
func.func @wide(%x: tensor<?x256xbf16>, %w1: tensor<256x1024xbf16>, %b1: tensor<1024xbf16>, %w2: tensor<1024x256xbf16>, %b2: tensor<256xbf16>) -> tensor<?x256xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 bias %b2 : (tensor<?x256xbf16>, tensor<256x1024xbf16>, tensor<1024xbf16>, tensor<1024x256xbf16>, tensor<256xbf16>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}

// Batched x [B, M, d], f16, padded widths: d = 200 (x and W1 tiles 256 wide),
// d_out = 72 (a 128-wide y tile, 72 columns stored), h = 808, relu.
func.func @padded(%x: tensor<?x?x200xf16>, %w1: tensor<200x808xf16>, %w2: tensor<808x72xf16>) -> tensor<?x?x72xf16> {
  %y = flash.ffn relu %x, %w1, %w2 : (tensor<?x?x200xf16>, tensor<200x808xf16>, tensor<808x72xf16>) -> tensor<?x?x72xf16>
  return %y : tensor<?x?x72xf16>
}

// Gated (two hidden products a block): the mma.sync fused kernel.
func.func @gated(%x: tensor<?x128xbf16>, %wg: tensor<128x256xbf16>, %wu: tensor<128x256xbf16>, %w2: tensor<256x128xbf16>) -> tensor<?x128xbf16> {
  %y = flash.ffn silu %x, %wg up %wu, %w2 : (tensor<?x128xbf16>, tensor<128x256xbf16>, tensor<128x256xbf16>, tensor<256x128xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// TILE-LABEL: tile.kernel @wide_ffn_fused(
// TILE-SAME: block_m = 128 : i64, block_n = 64 : i64
// TILE-SAME: schedule = #tile.warp_specialized<producer_registers = 24, consumer_warpgroups = 2, consumer_registers = 240, resident = ["x"], ring = ["w1", "w2"], ring_stages = 2, ping_pong = true>
// TILE-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 8
// TILE-LABEL: tile.kernel @padded_ffn_fused(
// TILE-SAME: block_n = 64 : i64
// TILE-SAME: resident = ["x"], ring = ["w1", "w2"]
// TILE-SAME: strategy = #tile.strategy<wgmma_ws_sm90>
// TILE-LABEL: tile.kernel @gated_ffn_fused(
// TILE-NOT: schedule =
// TILE-SAME: strategy = #tile.strategy<mma_sync_sm80>

// MMA-LABEL: tile.kernel @wide_ffn_fused(
// MMA-SAME: block_m = 64 : i64, block_n = 64 : i64
// MMA-NOT: schedule =
// MMA-SAME: strategy = #tile.strategy<mma_sync_sm80>
// MMA-SAME: tuning = {entry = "{{.*}}tuning-mma-fused-ffn.txt:3", key = "sm_90a ffn_fused bf16 d256h1024o256 -"}

// CUDA-LABEL: // ---- wide_ffn_fused ----
// CUDA: struct Config {
// CUDA-NEXT: using Elem = bf16;
// CUDA-NEXT: static constexpr Act kAct = Act::GeluTanh;
// CUDA-NEXT: static constexpr bool kBias1 = true, kBias2 = true, kBatched = false;
// CUDA-NEXT: static constexpr bool kSavePre = false;
// CUDA-NEXT: static constexpr int kInDim = 256, kOutDim = 256, kOutCols = 256;
// CUDA-NEXT: static constexpr int kBlockN = 64, kStages = 2;
// CUDA: static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
// CUDA-NEXT: static constexpr bool kPingPong = true;
// CUDA: using Plan = FfnFwdWsPlan<Config>;
// CUDA-NEXT: static_assert(Plan::kThreads == 384 && Plan::kSmemBytes == 197704,
// CUDA: __launch_bounds__(384, 1)
// CUDA-NEXT: flashc_wide_ffn_fused(const flashc::TensorArg x, const flashc::TensorArg w1, const flashc::TensorArg b1, const flashc::TensorArg w2, const flashc::TensorArg b2, const flashc::TensorArg y, const __grid_constant__ flashc::TmaDescriptor x_map, const __grid_constant__ flashc::TmaDescriptor w1_map, const __grid_constant__ flashc::TmaDescriptor w2_map) {
// CUDA-NEXT: flashc::device::ffn_fwd_ws<flashc_wide_ffn_fused_config::Config>(x_map, w1_map, w2_map, x, w1, b1, b2, y, y, y);
// The training forward: the same kernel storing pre = x·W1 + b1 and h = act(pre) from its registers
// as each hidden block is activated (no 16-bit copy of pre held; no spills either).
// CUDA-LABEL: // ---- wide_forward_train_ffn_fused ----
// CUDA: static constexpr bool kSavePre = true;
// CUDA: flashc_wide_forward_train_ffn_fused(const flashc::TensorArg x, const flashc::TensorArg w1, const flashc::TensorArg b1, const flashc::TensorArg w2, const flashc::TensorArg b2, const flashc::TensorArg y, const flashc::TensorArg pre, const flashc::TensorArg h,
// CUDA-NEXT: flashc::device::ffn_fwd_ws<flashc_wide_forward_train_ffn_fused_config::Config>(x_map, w1_map, w2_map, x, w1, b1, b2, y, pre, h);
// CUDA-LABEL: // ---- padded_ffn_fused ----
// CUDA: static constexpr Act kAct = Act::Relu;
// CUDA-NEXT: static constexpr bool kBias1 = false, kBias2 = false, kBatched = true;
// CUDA-NEXT: static constexpr bool kSavePre = false;
// CUDA-NEXT: static constexpr int kInDim = 256, kOutDim = 128, kOutCols = 72;
// Absent biases are never read: x stands in for them.
// CUDA: ffn_fwd_ws<flashc_padded_ffn_fused_config::Config>(x_map, w1_map, w2_map, x, w1, x, x, y, y, y);
// CUDA: ffn_fwd_ws<flashc_padded_forward_train_ffn_fused_config::Config>(x_map, w1_map, w2_map, x, w1, x, x, y, pre, h);
// CUDA-LABEL: // ---- gated_ffn_fused ----
// CUDA-NOT: ffn_fwd_ws
// CUDA: flashc_gated_ffn_fused(

// SM80-NOT: ffn_fwd_ws

// The maps: x 128 rows (of one batch) by 64 columns, W1 all of d's (padded)
// rows by 64 hidden columns, W2 64 hidden rows by 64 output columns.
// MANIFEST-LABEL: kernel wide_ffn_fused
// MANIFEST: tensormap x_map of x box [128, 64] swizzle 128
// MANIFEST: tensormap w1_map of w1 box [256, 64] swizzle 128
// MANIFEST: tensormap w2_map of w2 box [64, 64] swizzle 128
// MANIFEST-LABEL: kernel padded_ffn_fused
// MANIFEST: tensormap x_map of x box [1, 128, 64] swizzle 128
// MANIFEST: tensormap w1_map of w1 box [256, 64] swizzle 128

// No spills, and no wgmma serialised for want of registers.
// PTXAS-WIDE: Function properties for flashc_wide_forward_train_ffn_fused
// PTXAS-WIDE-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-WIDE: Function properties for flashc_wide_ffn_fused
// PTXAS-WIDE-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-PADDED: Function properties for flashc_padded_forward_train_ffn_fused
// PTXAS-PADDED-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-PADDED: Function properties for flashc_padded_ffn_fused
// PTXAS-PADDED-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: serialized
