// flash-generate-backward on flash.moe (docs/design/moe.md): @<func>_forward_train (the forward, marked for
// flash-tile's training form, which saves the routing and the activations) and @<func>_backward, a tile program over
// the forward's inputs, the saved tensors (MoeSaved: logits, expert_counts, ids, route_weights, ranks, offsets,
// groups, permuted, gate / up or pre, hidden, expert_out), dy, then the gradients of x, the router and the weights.
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-generate-backward | FileCheck %s
// RUN: not flash-opt %s -split-input-file --flash-generate-backward=target=sm_80 2>&1 | FileCheck %s --check-prefix=SM80
// SM80: error: flash-generate-backward: flash.moe needs a Hopper target

// CHECK-LABEL: func.func @mixtral_backward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: !tile.tensor<?x64xbf16> {tile.dims = ["T", ""], tile.name = "x"}
// CHECK-SAME: %[[ROUTER:[a-z0-9]+]]: !tile.tensor<64x8xbf16> {tile.name = "router"}
// CHECK-SAME: %[[W1:[a-z0-9]+]]: !tile.tensor<8x64x96xbf16> {tile.name = "w1"}
// CHECK-SAME: %[[WUP:[a-z0-9]+]]: !tile.tensor<8x64x96xbf16> {tile.name = "w_up"}
// CHECK-SAME: %[[W2:[a-z0-9]+]]: !tile.tensor<8x96x40xbf16> {tile.name = "w2"}
// CHECK-SAME: %[[LOGITS:[a-z0-9]+]]: !tile.tensor<?x8xbf16> {tile.dims = ["T", ""], tile.name = "logits"}
// CHECK-SAME: %[[COUNTS:[a-z0-9]+]]: !tile.tensor<8xi32> {tile.name = "expert_counts"}
// CHECK-SAME: %[[IDS:[a-z0-9]+]]: !tile.tensor<?xi32> {tile.dims = ["T * 2"], tile.name = "ids"}
// CHECK-SAME: %[[WEIGHTS:[a-z0-9]+]]: !tile.tensor<?xf32> {tile.dims = ["T * 2"], tile.name = "route_weights"}
// CHECK-SAME: %[[RANKS:[a-z0-9]+]]: !tile.tensor<?xi32> {tile.dims = ["T * 2"], tile.name = "ranks"}
// CHECK-SAME: %[[OFFSETS:[a-z0-9]+]]: !tile.tensor<9xi32> {tile.name = "offsets"}
// CHECK-SAME: %[[GROUPS:[a-z0-9]+]]: !tile.tensor<?xi32> {tile.dims = ["cdiv(T * 2 + 889, 128) + 1"], tile.name = "groups"}
// CHECK-SAME: %[[PERM:[a-z0-9]+]]: !tile.tensor<?x64xbf16> {tile.dims = ["128 * cdiv(T * 2 + 889, 128)", ""], tile.name = "permuted"}
// CHECK-SAME: %[[GATE:[a-z0-9]+]]: !tile.tensor<?x96xbf16> {{.*}} tile.name = "expert_gate"}
// CHECK-SAME: %[[UP:[a-z0-9]+]]: !tile.tensor<?x96xbf16> {{.*}} tile.name = "expert_up"}
// CHECK-SAME: %[[HIDDEN:[a-z0-9]+]]: !tile.tensor<?x96xbf16> {{.*}} tile.name = "hidden"}
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: !tile.tensor<?x40xbf16> {{.*}} tile.name = "expert_out"}
// CHECK-SAME: %[[DY:[a-z0-9]+]]: !tile.tensor<?x40xbf16> {tile.dims = ["T", ""], tile.name = "dy"}
// CHECK-SAME: %[[DX:[a-z0-9]+]]: !tile.tensor<?x64xbf16> {tile.dims = ["T", ""], tile.name = "dx"}
// CHECK-SAME: %[[DROUTER:[a-z0-9]+]]: !tile.tensor<64x8xbf16> {tile.name = "drouter"}
// CHECK-SAME: %[[DW1:[a-z0-9]+]]: !tile.tensor<8x64x96xbf16> {tile.name = "dw1"}
// CHECK-SAME: %[[DWUP:[a-z0-9]+]]: !tile.tensor<8x64x96xbf16> {tile.name = "dw_up"}
// CHECK-SAME: %[[DW2:[a-z0-9]+]]: !tile.tensor<8x96x40xbf16> {tile.name = "dw2"}
// Workspaces: the permuted layout's rows (the saved tensors' C), the routed rows, [T, E].
// CHECK: %[[DOUT:.*]] = tile.alloc_tensor({{.*}}) {tile.name = "d_expert_out"} : <?x40xbf16>
// CHECK: %[[DWEIGHTS:.*]] = tile.alloc_tensor({{.*}}) {tile.name = "d_route_weights"} : <?xf32>
// CHECK: %[[DH:.*]] = tile.alloc_tensor({{.*}}) {tile.name = "dh"} : <?x96xbf16>
// CHECK: %[[DGATE:.*]] = tile.alloc_tensor({{.*}}) {tile.name = "d_gate"} : <?x96xbf16>
// CHECK: %[[DUP:.*]] = tile.alloc_tensor({{.*}}) {tile.name = "d_up"} : <?x96xbf16>
// CHECK: %[[DXPERM:.*]] = tile.alloc_tensor({{.*}}) {tile.name = "dx_perm"} : <?x64xbf16>
// CHECK: %[[DLOGITS:.*]] = tile.alloc_tensor({{.*}}) {tile.name = "d_logits"} : <?x8xbf16>
// d_expert_out[row(t, s)] = w_ts dy_t (padding rows 0); d_w_ts = dy_t · expert_out[row(t, s)]
// CHECK: tile.launch @mixtral_moe_bwd_scatter(%[[DY]], %[[OUT]], %[[COUNTS]], %[[IDS]], %[[WEIGHTS]], %[[RANKS]], %[[OFFSETS]], %[[DOUT]], %[[DWEIGHTS]])
// dh = d_expert_out_e · W2[e]ᵀ
// CHECK: tile.launch @mixtral_moe_bwd_dh(%[[LOGITS]], %[[DOUT]], %[[W2]], %[[GROUPS]], %[[DH]])
// d_gate = dh ⊙ up ⊙ silu'(gate), d_up = dh ⊙ silu(gate)
// CHECK: tile.launch @mixtral_moe_bwd_act(%[[LOGITS]], %[[GATE]], %[[UP]], %[[DH]], %[[OFFSETS]], %[[DGATE]], %[[DUP]])
// dx_perm = d_gate_e · W1[e]ᵀ + d_up_e · W_up[e]ᵀ
// CHECK: tile.launch @mixtral_moe_bwd_dx_perm(%[[LOGITS]], %[[DGATE]], %[[W1]], %[[GROUPS]], %[[DXPERM]])
// CHECK: tile.launch @mixtral_moe_bwd_dx_perm_up(%[[LOGITS]], %[[DUP]], %[[WUP]], %[[GROUPS]], %[[DXPERM]])
// dW2[e] = hidden_eᵀ d_expert_out_e, dW1[e] = permuted_eᵀ d_gate_e, dW_up[e] = permuted_eᵀ d_up_e
// CHECK: tile.launch @mixtral_moe_bwd_dw2(%[[LOGITS]], %[[HIDDEN]], %[[DOUT]], %[[OFFSETS]], %[[DW2]])
// CHECK: tile.launch @mixtral_moe_bwd_dw1(%[[LOGITS]], %[[PERM]], %[[DGATE]], %[[OFFSETS]], %[[DW1]])
// CHECK: tile.launch @mixtral_moe_bwd_dw_up(%[[LOGITS]], %[[PERM]], %[[DUP]], %[[OFFSETS]], %[[DWUP]])
// d_logits = p ⊙ (d_w - w · d_w) over the chosen (softmax renormalised over the top k)
// CHECK: tile.launch @mixtral_moe_bwd_select(%[[LOGITS]], %[[IDS]], %[[WEIGHTS]], %[[DWEIGHTS]], %[[DLOGITS]])
// dx_t = sum_s dx_perm[row(t, s)] + d_logits_t · routerᵀ; d_router = xᵀ d_logits (few tiles: split over T)
// CHECK: tile.launch @mixtral_moe_bwd_gather(%[[DXPERM]], %[[IDS]], %[[RANKS]], %[[OFFSETS]], %[[DX]])
// CHECK: tile.launch @mixtral_moe_bwd_dx_router(%[[DLOGITS]], %[[ROUTER]], %[[DX]])
// CHECK: %[[ACC:.*]] = tile.alloc_tensor() {tile.name = "d_router_accum"} : <64x8xf32>
// CHECK: tile.launch @mixtral_moe_bwd_d_router(%[[X]], %[[DLOGITS]], %[[ACC]])
// CHECK: tile.launch @mixtral_moe_bwd_d_router_convert(%[[ACC]], %[[DROUTER]])
// CHECK: func.func @mixtral_forward_train(%{{.*}}: tensor<?x64xbf16>
// CHECK-SAME: attributes {flash.train_forward}
func.func @mixtral(%x: tensor<?x64xbf16>, %r: tensor<64x8xbf16>, %w1: tensor<8x64x96xbf16>,
                   %wu: tensor<8x64x96xbf16>, %w2: tensor<8x96x40xbf16>) -> tensor<?x40xbf16> {
  %y = flash.moe silu %x, %r, %w1 up %wu, %w2 top_k = 2 gating = softmax renormalize
      : (tensor<?x64xbf16>, tensor<64x8xbf16>, tensor<8x64x96xbf16>, tensor<8x64x96xbf16>, tensor<8x96x40xbf16>)
      -> tensor<?x40xbf16>
  return %y : tensor<?x40xbf16>
}

