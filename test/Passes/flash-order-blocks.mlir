// flash-order-blocks chooses the order in which each kernel's blocks take their
// tiles. The GEMM-family kernels (here the FFN's up and down projections, the
// training forward's, and its backward: dpre, dW2, dW1, dx) take their 2-D
// tile grid grouped: tile
// index p walks 8 row blocks of one column block, then the
// next column, so the blocks in flight share A rows and B columns in L2
// (row-major, a wave re-reads all of A for every column block). The
// warp-specialised GEMM (here all of them, sm_90a's default) walks the same
// groups on a persistent grid; the cp.async form launches them as a 2-D grid. A causal
// attention forward outside the warp-specialised kernel (sm_80 here) takes its
// longest query-row blocks first (the warp-specialised one too: its Config's
// kLongestFirst); the warp-specialised backward's main kernel reads its (key
// block, head, batch) grid in groups of 4 (head, batch) pairs, key blocks
// slowest inside a group (its Config's kGridHeadGroup); other kernels keep the
// launch order.
// RUN: flash-opt %s --flash-generate-backward --flash-tile | flash-opt --flash-plan-memory=tuning-table=none | flash-opt --flash-order-blocks | FileCheck %s
// RUN: flash-opt %s --flash-generate-backward --flash-tile | flash-opt --flash-plan-memory=tuning-table=none | flash-opt --flash-order-blocks="group=4" | FileCheck %s --check-prefix=GROUP4
// A tuning-table entry's group (the kernel's `tuning` attribute) overrides the option for that kernel.
// RUN: flash-opt %s --flash-generate-backward --flash-tile | flash-opt --flash-plan-memory=tuning-table=%S/Inputs/tuning-schedule.txt | flash-opt --flash-order-blocks | FileCheck %s --check-prefix=TUNED
// RUN: flash-opt %s --flash-generate-backward --flash-tile=target=sm_80 | flash-opt --flash-plan-memory=target=sm_80 | flash-opt --flash-order-blocks | FileCheck %s --check-prefix=SM80
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory | not flash-opt --flash-order-blocks="group=0" 2>&1 | FileCheck %s --check-prefix=BADGROUP
// head-groups=1: the backward keeps the launch order (no grid_order); 0 or above 64 is refused.
// RUN: flash-opt %s --flash-generate-backward --flash-tile | flash-opt --flash-plan-memory=tuning-table=none | flash-opt --flash-order-blocks="head-groups=1" | FileCheck %s --check-prefix=HG1
// RUN: flash-opt %s --flash-generate-backward --flash-tile | flash-opt --flash-plan-memory=tuning-table=none | flash-opt --flash-order-blocks="head-groups=8" | FileCheck %s --check-prefix=HG8
// RUN: flash-opt %s --flash-tile | flash-opt --flash-plan-memory | not flash-opt --flash-order-blocks="head-groups=65" 2>&1 | FileCheck %s --check-prefix=BADHG
// A tuning entry's group (flashc.tune measures 1, 4 and 8) overrides the option on the backward, masked or not;
// on a backward outside the warp-specialised form it is refused.
// RUN: flash-opt %s --flash-generate-backward --flash-tile | flash-opt --flash-plan-memory=tuning-table=%S/Inputs/tuning-head-groups.txt | flash-opt --flash-order-blocks | FileCheck %s --check-prefix=HG-TUNED
// RUN: printf 'sm_90a attention_backward bf16 d128 causal -> form=rows strategy=mma_sync_sm80 block_m=64 block_n=64 warps=4 stages=2 group=4\n' > %t.rows.txt
// RUN: not flashc %s --tuning-table=%t.rows.txt --emit=tile -o /dev/null 2>&1 | FileCheck %s --check-prefix=HG-ROWS
// The library's backward takes the launch order or head groups; any other order on it is refused by the emitter.
// RUN: flashc %s --emit=tile -o - | sed 's/\(tile.kernel @full_attention_bwd(.*attributes {\)/\1grid_order = #tile.grid_order<order = longest_first, group = 1>, /' | not flashc - --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADORDER
// The sm_80 backward (mma.sync) keeps the launch order.
// RUN: flash-opt %s --flash-generate-backward --flash-tile=target=sm_80 | flash-opt --flash-plan-memory=target=sm_80 | flash-opt --flash-order-blocks | FileCheck %s --check-prefix=SM80-BWD
// persistent: the warp-specialised attention forward loops on a grid of min(units, SMs) blocks (causal or not);
// kernels of other strategies keep their order. A tuning-table entry's persistent overrides the option.
// RUN: flash-opt %s --flash-generate-backward --flash-tile | flash-opt --flash-plan-memory=tuning-table=none | flash-opt --flash-order-blocks="persistent=true" | FileCheck %s --check-prefix=PERSISTENT
// RUN: flash-opt %s --flash-generate-backward --flash-tile=target=sm_80 | flash-opt --flash-plan-memory=target=sm_80 | flash-opt --flash-order-blocks="persistent=true" | FileCheck %s --check-prefix=SM80
// RUN: flash-opt %s --flash-generate-backward --flash-tile | flash-opt --flash-plan-memory=tuning-table=%S/Inputs/tuning-persistent.txt | flash-opt --flash-order-blocks | FileCheck %s --check-prefix=PERSISTENT
// RUN: flash-opt %s --flash-generate-backward --flash-tile | flash-opt --flash-plan-memory=tuning-table=%S/Inputs/tuning-not-persistent.txt | flash-opt --flash-order-blocks="persistent=true" | FileCheck %s --check-prefix=TUNED-OFF
// The emitter prints the order as a remap of blockIdx (a bijection of the grid).
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: flashc %s --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefix=CUDA-SM80

// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_dpre(
// CHECK-SAME: grid_order = #tile.grid_order<order = persistent, group = 8>
// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_dw2(
// CHECK-SAME: grid_order = #tile.grid_order<order = persistent, group = 8>
// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_dw1(
// CHECK-SAME: grid_order = #tile.grid_order<order = persistent, group = 8>
// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_dx(
// CHECK-SAME: grid_order = #tile.grid_order<order = persistent, group = 8>
// CHECK-LABEL: tile.kernel @ffn_ffn_up(
// CHECK-SAME: grid_order = #tile.grid_order<order = persistent, group = 8>
// CHECK-LABEL: tile.kernel @ffn_ffn_down(
// CHECK-SAME: grid_order = #tile.grid_order<order = persistent, group = 8>
// CHECK-LABEL: tile.kernel @ffn_forward_train_ffn_up(
// CHECK-SAME: grid_order = #tile.grid_order<order = persistent, group = 8>
// GROUP4: tile.kernel @ffn_ffn_up(
// GROUP4-SAME: grid_order = #tile.grid_order<order = persistent, group = 4>
// TUNED-LABEL: tile.kernel @ffn_ffn_up(
// TUNED-SAME: grid_order = #tile.grid_order<order = persistent, group = 8>
// TUNED-LABEL: tile.kernel @ffn_ffn_down(
// TUNED-SAME: grid_order = #tile.grid_order<order = persistent, group = 16>
// TUNED-SAME: tuning = {entry = "{{.*}}tuning-schedule.txt:5", group = 16 : i64, key = "sm_90a gemm bf16 m?n1024k4096 -"}
// The ws GEMM's Config carries the group; the cp.async form remaps blockIdx.
// CUDA-LABEL: // ---- ffn_ffn_up ----
// CUDA: static constexpr int kBlockN = 256, kStages = 4, kGroup = 8;
// RUN: flashc %s --tuning-table=%S/../Codegen/Inputs/tuning-gemm-cp-async.txt --emit=cuda -o - | FileCheck %s --check-prefix=CUDA-CP-ASYNC
// CUDA-CP-ASYNC-LABEL: flashc_ffn_ffn_up(
// CUDA-CP-ASYNC: const int m_block = grouped_block<8>().x;  // tiles in groups of 8 row blocks (L2 reuse)
// CUDA-CP-ASYNC-NEXT: const int n_block = grouped_block<8>().y;
func.func @ffn(%x: tensor<?x1024xbf16>, %w1: tensor<1024x4096xbf16>, %w2: tensor<4096x1024xbf16>) -> tensor<?x1024xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1, %w2 : (tensor<?x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}

