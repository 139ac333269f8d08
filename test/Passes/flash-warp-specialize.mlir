// flash-warp-specialize gives every wgmma_ws_sm90 kernel (the sm_90a attention
// forward flash-plan-memory planned as the warp-specialised TMA kernel) its
// schedule: one producer warpgroup that issues every TMA copy and gives its
// registers back (setmaxnreg.dec 24), warps / 4 consumer warpgroups that take
// them (setmaxnreg.inc 240: 24 + 2 x 240 = 3 x 168, what 384 threads have at
// launch), Q resident, K and V through a ring of the plan's stages and the
// consumers in ping-pong (the order of the query-row blocks is
// flash-order-blocks', test/Passes/flash-order-blocks.mlir).
// Kernels of other strategies (sm_80, the backward at head dims up to 128) get
// no schedule.
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory=tuning-table=none | flash-opt --flash-warp-specialize | FileCheck %s
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory="tuning-table=none stages=1" | flash-opt --flash-warp-specialize=ping-pong=false | FileCheck %s --check-prefix=OPTIONS
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory=target=sm_80 | flash-opt --flash-warp-specialize | FileCheck %s --check-prefix=SM80
// A tuning-table entry's ping_pong (the kernel's `tuning` attribute) overrides the option.
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory=tuning-table=%S/Inputs/tuning-schedule.txt | flash-opt --flash-warp-specialize | FileCheck %s --check-prefix=TUNED
// TUNED-LABEL: tile.kernel @causal_attention_fwd(
// TUNED-SAME: ring_stages = 2, ping_pong = false>
// TUNED-SAME: tuning = {entry = "{{.*}}tuning-schedule.txt:3"
// The fused FFN planned warp-specialised (the default): x's row block
// resident, W1's columns and W2's rows of each hidden block in the ring; the
// mma.sync kernel (a point of its tuning space, here from a table entry) has no
// schedule.
// RUN: flash-opt %S/Inputs/ffn-fused-d256.mlir --flash-tile | flash-opt --flash-plan-memory | flash-opt --flash-warp-specialize | FileCheck %s --check-prefix=FFN
// RUN: flash-opt %S/Inputs/ffn-fused-d256.mlir --flash-tile | flash-opt --flash-plan-memory=tuning-table=%S/Inputs/tuning-mma-fused-ffn.txt | flash-opt --flash-warp-specialize | FileCheck %s --check-prefix=FFN-MMA
// RUN: flash-opt %S/Inputs/ffn-fused-d256.mlir --flash-tile | flash-opt --flash-plan-memory=tuning-table=%S/Inputs/tuning-schedule.txt | flash-opt --flash-warp-specialize | FileCheck %s --check-prefix=FFN-TUNED
// FFN-TUNED: ring = ["w1", "w2"], ring_stages = 2, ping_pong = false>
// FFN-LABEL: tile.kernel @ffn_ffn_fused(
// FFN-SAME: block_m = 128 : i64, block_n = 64 : i64
// FFN-SAME: schedule = #tile.warp_specialized<producer_registers = 24, consumer_warpgroups = 2, consumer_registers = 240, resident = ["x"], ring = ["w1", "w2"], ring_stages = 2, ping_pong = true>
// FFN-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 8
// FFN-MMA-LABEL: tile.kernel @ffn_ffn_fused(
// FFN-MMA-NOT: schedule =
// FFN-MMA-SAME: strategy = #tile.strategy<mma_sync_sm80>
// The backward's main kernel of a head above 128 (flash-plan-memory's ws
// backward): K and V resident, each query block's Q and dO through the ring,
// two consumer warpgroups split by role (Pᵀ and dV, dSᵀ and dK), each holding
// whole 64-key tiles of the plan's 4 warps; no ping-pong (the roles hand work
// to each other by named barriers instead).
// (Printed, parsed and printed again: role_split round-trips.)
// RUN: flash-opt %S/Inputs/attention-d256-gqa.mlir --flash-generate-backward | flash-opt --flash-tile | flash-opt --flash-plan-memory | flash-opt --flash-warp-specialize | flash-opt | FileCheck %s --check-prefix=BWD
// A block-size override outside its shape plans the mma.sync backward (no schedule); a ring
// deeper than shared memory holds is the overflow error of an explicit request.
// RUN: flash-opt %S/Inputs/attention-d256-gqa.mlir --flash-generate-backward | flash-opt --flash-tile | flash-opt --flash-plan-memory="block-n=128 tuning-table=none" 2>/dev/null | flash-opt --flash-warp-specialize | FileCheck %s --check-prefix=BWD-OVERRIDE
// RUN: flash-opt %S/Inputs/attention-d256-gqa.mlir --flash-generate-backward | flash-opt --flash-tile | not flash-opt --flash-plan-memory=stages=3 2>&1 | FileCheck %s --check-prefix=BWD-STAGES
// Up to 128 columns the consumers split by keys: a 128-key block on 8 warps (warpgroup g owns keys
// 64g..), the same ring and residents. At two stages four dSᵀ buffers fit, so the consumers take turns
// (a step's dQ in the next step; wsBackwardTakesTurns); at three they do not, and both warpgroups meet
// on dSᵀ every step (no ping-pong), whatever the option says. A 64-key override is outside that shape
// and plans mma.sync.
// RUN: flash-opt %S/Inputs/attention-bwd-transposed-kernel.mlir --flash-plan-memory=tuning-table=none | flash-opt --flash-warp-specialize | flash-opt | FileCheck %s --check-prefix=BWD-KEYS
// RUN: flash-opt %S/Inputs/attention-bwd-transposed-kernel.mlir --flash-plan-memory="stages=3 tuning-table=none" | flash-opt --flash-warp-specialize=ping-pong=true | FileCheck %s --check-prefix=BWD-KEYS-3
// BWD-KEYS-3: ring_stages = 3, ping_pong = false>
// The consumers' form a tuning entry asks for (ping_pong): taking turns beside three stages (two dSᵀ buffers of 16 KB:
// the meeting form's 231992 bytes), meeting at two (two buffers where the turns take four: 231464 - 2 x 16384).
// RUN: printf 'sm_90a attention_backward * * * -> stages=3 ping_pong=1\n' > %t.turns3.txt
// RUN: flash-opt %S/Inputs/attention-bwd-transposed-kernel.mlir --flash-plan-memory=tuning-table=%t.turns3.txt | flash-opt --flash-warp-specialize | FileCheck %s --check-prefix=BWD-TURNS-3
// BWD-TURNS-3: ring_stages = 3, ping_pong = true>, smem_bytes = 231992 : i64
// BWD-TURNS-3-SAME: tuning = {entry = "{{.*}}turns3.txt:1", key = "sm_90a attention_backward bf16 d128 causal", ping_pong = true}
// RUN: printf 'sm_90a attention_backward * * * -> stages=2 ping_pong=0\n' > %t.meet2.txt
// RUN: flash-opt %S/Inputs/attention-bwd-transposed-kernel.mlir --flash-plan-memory=tuning-table=%t.meet2.txt | flash-opt --flash-warp-specialize | FileCheck %s --check-prefix=BWD-MEET-2
// BWD-MEET-2: ring_stages = 2, ping_pong = false>, smem_bytes = 198696 : i64
// The role split (D = 256) cannot take turns: an entry asking for them is refused, naming itself.
// RUN: printf 'sm_90a attention_backward * * * -> ping_pong=1\n' > %t.turns-roles.txt
// RUN: flash-opt %S/Inputs/attention-d256-gqa.mlir --flash-generate-backward | flash-opt --flash-tile | flash-opt --flash-plan-memory=tuning-table=%t.turns-roles.txt | not flash-opt --flash-warp-specialize 2>&1 | FileCheck %s --check-prefix=BWD-TURNS-ROLES
// BWD-TURNS-ROLES: error: flash-warp-specialize: @wide_attention_bwd: its tuning entry {{.*}}turns-roles.txt:1 asks for ping_pong = 1, but the backward's consumers take turns only under the key split below D = 192 (this kernel: the role split)
// RUN: flash-opt %S/Inputs/attention-bwd-transposed-kernel.mlir --flash-plan-memory="block-n=64 warps=4 tuning-table=none" | flash-opt --flash-warp-specialize | FileCheck %s --check-prefix=BWD-KEYS-OVERRIDE
// BWD-KEYS-LABEL: tile.kernel @attention_attention_bwd(
// BWD-KEYS-SAME: block_m = 64 : i64, block_n = 128 : i64
// BWD-KEYS-SAME: schedule = #tile.warp_specialized<producer_registers = 24, consumer_warpgroups = 2, consumer_registers = 240, resident = ["k", "v"], ring = ["q", "dout"], ring_stages = 2, ping_pong = true>
// BWD-KEYS-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 8
// BWD-KEYS-OVERRIDE-LABEL: tile.kernel @attention_attention_bwd(
// BWD-KEYS-OVERRIDE-NOT: schedule =
// BWD-KEYS-OVERRIDE-SAME: strategy = #tile.strategy<mma_sync_sm80>, warps = 4
// BWD-OVERRIDE-LABEL: tile.kernel @wide_attention_bwd(
// BWD-OVERRIDE-NOT: schedule =
// BWD-OVERRIDE-SAME: block_n = 128 : i64
// BWD-OVERRIDE-SAME: strategy = #tile.strategy<mma_sync_sm80>
// BWD-STAGES: error: flash-plan-memory: @wide_attention_bwd needs 289336 bytes of shared memory with block_m = 64, block_n = 64, stages = 3 but sm_90a allows 232448 per block
// BWD-LABEL: tile.kernel @wide_attention_bwd(
// BWD-SAME: block_m = 64 : i64, block_n = 64 : i64
// BWD-SAME: schedule = #tile.warp_specialized<producer_registers = 24, consumer_warpgroups = 2, consumer_registers = 240, resident = ["k", "v"], ring = ["q", "dout"], ring_stages = 2, ping_pong = false, role_split = true>
// BWD-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 4
// BWD-LABEL: tile.kernel @wide_attention_bwd_postprocess(
// BWD-NOT: schedule =
// BWD: tile.kernel @wide_attention_fwd(
// Budgets setmaxnreg cannot take, or that overdraw the registers of the launch, are refused.
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory | not flash-opt --flash-warp-specialize=producer-registers=20 2>&1 | FileCheck %s --check-prefix=PRODUCER
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory | not flash-opt --flash-warp-specialize=consumer-registers=256 2>&1 | FileCheck %s --check-prefix=BUDGET

