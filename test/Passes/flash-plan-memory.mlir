// Kernels come from flash-tile (first flash-opt), then flash-plan-memory runs alone.
// The cp.async wgmma forward (a tuning-table entry's point; the default is the
// warp-specialised kernel, WS below):
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory=tuning-table=%S/Inputs/tuning-wgmma-forward.txt | FileCheck %s
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory=target=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory="block-m=64 block-n=32 warps=4 stages=3" 2>&1 | FileCheck %s --check-prefix=OVERRIDE
// RUN: flash-opt %s --flash-tile | not flash-opt --flash-plan-memory="block-m=256 block-n=256 warps=16 stages=4" 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// RUN: flash-opt %s --flash-tile | not flash-opt --flash-plan-memory="block-m=32 warps=4" 2>&1 | FileCheck %s --check-prefix=BANDS
// RUN: flash-opt %s --flash-tile | not flash-opt --flash-plan-memory=target=sm_75 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: flash-opt %s --flash-tile | not flash-opt --flash-plan-memory=stages=-1 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: flash-opt %s --flash-generate-backward --flash-tile | flash-opt --flash-plan-memory=tuning-table=%S/../Codegen/Inputs/tuning-gemm-cp-async.txt | FileCheck %s --check-prefix=STAGES
// Block sizes past TileLimits.h (256) are refused before any kernel is rebuilt at them; so are
// recipes that do not fit their kernel's arguments (hand-edited tile IR).
// RUN: flash-opt %s --flash-tile | not flash-opt --flash-plan-memory="block-m=1024" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: flash-opt %S/Inputs/plan-memory-bad-recipes.mlir --flash-plan-memory -split-input-file -verify-diagnostics
// RANGE: error: flash-plan-memory: plan for @attention_attention_fwd is invalid: tile plan block_m = 1024 must be in [1, 256]
// The default sm_90a forward is the warp-specialised TMA kernel, with the
// shared memory of the library's plan: Q 32 KiB + 2 K and 2 V slots of 32 KiB + 9 mbarriers + 1024
// bytes of alignment slack = 164936. A third K/V stage fits (+ 64 KiB + 4 mbarriers = 230504 <=
// 232448); sm_80, or an override outside its schedule (128 query rows on 8 warps), keeps a form
// without it.
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory=tuning-table=none | FileCheck %s --check-prefix=WS
// The built-in table splits this causal D = 128 forward by key length: 192-key blocks above 4096 keys, the hand
// rule's plan up to 4096 (docs/tuning.md, session 38).
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory | FileCheck %s --check-prefix=BUILTIN
// BUILTIN-LABEL: tile.kernel @attention_attention_fwd(
// BUILTIN-SAME: block_n = 192 : i64
// BUILTIN-SAME: run_if = #tile.run_if<arg = 1, dim = 2, min = 4097, max = -1>
// BUILTIN-SAME: tuning = {entry = "compiler/tuning/sm_90a.txt:{{[0-9]+}}", key = "sm_90a attention_forward bf16 d128 causal"
// BUILTIN-LABEL: tile.kernel @attention_attention_fwd_keys_le_4096(
// BUILTIN-SAME: block_n = 128 : i64
// BUILTIN-SAME: run_if = #tile.run_if<arg = 1, dim = 2, min = 0, max = 4096>
// BUILTIN-SAME: key = "sm_90a attention_forward bf16 d128@s<=4096 causal"
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory="tuning-table=none stages=3" | FileCheck %s --check-prefix=WS-OVERRIDE
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory="tuning-table=none block-m=64 warps=4" | FileCheck %s --check-prefix=WS-FALLBACK
// The tuning table (docs/tuning.md): an entry for the kernel's key replaces the hand rule's plan and is
// named in the kernel (with its schedule knob for flash-warp-specialize); options still override it.
// A table without the key, or none, leaves the hand rule. A malformed table is refused naming its file
// and line; an entry whose plan does not fit says so.
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory=tuning-table=%S/Inputs/tuning-plan-memory.txt | FileCheck %s --check-prefix=TUNED
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory="tuning-table=%S/Inputs/tuning-plan-memory.txt stages=2" | FileCheck %s --check-prefix=TUNED-OVERRIDE
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory=tuning-table=%S/Inputs/tuning-no-match.txt | FileCheck %s --check-prefixes=WS,UNTUNED
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory=tuning-table=none | FileCheck %s --check-prefixes=WS,UNTUNED
// RUN: flash-opt %s --flash-tile | not flash-opt --flash-plan-memory=tuning-table=%S/Inputs/tuning-malformed.txt 2>&1 | FileCheck %s --check-prefix=MALFORMED
// RUN: flash-opt %s --flash-tile | not flash-opt --flash-plan-memory=tuning-table=%S/Inputs/tuning-overflow.txt 2>&1 | FileCheck %s --check-prefix=TUNED-OVERFLOW
// RUN: flash-opt %s --flash-tile | not flash-opt --flash-plan-memory=tuning-table=%t.missing.txt 2>&1 | FileCheck %s --check-prefix=MISSING
// TUNED-LABEL: tile.kernel @attention_attention_fwd
// TUNED-SAME: block_m = 128 : i64, block_n = 64 : i64
// TUNED-SAME: stages = 3 : i64, strategy = #tile.strategy<wgmma_ws_sm90>,
// TUNED-SAME: tuning = {entry = "{{.*}}tuning-plan-memory.txt:2", key = "sm_90a attention_forward bf16 d128 causal", ping_pong = false}
// TUNED-OVERRIDE-LABEL: tile.kernel @attention_attention_fwd
// TUNED-OVERRIDE-SAME: block_n = 64 : i64
// TUNED-OVERRIDE-SAME: stages = 2 : i64
// TUNED-OVERRIDE-SAME: tuning = {entry = "{{.*}}tuning-plan-memory.txt:2"
// UNTUNED-NOT: tuning =
// MALFORMED: error: flash-plan-memory: {{.*}}tuning-malformed.txt:2: block_n must be an integer in [1, 256], got 'sixty'
// TUNED-OVERFLOW: error: flash-plan-memory: @attention_attention_fwd needs {{[0-9]+}} bytes of shared memory with block_m = 128, block_n = 256, stages = 4
// TUNED-OVERFLOW-SAME: the plan is tuning table entry {{.*}}tuning-overflow.txt:2's: lower its block sizes or stages, or give it a key that does not match this kernel
// MISSING: error: flash-plan-memory: cannot read tuning table '{{.*}}.missing.txt': No such file or directory
// WS-LABEL: tile.kernel @attention_attention_fwd
// WS-SAME: block_m = 128 : i64, block_n = 128 : i64
// WS-SAME: smem_bytes = 164944 : i64
// WS-SAME: stages = 2 : i64, strategy = #tile.strategy<wgmma_ws_sm90>, warps = 8 : i64
// WS-OVERRIDE-LABEL: tile.kernel @attention_attention_fwd
// WS-OVERRIDE-SAME: smem_bytes = 230512 : i64
// WS-OVERRIDE-SAME: stages = 3 : i64, strategy = #tile.strategy<wgmma_ws_sm90>, warps = 8 : i64
// WS-FALLBACK-LABEL: tile.kernel @attention_attention_fwd
// WS-FALLBACK-SAME: block_m = 64 : i64
// WS-FALLBACK-SAME: strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64
// The Sᵀ backward kernel at D = 128 (no softcap): the warp-specialised key split on sm_90a (128 keys on 8
// warps, 64 queries a step; shared memory from AttentionBwdWsPlan: K, V 2 x 32 KiB, a 2-slot Q / dO ring
// 64 KiB, two dSᵀ buffers 32 KiB, dQ's TMA boxes 32 KiB, lse / D 1 KiB, mbarriers, 1 KiB of alignment = 198696 bytes); mma.sync
// when an override breaks that shape; a query block whose 16-row bands do not split the warps evenly is
// refused (dQ's warp groups would add columns twice). (The hand rules: the built-in tuning table gives this causal
// key 3 stages.)
// RUN: flash-opt %S/Inputs/attention-bwd-transposed-kernel.mlir --flash-plan-memory=tuning-table=none | FileCheck %s --check-prefix=ST
// RUN: flash-opt %S/Inputs/attention-bwd-transposed-kernel.mlir --flash-plan-memory="warps=4 block-n=64 tuning-table=none" | FileCheck %s --check-prefix=ST-4W
// RUN: not flash-opt %S/Inputs/attention-bwd-transposed-kernel.mlir --flash-plan-memory="block-m=96 tuning-table=none" 2>&1 | FileCheck %s --check-prefix=ST-BANDS
// A shared-memory overflow says which spec choice causes it and what to change, also on
// kernels the user never wrote (a backward kernel, the fused FFN); sizes saturate instead of
// wrapping around below the budget (a tile of 2^64 elements passed as 0 bytes).
// RUN: not flash-opt %S/Inputs/ffn-wide-output-f32.mlir --flash-tile=ffn-plan=fused --flash-plan-memory 2>&1 | FileCheck %s --check-prefix=HINT-FFN
// HINT-FFN: error: flash-plan-memory: @wide_ffn_fused needs {{[0-9]+}} bytes of shared memory {{.*}}; this is the fused kernel of the flash.ffn at this location, which keeps a [block_n x d_out] slab of w2 in shared memory: a smaller d_out fits, or flash-tile's ffn-plan=two-kernel never needs the slab
// RUN: flash-opt %S/Inputs/attention-f32-d256.mlir --flash-generate-backward --flash-tile=target=sm_80 | not flash-opt --flash-plan-memory=target=sm_80 2>&1 | FileCheck %s --check-prefix=HINT-ATTN
// HINT-ATTN: error: flash-plan-memory: @attention_attention_bwd needs {{.*}}; this is a backward kernel (attention_backward) generated for the flash.attention at this location, whose head dims D = 256, Dv = 256 set its tile widths: use smaller head dims for sm_80
// The fused FFN's w2 slab is bounded by the tile types too, not only by shared memory: at d_out = 1024 (bf16) the
// [64 x 1024] f32 accumulator fits a tile exactly, but a 256-row slab of w2 (512 KB) is refused before it is built.
// RUN: not flash-opt %S/Inputs/ffn-output-1024.mlir --flash-tile=ffn-plan=fused "--flash-plan-memory=block-m=64 block-n=256" 2>&1 | FileCheck %s --check-prefix=WIDE-SLAB
// WIDE-SLAB: ffn-output-1024.mlir:4:8: error: cannot build kernel @ffn_out1024_ffn_fused.rebuild: the fused FFN keeps a slab of w2, a [256 x 1024] tile of w2 (d_out = 1024) of 524288 bytes, more than a tile holds (262144)
// RUN: flash-opt %S/Inputs/plan-memory-wide-head.mlir --flash-plan-memory=target=sm_80 | FileCheck %s --check-prefix=WIDE-HEAD-FITS
// RUN: not flash-opt %S/Inputs/plan-memory-wide-head.mlir "--flash-plan-memory=target=sm_80 block-m=128" 2>&1 | FileCheck %s --check-prefix=WIDE-HEAD
// WIDE-HEAD-FITS: tile.kernel @fwd({{.*}}block_m = 64 : i64
// WIDE-HEAD: error: cannot build kernel @fwd.rebuild: the attention kernel's f32 tiles of [128 x 1024] (block_m = 128, block_n = 64, head dims D = 1024, Dv = 1024) take 524288 bytes, more than a tile holds (262144): smaller block sizes or head dims fit
// RUN: not flash-opt %S/Inputs/plan-memory-huge-tile.mlir --flash-plan-memory 2>&1 | FileCheck %s --check-prefix=HUGE
// The tile type's own bounds (TileLimits.h) refuse such a tile when it is parsed, before the planner's
// saturating arithmetic (which still guards tiles built in-process) sees it.
// HUGE: plan-memory-huge-tile.mlir:9:80: error: !tile.tile dimension 4294967296 exceeds 65536
// ST: tile.kernel @attention_attention_bwd({{.*}}block_m = 64 : i64, block_n = 128 : i64
// ST-SAME: smem_bytes = 231464 : i64
// ST-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 8
// ST-4W: tile.kernel @attention_attention_bwd({{.*}}block_m = 64 : i64, block_n = 64 : i64
// ST-4W-SAME: strategy = #tile.strategy<mma_sync_sm80>, warps = 4
// ST-BANDS: error: flash-plan-memory: plan for @attention_attention_bwd is invalid: block_m = 96 must divide or be a multiple of 16 x warps = 128 (dQ's warp groups)