// -----

// Plain experts: one pre-activation saved, d_pre = dh ⊙ act'(pre), one data gradient and two weight gradients; a
// static token count gives static saved sizes (300 x 6 routed rows, C = 128 ceil((1800 + 127 x 31) / 128) = 5760).
// CHECK-LABEL: func.func @plain_backward(
// CHECK-SAME: !tile.tensor<1800xi32> {tile.name = "ids"}
// CHECK-SAME: !tile.tensor<46xi32> {tile.name = "groups"}
// CHECK-SAME: !tile.tensor<5760x48xf16> {tile.name = "permuted"}
// CHECK-SAME: !tile.tensor<5760x24xf16> {tile.name = "expert_pre"}
// CHECK-NOT: tile.name = "expert_up"
// CHECK: tile.launch @plain_moe_bwd_act(%{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}})
// CHECK-NOT: dx_perm_up
// CHECK: tile.launch @plain_moe_bwd_dw1(
// CHECK-NOT: dw_up
// CHECK: tile.launch @plain_moe_bwd_select(
func.func @plain(%x: tensor<300x48xf16>, %r: tensor<48x32xf16>, %w1: tensor<32x48x24xf16>,
                 %w2: tensor<32x24x56xf16>) -> tensor<300x56xf16> {
  %y = flash.moe gelu_tanh %x, %r, %w1, %w2 top_k = 6 gating = softmax
      : (tensor<300x48xf16>, tensor<48x32xf16>, tensor<32x48x24xf16>, tensor<32x24x56xf16>) -> tensor<300x56xf16>
  return %y : tensor<300x56xf16>
}