// CHECK-LABEL: tile.kernel @causal_attention_fwd(
// CHECK-SAME: schedule = #tile.warp_specialized<producer_registers = 24, consumer_warpgroups = 2, consumer_registers = 240, resident = ["q"], ring = ["k", "v"], ring_stages = 2, ping_pong = true>
// CHECK-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 8
// OPTIONS-LABEL: tile.kernel @causal_attention_fwd(
// OPTIONS-SAME: ring_stages = 1, ping_pong = false>
// SM80-NOT: schedule =
func.func @causal(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>)
    -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.0883883 mask = #flash.mask<causal> num_kv_heads = 8
      : (tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>)
      -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>)
  return %o, %lse : tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
}

// A sliding window, f16, D = 64: the same roles.
// CHECK-LABEL: tile.kernel @window_attention_fwd(
// CHECK-SAME: ring_stages = 2, ping_pong = true>
func.func @window(%q: tensor<?x8x?x64xf16>, %k: tensor<?x8x?x64xf16>, %v: tensor<?x8x?x64xf16>)
    -> (tensor<?x8x?x64xf16>, tensor<?x8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<sliding_window, left = 100, right = 0> num_kv_heads = 8
      : (tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>)
      -> (tensor<?x8x?x64xf16>, tensor<?x8x?xf32>)
  return %o, %lse : tensor<?x8x?x64xf16>, tensor<?x8x?xf32>
}

