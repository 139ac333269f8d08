// flash-tile on flash.moe (docs/design/moe.md): a program of seven #tile.moe kernels, each one tile.moe_block a
// block — router, select, plan, permute, up and down projections (the grouped expert GEMMs), combine — with the
// routing's workspaces. The routed rows are T k; each expert's rows are padded to a multiple of 128, so the
// permuted workspaces hold C = 128 ceil((T k + 127 (E - 1)) / 128) rows and the row-block table 1 + C / 128
// entries. The graph evaluator computes it. (The training form: the last case; the backward:
// flash-generate-backward-moe.mlir.)
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-tile | FileCheck %s
// RUN: not flash-opt %s -split-input-file --flash-tile=target=sm_80 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: flash-eval %s -split-input-file --dynamic-size=17 | FileCheck %s --check-prefix=EVAL
// SM80: error: flash-tile: flash.moe needs a Hopper target (sm_90a: the grouped expert GEMMs are warp-specialised TMA kernels), not sm_80
// EVAL: @moe result #0 [17, 40] sum

// CHECK: tile.kernel @moe_moe_router(%{{.*}}: !tile.tensor<?x64xbf16>, %{{.*}}: !tile.tensor<64x8xbf16>, %{{.*}}: !tile.tensor<?x8xbf16>)
// (the logits' 128 x 128 tiles: flash-order-blocks puts the GEMMs on the persistent grid)
// CHECK-SAME: grid = [#tile.grid<ceildiv(arg2[0], 128)>, #tile.grid<1>, #tile.grid<1>]
// CHECK-SAME: spec = #tile.moe<role = moe_router, experts = 8, top_k = 2, sigmoid = false, renormalize = true, activation = silu, gated = true, element_type = bf16>
// CHECK-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 8
// CHECK: tile.moe_block(%{{.*}}, %{{.*}}, %{{.*}}) at[%{{.*}}, %{{.*}}, %{{.*}}]
// (8 tokens a block)
// CHECK: tile.kernel @moe_moe_select(%{{.*}}: !tile.tensor<?x8xbf16>, %{{.*}}: !tile.tensor<8xi32>, %{{.*}}: !tile.tensor<?xi32>, %{{.*}}: !tile.tensor<?xf32>, %{{.*}}: !tile.tensor<?xi32>)
// CHECK-SAME: grid = [#tile.grid<ceildiv(arg0[0], 8)>, #tile.grid<1>, #tile.grid<1>]
// CHECK-SAME: role = moe_select
// (the logits bind T, which sizes the row-block table)
// CHECK: tile.kernel @moe_moe_plan(%{{.*}}: !tile.tensor<?x8xbf16>, %{{.*}}: !tile.tensor<8xi32>, %{{.*}}: !tile.tensor<9xi32>, %{{.*}}: !tile.tensor<?xi32>)
// CHECK-SAME: grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>]
// CHECK: tile.kernel @moe_moe_permute(
// CHECK-SAME: grid = [#tile.grid<ceildiv(arg5[0], 8)>, #tile.grid<1>, #tile.grid<1>]
// (hidden's 128 x 128 tiles: h = 96, one column block; the gated weights w1 and w_up)
// (the plan and the GEMMs take the logits for T, which sizes their workspaces)
// CHECK: tile.kernel @moe_moe_up(%{{.*}}: !tile.tensor<?x8xbf16>, %{{.*}}: !tile.tensor<?x64xbf16>, %{{.*}}: !tile.tensor<8x64x96xbf16>, %{{.*}}: !tile.tensor<8x64x96xbf16>, %{{.*}}: !tile.tensor<?xi32>, %{{.*}}: !tile.tensor<?x96xbf16>)
// CHECK-SAME: grid = [#tile.grid<ceildiv(arg5[0], 128)>, #tile.grid<1>, #tile.grid<1>]
// CHECK-SAME: role = moe_up
// CHECK-SAME: strategy = #tile.strategy<wgmma_ws_sm90>
// CHECK: tile.kernel @moe_moe_down(%{{.*}}: !tile.tensor<?x8xbf16>, %{{.*}}: !tile.tensor<?x96xbf16>, %{{.*}}: !tile.tensor<8x96x40xbf16>, %{{.*}}: !tile.tensor<?xi32>, %{{.*}}: !tile.tensor<?x40xbf16>)
// CHECK-SAME: block_n = 256
// CHECK-SAME: role = moe_down
// CHECK: tile.kernel @moe_moe_combine(
// CHECK-SAME: grid = [#tile.grid<ceildiv(arg5[0], 8)>, #tile.grid<1>, #tile.grid<1>]
// CHECK: func.func @moe(%[[X:[a-z0-9]+]]: !tile.tensor<?x64xbf16> {tile.dims = ["T", ""], tile.name = "x"}
// CHECK-SAME: {tile.name = "router"}
// CHECK-SAME: {tile.name = "w1"}
// CHECK-SAME: {tile.name = "w_up"}
// CHECK-SAME: {tile.name = "w2"}
// CHECK-SAME: %[[Y:[a-z0-9]+]]: !tile.tensor<?x40xbf16> {tile.dims = ["T", ""], tile.name = "y"}) attributes {tile.program}
// routed = T k; C = 128 ceil((routed + 127 (E - 1)) / 128); the table 1 + C / 128
// CHECK: %[[COUNTS:.*]] = tile.alloc_tensor() {tile.name = "counts", tile.zero_fill} : <8xi32>
// CHECK: %[[T:.*]] = tile.dim %[[X]], 0
// CHECK: %[[ROUTED:.*]] = arith.muli %[[T]], %c2
// CHECK: %[[PADDED:.*]] = arith.addi %[[ROUTED]], %c889
// CHECK: %[[BLOCKS:.*]] = arith.ceildivsi %[[PADDED]], %c128
// CHECK: %[[CAP:.*]] = arith.muli %[[BLOCKS]], %c128
// CHECK: %[[ENTRIES:.*]] = arith.addi %[[BLOCKS]], %c1
// CHECK: %[[LOGITS:.*]] = tile.alloc_tensor(%[[T]]) {tile.name = "logits"} : <?x8xbf16>
// CHECK: %[[IDS:.*]] = tile.alloc_tensor(%[[ROUTED]]) {tile.name = "ids"} : <?xi32>
// CHECK: %[[WEIGHTS:.*]] = tile.alloc_tensor(%[[ROUTED]]) {tile.name = "route_weights"} : <?xf32>
// CHECK: %[[RANKS:.*]] = tile.alloc_tensor(%[[ROUTED]]) {tile.name = "ranks"} : <?xi32>
// CHECK: %[[OFFSETS:.*]] = tile.alloc_tensor() {tile.name = "offsets"} : <9xi32>
// CHECK: %[[GROUPS:.*]] = tile.alloc_tensor(%[[ENTRIES]]) {tile.name = "groups"} : <?xi32>
// CHECK: %[[PERMUTED:.*]] = tile.alloc_tensor(%[[CAP]]) {tile.name = "permuted"} : <?x64xbf16>
// CHECK: %[[HIDDEN:.*]] = tile.alloc_tensor(%[[CAP]]) {tile.name = "hidden"} : <?x96xbf16>
// CHECK: %[[OUT:.*]] = tile.alloc_tensor(%[[CAP]]) {tile.name = "expert_out"} : <?x40xbf16>
// CHECK: tile.launch @moe_moe_router(%[[X]], %{{.*}}, %[[LOGITS]])
// CHECK: tile.launch @moe_moe_select(%[[LOGITS]], %[[COUNTS]], %[[IDS]], %[[WEIGHTS]], %[[RANKS]])
// CHECK: tile.launch @moe_moe_plan(%[[LOGITS]], %[[COUNTS]], %[[OFFSETS]], %[[GROUPS]])
// CHECK: tile.launch @moe_moe_permute(%[[X]], %[[COUNTS]], %[[IDS]], %[[RANKS]], %[[OFFSETS]], %[[PERMUTED]])
// CHECK: tile.launch @moe_moe_up(%[[LOGITS]], %[[PERMUTED]], %{{.*}}, %{{.*}}, %[[GROUPS]], %[[HIDDEN]])
// CHECK: tile.launch @moe_moe_down(%[[LOGITS]], %[[HIDDEN]], %{{.*}}, %[[GROUPS]], %[[OUT]])
// CHECK: tile.launch @moe_moe_combine(%[[OUT]], %[[IDS]], %[[WEIGHTS]], %[[RANKS]], %[[OFFSETS]], %[[Y]])
func.func @moe(%x: tensor<?x64xbf16>, %r: tensor<64x8xbf16>, %w1: tensor<8x64x96xbf16>, %wu: tensor<8x64x96xbf16>,
               %w2: tensor<8x96x40xbf16>) -> tensor<?x40xbf16> {
  %y = flash.moe silu %x, %r, %w1 up %wu, %w2 top_k = 2 gating = softmax renormalize
      : (tensor<?x64xbf16>, tensor<64x8xbf16>, tensor<8x64x96xbf16>, tensor<8x64x96xbf16>, tensor<8x96x40xbf16>)
      -> tensor<?x40xbf16>
  return %y : tensor<?x40xbf16>
}