// -----

// No gradient to take: a warning, no backward (the forward still compiles).
// CHECK-LABEL: func.func @unreturned(
// CHECK-NOT: @unreturned_backward
func.func @unreturned(%x: tensor<?x32xbf16>, %r: tensor<32x8xbf16>, %w1: tensor<8x32x16xbf16>,
                      %w2: tensor<8x16x32xbf16>, %other: tensor<?x32xbf16>) -> tensor<?x32xbf16> {
  // expected-warning @+1 {{flash-generate-backward: no backward for @unreturned: the mixture of experts' result is not returned, so there is no gradient to take}}
  %y = flash.moe silu %x, %r, %w1, %w2 top_k = 2 gating = softmax
      : (tensor<?x32xbf16>, tensor<32x8xbf16>, tensor<8x32x16xbf16>, tensor<8x16x32xbf16>) -> tensor<?x32xbf16>
  return %other : tensor<?x32xbf16>
}

// -----

// Beside a gated FFN: one numbering for both (the FFN's tensors x2, w12, ..., its saved gate2, up2, h2), in the
// backward as in flash-tile's training forward, so that the bundle binds them by name.
// CHECK-LABEL: func.func @moe_then_ffn_backward(
// CHECK-SAME: tile.name = "x"}
// CHECK-SAME: tile.name = "expert_gate"}
// CHECK-SAME: tile.name = "x2"}
// CHECK-SAME: tile.name = "gate2"}
// CHECK-SAME: tile.name = "dy2"}
// CHECK-SAME: tile.name = "dx"}
// CHECK-SAME: tile.name = "dx2"}
func.func @moe_then_ffn(%x: tensor<?x64xbf16>, %r: tensor<64x8xbf16>, %w1: tensor<8x64x96xbf16>,
                        %wu: tensor<8x64x96xbf16>, %w2: tensor<8x96x40xbf16>, %z: tensor<?x32xbf16>,
                        %fg: tensor<32x48xbf16>, %fu: tensor<32x48xbf16>, %fd: tensor<48x32xbf16>)
    -> (tensor<?x40xbf16>, tensor<?x32xbf16>) {
  %y = flash.moe silu %x, %r, %w1 up %wu, %w2 top_k = 2 gating = softmax renormalize
      : (tensor<?x64xbf16>, tensor<64x8xbf16>, tensor<8x64x96xbf16>, tensor<8x64x96xbf16>, tensor<8x96x40xbf16>)
      -> tensor<?x40xbf16>
  %f = flash.ffn silu %z, %fg up %fu, %fd
      : (tensor<?x32xbf16>, tensor<32x48xbf16>, tensor<32x48xbf16>, tensor<48x32xbf16>) -> tensor<?x32xbf16>
  return %y, %f : tensor<?x40xbf16>, tensor<?x32xbf16>
}