// sm_90a defaults for D = 128 bf16 forward: Br = 128, Bc = 128, 8 warps (one
// 16-row mma band per warp), 2 stages. Shared memory: Q 128x128 bf16 = 32 KiB
// at 0, K and V 2 buffers x 32 KiB each: 32 + 64 + 64 = 160 KiB.
// CHECK-LABEL: tile.kernel @attention_attention_fwd
// CHECK-SAME: block_m = 128 : i64, block_n = 128 : i64
// CHECK-SAME: smem_bytes = 163840 : i64
// CHECK-SAME: stages = 2 : i64
// CHECK-SAME: warps = 8 : i64
// CHECK: tile.load %arg0{{.*}} {smem_offset = 0 : i64} : {{.*}} -> <128x128xbf16, shared>
// CHECK: tile.load %arg1{{.*}} {buffers = 2 : i64, smem_offset = 32768 : i64}
// CHECK: tile.load %arg2{{.*}} {buffers = 2 : i64, smem_offset = 98304 : i64}
//
// sm_80 (mma.sync, no wgmma): 64 x 64 blocks for D = 128 (16 query rows per
// warp; 32 spilled in the generated code): Q 16 KiB + K, V 2 x 16 KiB = 80 KiB.
// SM80-LABEL: tile.kernel @attention_attention_fwd
// SM80-SAME: block_m = 64 : i64, block_n = 64 : i64
// SM80-SAME: smem_bytes = 81920 : i64
//
// Options override the target defaults and the kernel is rebuilt at the new
// sizes (grid divisor and tile shapes follow): Q 64x128 = 16 KiB, K/V 3 x 8 KiB.
// OVERRIDE: warning: flash-plan-memory: @handwritten has no recipe (spec); block-size options do not apply to it
// OVERRIDE-LABEL: tile.kernel @attention_attention_fwd
// OVERRIDE-SAME: block_m = 64 : i64, block_n = 32 : i64
// OVERRIDE-SAME: grid = [#tile.grid<ceildiv(arg0[2], 64)>
// OVERRIDE-SAME: smem_bytes = 65536 : i64
// OVERRIDE-SAME: stages = 3 : i64
// OVERRIDE-SAME: warps = 4 : i64
// OVERRIDE: tile.load %arg1{{.*}} {buffers = 3 : i64, smem_offset = 16384 : i64} : {{.*}} -> <32x128xbf16, shared>
// OVERRIDE: tile.matmul {{.*}} -> <64x32xf32, register>
//
// Q 256x128 (64 KiB) + K, V 4 x 64 KiB each = 576 KiB > 227 KiB.
// OVERFLOW: error: flash-plan-memory: @attention_attention_fwd needs 589824 bytes of shared memory with block_m = 256, block_n = 256, stages = 4 but sm_90a allows 232448 per block: it overflows by 357376 bytes
// OVERFLOW-SAME: ; lower the block-m, block-n or stages options of flash-plan-memory
//
// BANDS: error: flash-plan-memory: plan for @attention_attention_fwd is invalid: block_m = 32 does not split into 16-row bands over 4 warps (needs a multiple of 64)
// TARGET: error: flash-plan-memory: unknown target 'sm_75' (known: sm_80, sm_90a)
// NEGATIVE: error: flash-plan-memory: stages must be >= 0 (0: target default), got -1
func.func @attention(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x16x?x128xbf16>, %v: tensor<?x16x?x128xbf16>) -> tensor<?x16x?x128xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.08838834764831845 mask = #flash.mask<causal> num_kv_heads = 16
      : (tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>) -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>)
  return %out : tensor<?x16x?x128xbf16>
}