// -----

// Not gated: the up projection takes w1 alone.
// CHECK-LABEL: tile.kernel @plain_moe_up(%{{.*}}: !tile.tensor<?x16xf16>, %{{.*}}: !tile.tensor<?x32xf16>, %{{.*}}: !tile.tensor<16x32x48xf16>, %{{.*}}: !tile.tensor<?xi32>, %{{.*}}: !tile.tensor<?x48xf16>)
// CHECK-SAME: #tile.moe<role = moe_up, experts = 16, top_k = 4, sigmoid = true, renormalize = false, activation = gelu_tanh, gated = false, element_type = f16>
func.func @plain(%x: tensor<?x32xf16>, %r: tensor<32x16xf16>, %w1: tensor<16x32x48xf16>, %w2: tensor<16x48x32xf16>)
    -> tensor<?x32xf16> {
  %y = flash.moe gelu_tanh %x, %r, %w1, %w2 top_k = 4 gating = sigmoid
      : (tensor<?x32xf16>, tensor<32x16xf16>, tensor<16x32x48xf16>, tensor<16x48x32xf16>) -> tensor<?x32xf16>
  return %y : tensor<?x32xf16>
}

// -----

// What the kernels take, said at the op.
func.func @f32_layer(%x: tensor<?x32xf32>, %r: tensor<32x8xf32>, %w1: tensor<8x32x16xf32>, %w2: tensor<8x16x32xf32>)
    -> tensor<?x32xf32> {
  // expected-error @+1 {{flash-tile: flash.moe takes bf16 or f16 tensors, got 'f32'}}
  %y = flash.moe silu %x, %r, %w1, %w2 top_k = 2 gating = softmax
      : (tensor<?x32xf32>, tensor<32x8xf32>, tensor<8x32x16xf32>, tensor<8x16x32xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @twelve_experts(%x: tensor<?x32xbf16>, %r: tensor<32x12xbf16>, %w1: tensor<12x32x16xbf16>,
                          %w2: tensor<12x16x32xbf16>) -> tensor<?x32xbf16> {
  // expected-error @+1 {{flash-tile: flash.moe needs a multiple of 8 experts up to 256 (the router's logits rows are 16-byte pieces; a warp scores 256 at most), got 12}}
  %y = flash.moe silu %x, %r, %w1, %w2 top_k = 2 gating = softmax
      : (tensor<?x32xbf16>, tensor<32x12xbf16>, tensor<12x32x16xbf16>, tensor<12x16x32xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// -----

func.func @top_40(%x: tensor<?x32xbf16>, %r: tensor<32x64xbf16>, %w1: tensor<64x32x16xbf16>,
                  %w2: tensor<64x16x32xbf16>) -> tensor<?x32xbf16> {
  // expected-error @+1 {{flash-tile: flash.moe takes top_k up to 32, got 40}}
  %y = flash.moe silu %x, %r, %w1, %w2 top_k = 40 gating = sigmoid
      : (tensor<?x32xbf16>, tensor<32x64xbf16>, tensor<64x32x16xbf16>, tensor<64x16x32xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// -----

func.func @ragged_hidden(%x: tensor<?x32xbf16>, %r: tensor<32x8xbf16>, %w1: tensor<8x32x20xbf16>,
                         %w2: tensor<8x20x32xbf16>) -> tensor<?x32xbf16> {
  // expected-error @+1 {{flash-tile: flash.moe needs h a multiple of 8 (rows of 16-byte pieces: TMA), got 20}}
  %y = flash.moe silu %x, %r, %w1, %w2 top_k = 2 gating = softmax
      : (tensor<?x32xbf16>, tensor<32x8xbf16>, tensor<8x32x20xbf16>, tensor<8x20x32xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// -----

// A training forward (flash-generate-backward's clone): the routing and the activations the backward reads are
// program tensors after y, sized over T (expressions the runtime checks: routed T k, capacity C, the table 1 + C / 128);
// the counts stay a zeroed workspace that the plan copies out; the up projection also stores its pre-activation.
// CHECK-LABEL: tile.kernel @train_moe_plan(
// CHECK-SAME: !tile.tensor<8xi32>, %{{.*}}: !tile.tensor<9xi32>, %{{.*}}: !tile.tensor<?xi32>, %{{.*}}: !tile.tensor<8xi32>)
// CHECK-SAME: role = moe_plan
// CHECK-SAME: train = true
// CHECK-LABEL: tile.kernel @train_moe_up(
// CHECK-SAME: %{{.*}}: !tile.tensor<?x16xbf16>, %{{.*}}: !tile.tensor<?x16xbf16>)
// CHECK-SAME: role = moe_up
// CHECK-SAME: train = true
// CHECK-LABEL: func.func @train(
// CHECK-SAME: tile.name = "y"
// CHECK-SAME: {tile.dims = ["T", ""], tile.name = "logits"}
// CHECK-SAME: {tile.name = "expert_counts"}
// CHECK-SAME: {tile.dims = ["T * 2"], tile.name = "ids"}
// CHECK-SAME: {tile.dims = ["T * 2"], tile.name = "route_weights"}
// CHECK-SAME: {tile.dims = ["T * 2"], tile.name = "ranks"}
// CHECK-SAME: {tile.name = "offsets"}
// CHECK-SAME: {tile.dims = ["cdiv(T * 2 + 889, 128) + 1"], tile.name = "groups"}
// CHECK-SAME: {tile.dims = ["128 * cdiv(T * 2 + 889, 128)", ""], tile.name = "permuted"}
// CHECK-SAME: {tile.dims = ["128 * cdiv(T * 2 + 889, 128)", ""], tile.name = "expert_pre"}
// CHECK-SAME: {tile.dims = ["128 * cdiv(T * 2 + 889, 128)", ""], tile.name = "hidden"}
// CHECK-SAME: %[[SAVED_OUT:[a-z0-9]+]]: !tile.tensor<?x32xbf16> {tile.dims = ["128 * cdiv(T * 2 + 889, 128)", ""], tile.name = "expert_out"}
// CHECK: %[[TRAIN_COUNTS:.*]] = tile.alloc_tensor() {tile.name = "counts", tile.zero_fill} : <8xi32>
// CHECK-NOT: tile.alloc_tensor
// CHECK: tile.launch @train_moe_plan(%{{.*}}, %[[TRAIN_COUNTS]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK: tile.launch @train_moe_down(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SAVED_OUT]])
func.func @train(%x: tensor<?x32xbf16>, %r: tensor<32x8xbf16>, %w1: tensor<8x32x16xbf16>, %w2: tensor<8x16x32xbf16>)
    -> tensor<?x32xbf16> attributes {flash.train_forward} {
  %y = flash.moe silu %x, %r, %w1, %w2 top_k = 2 gating = softmax
      : (tensor<?x32xbf16>, tensor<32x8xbf16>, tensor<8x32x16xbf16>, tensor<8x16x32xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// -----

// The training forward beside a gated FFN: the FFN's saved tensors take the shared numbering (gate2, up2, h2) and
// come after the experts' in body order, as the backward's do.
// CHECK-LABEL: func.func @train_beside_ffn(
// CHECK-SAME: tile.name = "x2"}
// CHECK-SAME: tile.name = "expert_out"}
// CHECK-SAME: tile.name = "gate2"}
// CHECK-SAME: tile.name = "up2"}
// CHECK-SAME: tile.name = "h2"}
func.func @train_beside_ffn(%x: tensor<?x32xbf16>, %r: tensor<32x8xbf16>, %w1: tensor<8x32x16xbf16>,
                            %w2: tensor<8x16x32xbf16>, %z: tensor<?x32xbf16>, %fg: tensor<32x48xbf16>,
                            %fu: tensor<32x48xbf16>, %fd: tensor<48x32xbf16>)
    -> (tensor<?x32xbf16>, tensor<?x32xbf16>) attributes {flash.train_forward} {
  %y = flash.moe silu %x, %r, %w1, %w2 top_k = 2 gating = softmax
      : (tensor<?x32xbf16>, tensor<32x8xbf16>, tensor<8x32x16xbf16>, tensor<8x16x32xbf16>) -> tensor<?x32xbf16>
  %f = flash.ffn silu %z, %fg up %fu, %fd
      : (tensor<?x32xbf16>, tensor<32x48xbf16>, tensor<32x48xbf16>, tensor<48x32xbf16>) -> tensor<?x32xbf16>
  return %y, %f : tensor<?x32xbf16>, tensor<?x32xbf16>
}