// Causal attention: the forward takes its rows longest first, on sm_90a (the
// warp-specialised kernel) and sm_80 (mma.sync) alike; the warp-specialised
// backward's main kernel takes head groups (the launch order would leave the
// last head's longest key blocks for the grid's tail), its pre- and
// postprocess the launch order.
// CHECK-LABEL: tile.kernel @causal_attention_bwd_preprocess(
// CHECK-NOT: grid_order
// CHECK-LABEL: tile.kernel @causal_attention_bwd(
// CHECK-SAME: grid_order = #tile.grid_order<order = head_groups, group = 4>
// CHECK-SAME: strategy = #tile.strategy<wgmma_ws_sm90>
// CHECK-LABEL: tile.kernel @causal_attention_bwd_postprocess(
// CHECK-NOT: grid_order
// CHECK-LABEL: tile.kernel @causal_attention_fwd(
// CHECK-SAME: grid_order = #tile.grid_order<order = longest_first, group = 1>
// CHECK-SAME: strategy = #tile.strategy<wgmma_ws_sm90>
// PERSISTENT-LABEL: tile.kernel @causal_attention_bwd(
// PERSISTENT-SAME: grid_order = #tile.grid_order<order = head_groups, group = 4>
// PERSISTENT-LABEL: tile.kernel @causal_attention_fwd(
// PERSISTENT-SAME: grid_order = #tile.grid_order<order = persistent, group = 1>
// PERSISTENT-SAME: strategy = #tile.strategy<wgmma_ws_sm90>
// TUNED-OFF-LABEL: tile.kernel @causal_attention_fwd(
// TUNED-OFF-SAME: grid_order = #tile.grid_order<order = longest_first, group = 1>
// TUNED-OFF-SAME: tuning = {entry = "{{.*}}tuning-not-persistent.txt:2", key = "sm_90a attention_forward bf16 d128 causal", persistent = false}
// SM80-LABEL: tile.kernel @causal_attention_fwd(
// SM80-SAME: grid_order = #tile.grid_order<order = longest_first, group = 1>
// HG1-LABEL: tile.kernel @causal_attention_bwd(
// HG1-NOT: grid_order
// HG1-SAME: strategy = #tile.strategy<wgmma_ws_sm90>
// HG8-LABEL: tile.kernel @causal_attention_bwd(
// HG8-SAME: grid_order = #tile.grid_order<order = head_groups, group = 8>
// HG-TUNED-LABEL: tile.kernel @causal_attention_bwd(
// HG-TUNED-SAME: grid_order = #tile.grid_order<order = head_groups, group = 8>
// HG-TUNED-SAME: tuning = {entry = "{{.*}}tuning-head-groups.txt:4", group = 8 : i64
// HG-TUNED-LABEL: tile.kernel @causal64_attention_bwd(
// HG-TUNED-NOT: grid_order
// HG-TUNED-SAME: tuning = {entry = "{{.*}}tuning-head-groups.txt:6", group = 1 : i64
// HG-TUNED-LABEL: tile.kernel @full_attention_bwd(
// HG-TUNED-SAME: grid_order = #tile.grid_order<order = head_groups, group = 2>
// HG-ROWS: error: flash-order-blocks: @causal_attention_bwd's tuning entry asks for head groups (group = 4), which only the warp-specialised backward takes
// SM80-BWD-LABEL: tile.kernel @causal_attention_bwd(
// SM80-BWD-NOT: grid_order
// SM80-BWD-SAME: strategy = #tile.strategy<mma_sync_sm80>
// The ws backward's Config carries the group (the device library remaps blockIdx: tile_schedule.cuh).
// CUDA-LABEL: // ---- causal_attention_bwd ----
// CUDA: static constexpr int kGridHeadGroup = 4;
// CUDA-SM80-LABEL: flashc_causal_attention_fwd(
// CUDA-SM80: const int q_block = static_cast<int>(gridDim.x - 1 - blockIdx.x);  // longest rows first
func.func @causal(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>)
    -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.0883883 mask = #flash.mask<causal> num_kv_heads = 8
      : (tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>)
      -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>)
  return %o, %lse : tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
}

// D = 64: three consumer warpgroups (12 warps), which spill on the persistent
// grid: the option passes over it (longest first, as without it).
// PERSISTENT-LABEL: tile.kernel @causal64_attention_fwd(
// PERSISTENT-SAME: grid_order = #tile.grid_order<order = longest_first, group = 1>
// PERSISTENT-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 12 : i64
func.func @causal64(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>)
    -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 8
      : (tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>)
      -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>)
  return %o, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}

// Without a mask every key block walks every query block: the backward keeps the launch order (its blocks in flight
// share one head's Q and dO in L2), its Config's kGridHeadGroup is 1.
// CHECK-LABEL: tile.kernel @full_attention_bwd(
// CHECK-NOT: grid_order
// CHECK-SAME: strategy = #tile.strategy<wgmma_ws_sm90>
// CUDA-LABEL: // ---- full_attention_bwd ----
// CUDA: static constexpr int kGridHeadGroup = 1;
func.func @full(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>)
    -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.0883883 mask = #flash.mask<none> num_kv_heads = 8
      : (tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>)
      -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>)
  return %o, %lse : tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
}

// BADGROUP: error: flash-order-blocks: group must be in [1, 64], got 0
// BADHG: error: flash-order-blocks: head-groups must be in [1, 64], got 65
// BADORDER: error: CUDA emitter: @full_attention_bwd has strategy wgmma_ws_sm90, a warp-specialised kernel, but its grid order is neither the launch order nor head_groups (the orders the library's backward takes)