// A hand-written kernel without a recipe keeps its sizes and only gets its
// shared-memory layout: 64x64 f32 = 16 KiB, then a 128-aligned copy.
// CHECK-LABEL: tile.kernel @handwritten
// CHECK-SAME: block_m = 64 : i64
// CHECK-SAME: smem_bytes = 32768 : i64
// CHECK: tile.load {{.*}} {smem_offset = 0 : i64}
// CHECK: tile.copy {{.*}} {smem_offset = 16384 : i64}
tile.kernel @handwritten(%a: !tile.tensor<?x64xf32>) attributes {
    grid = [#tile.grid<ceildiv(arg0[0], 64)>, #tile.grid<1>, #tile.grid<1>],
    strategy = #tile.strategy<mma_sync_sm80>, block_m = 64, block_n = 64, warps = 4, stages = 1} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %rb = tile.program_id x
  %n = tile.dim %a, 0 : !tile.tensor<?x64xf32>
  %row0 = arith.muli %rb, %c64 : index
  %t = tile.load %a[%row0, %c0] limit [%n, %c64] : !tile.tensor<?x64xf32> -> !tile.tile<64x64xf32, shared>
  %r = tile.convert %t : !tile.tile<64x64xf32, shared> -> !tile.tile<64x64xf32, register>
  %s = tile.copy %r : !tile.tile<64x64xf32, register> -> !tile.tile<64x64xf32, shared>
  tile.store %s, %a[%row0, %c0] limit [%n, %c64] : !tile.tile<64x64xf32, shared>, !tile.tensor<?x64xf32>
  tile.return
}

// The default pipeline depth is lowered until a kernel fits: on the cp.async
// GEMM form (pinned by the table: the sm_90a hand rule is the warp-specialised
// GEMM, whose ring and epilogue pieces fit 4 stages) the gated FFN
// backward's dx += du·W_upᵀ (128 x 256, bf16) reads its C tile (64 KiB) beside
// the pipeline, so 4 stages of 48 KiB (256 KiB) do not fit and it gets 3
// (208 KiB); the other GEMMs keep 4.
// STAGES-LABEL: tile.kernel @swiglu_ffn_bwd_dw2
// STAGES-SAME: stages = 4 : i64
// STAGES-LABEL: tile.kernel @swiglu_ffn_bwd_dx_up
// STAGES-SAME: smem_bytes = 212992 : i64
// STAGES-SAME: stages = 3 : i64
func.func @swiglu(%x: tensor<?x1024xbf16>, %wg: tensor<1024x2048xbf16>, %wu: tensor<1024x2048xbf16>, %w2: tensor<2048x1024xbf16>) -> tensor<?x1024xbf16> {
  %y = flash.ffn silu %x, %wg up %wu, %w2
      : (tensor<?x1024xbf16>, tensor<1024x2048xbf16>, tensor<1024x2048xbf16>, tensor<2048x1024xbf16>) -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
// An option that meets a (built-in) entry's other fields: the error names both.
// RUN: flash-opt %s --flash-tile | not flash-opt --flash-plan-memory="stages=3" 2>&1 | FileCheck %s --check-prefix=OVERRIDE-ENTRY
// OVERRIDE-ENTRY: error: flash-plan-memory: @attention_attention_fwd needs {{[0-9]+}} bytes of shared memory with block_m = 128, block_n = 192, stages = 3
// OVERRIDE-ENTRY-SAME: the options set some of its fields and tuning table entry compiler/tuning/sm_90a.txt:{{[0-9]+}} the others: lower the block-m, block-n or stages options of flash-plan-memory, or plan it from the hand rules with tuning-table=none