// D = 192 with Dv = 128, no mask: the same roles.
// CHECK-LABEL: tile.kernel @mla_attention_fwd(
// CHECK-SAME: consumer_registers = 240, resident = ["q"], ring = ["k", "v"], ring_stages = 2, ping_pong = true>
// The f32 kernels of the same spec set (no wgmma) keep theirs without one.
// CHECK-LABEL: tile.kernel @f32_attention_fwd(
// CHECK-NOT: schedule =
// CHECK-SAME: strategy = #tile.strategy<mma_sync_sm80>
func.func @mla(%q: tensor<?x16x?x192xbf16>, %k: tensor<?x16x?x192xbf16>, %v: tensor<?x16x?x128xbf16>)
    -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.0721688 mask = #flash.mask<none> num_kv_heads = 16
      : (tensor<?x16x?x192xbf16>, tensor<?x16x?x192xbf16>, tensor<?x16x?x128xbf16>)
      -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>)
  return %o, %lse : tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>
}

func.func @f32(%q: tensor<?x4x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x64xf32>)
    -> (tensor<?x4x?x64xf32>, tensor<?x4x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>)
      -> (tensor<?x4x?x64xf32>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x64xf32>, tensor<?x4x?xf32>
}

// PRODUCER: error: flash-warp-specialize: @causal_attention_fwd: #tile.warp_specialized producer_registers must be a multiple of 8 in [24, 256] (setmaxnreg), got 20
// BUDGET: error: flash-warp-specialize: @causal_attention_fwd: #tile.warp_specialized register budgets 24 + 2 x 256 exceed the 3 x 168 registers a thread of each warpgroup has at launch (384 threads share 65536)
