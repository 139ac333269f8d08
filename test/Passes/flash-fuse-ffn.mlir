// RUN: flash-opt %s --flash-fuse-ffn --split-input-file -verify-diagnostics | FileCheck %s
//
// y = act(x·W1 [+ b1])·W2 [+ b2]             ==> flash.ffn act x, W1 [bias b1], W2 [bias b2]
// y = (act(x·Wg) ⊙ (x·Wu))·W2 [+ b2]         ==> flash.ffn act x, Wg up Wu, W2 [bias b2]

// GPT FFN: gelu_tanh with both biases, on a rank-3 input [B, S, d].
// CHECK-LABEL: func.func @gelu_tanh_biases
// CHECK-SAME: (%[[X:.+]]: tensor<?x?x1024xbf16>, %[[W1:.+]]: tensor<1024x4096xbf16>, %[[B1:.+]]: tensor<4096xbf16>, %[[W2:.+]]: tensor<4096x1024xbf16>, %[[B2:.+]]: tensor<1024xbf16>)
// CHECK-NEXT: %[[Y:.+]] = flash.ffn gelu_tanh %[[X]], %[[W1]] bias %[[B1]], %[[W2]] bias %[[B2]] : (tensor<?x?x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096xbf16>, tensor<4096x1024xbf16>, tensor<1024xbf16>) -> tensor<?x?x1024xbf16>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_tanh_biases(%x: tensor<?x?x1024xbf16>, %w1: tensor<1024x4096xbf16>, %b1: tensor<4096xbf16>,
                            %w2: tensor<4096x1024xbf16>, %b2: tensor<1024xbf16>) -> tensor<?x?x1024xbf16> {
  %h = flash.matmul %x, %w1 : tensor<?x?x1024xbf16>, tensor<1024x4096xbf16> -> tensor<?x?x4096xbf16>
  %hb = flash.add %h, %b1 : tensor<?x?x4096xbf16>, tensor<4096xbf16>
  %a = flash.gelu tanh %hb : tensor<?x?x4096xbf16>
  %y = flash.matmul %a, %w2 : tensor<?x?x4096xbf16>, tensor<4096x1024xbf16> -> tensor<?x?x1024xbf16>
  %yb = flash.add %y, %b2 : tensor<?x?x1024xbf16>, tensor<1024xbf16>
  return %yb : tensor<?x?x1024xbf16>
}

// -----

// gelu_erf, no biases.
// CHECK-LABEL: func.func @gelu_erf
// CHECK-NEXT: flash.ffn gelu_erf %{{.+}}, %{{.+}}, %{{.+}} : (tensor<?x64xf32>, tensor<64x256xf32>, tensor<256x32xf32>) -> tensor<?x32xf32>
func.func @gelu_erf(%x: tensor<?x64xf32>, %w1: tensor<64x256xf32>, %w2: tensor<256x32xf32>) -> tensor<?x32xf32> {
  %h = flash.matmul %x, %w1 : tensor<?x64xf32>, tensor<64x256xf32> -> tensor<?x256xf32>
  %a = flash.gelu erf %h : tensor<?x256xf32>
  %y = flash.matmul %a, %w2 : tensor<?x256xf32>, tensor<256x32xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// relu with b1 only; silu with b2 only.
// CHECK-LABEL: func.func @relu_b1
// CHECK-SAME: (%[[X:.+]]: tensor<{{.+}}>, %[[W1:.+]]: tensor<{{.+}}>, %[[B1:.+]]: tensor<{{.+}}>, %[[W2:.+]]: tensor<{{.+}}>)
// CHECK-NEXT: flash.ffn relu %[[X]], %[[W1]] bias %[[B1]], %[[W2]] :
func.func @relu_b1(%x: tensor<8x64xf16>, %w1: tensor<64x256xf16>, %b1: tensor<256xf16>, %w2: tensor<256x64xf16>) -> tensor<8x64xf16> {
  %h = flash.matmul %x, %w1 : tensor<8x64xf16>, tensor<64x256xf16> -> tensor<8x256xf16>
  %hb = flash.add %h, %b1 : tensor<8x256xf16>, tensor<256xf16>
  %a = flash.relu %hb : tensor<8x256xf16>
  %y = flash.matmul %a, %w2 : tensor<8x256xf16>, tensor<256x64xf16> -> tensor<8x64xf16>
  return %y : tensor<8x64xf16>
}
// CHECK-LABEL: func.func @silu_b2
// CHECK-SAME: (%[[X:.+]]: tensor<{{.+}}>, %[[W1:.+]]: tensor<{{.+}}>, %[[W2:.+]]: tensor<{{.+}}>, %[[B2:.+]]: tensor<{{.+}}>)
// CHECK-NEXT: flash.ffn silu %[[X]], %[[W1]], %[[W2]] bias %[[B2]] :
func.func @silu_b2(%x: tensor<8x64xf16>, %w1: tensor<64x256xf16>, %w2: tensor<256x64xf16>, %b2: tensor<64xf16>) -> tensor<8x64xf16> {
  %h = flash.matmul %x, %w1 : tensor<8x64xf16>, tensor<64x256xf16> -> tensor<8x256xf16>
  %a = flash.silu %h : tensor<8x256xf16>
  %y = flash.matmul %a, %w2 : tensor<8x256xf16>, tensor<256x64xf16> -> tensor<8x64xf16>
  %yb = flash.add %y, %b2 : tensor<8x64xf16>, tensor<64xf16>
  return %yb : tensor<8x64xf16>
}

// -----

// LLaMA FFN: silu(x·Wg) ⊙ (x·Wu), then ·Wd.
// CHECK-LABEL: func.func @gated_silu
// CHECK-SAME: (%[[X:.+]]: tensor<?x?x4096xbf16>, %[[WG:.+]]: tensor<4096x11008xbf16>, %[[WU:.+]]: tensor<4096x11008xbf16>, %[[WD:.+]]: tensor<11008x4096xbf16>)
// CHECK-NEXT: %[[Y:.+]] = flash.ffn silu %[[X]], %[[WG]] up %[[WU]], %[[WD]] : (tensor<?x?x4096xbf16>, tensor<4096x11008xbf16>, tensor<4096x11008xbf16>, tensor<11008x4096xbf16>) -> tensor<?x?x4096xbf16>
// CHECK-NEXT: return %[[Y]]
func.func @gated_silu(%x: tensor<?x?x4096xbf16>, %wg: tensor<4096x11008xbf16>, %wu: tensor<4096x11008xbf16>,
                      %wd: tensor<11008x4096xbf16>) -> tensor<?x?x4096xbf16> {
  %g = flash.matmul %x, %wg : tensor<?x?x4096xbf16>, tensor<4096x11008xbf16> -> tensor<?x?x11008xbf16>
  %a = flash.silu %g : tensor<?x?x11008xbf16>
  %u = flash.matmul %x, %wu : tensor<?x?x4096xbf16>, tensor<4096x11008xbf16> -> tensor<?x?x11008xbf16>
  %h = flash.mul %a, %u : tensor<?x?x11008xbf16>
  %y = flash.matmul %h, %wd : tensor<?x?x11008xbf16>, tensor<11008x4096xbf16> -> tensor<?x?x4096xbf16>
  return %y : tensor<?x?x4096xbf16>
}

// -----

// The product written the other way round, (x·Wu) ⊙ gelu(x·Wg), with b2: the
// gate is whichever factor carries the activation.
// CHECK-LABEL: func.func @gated_reversed
// CHECK-SAME: (%[[X:.+]]: tensor<{{.+}}>, %[[WG:.+]]: tensor<{{.+}}>, %[[WU:.+]]: tensor<{{.+}}>, %[[WD:.+]]: tensor<{{.+}}>, %[[B2:.+]]: tensor<{{.+}}>)
// CHECK-NEXT: flash.ffn gelu_tanh %[[X]], %[[WG]] up %[[WU]], %[[WD]] bias %[[B2]] :
func.func @gated_reversed(%x: tensor<16x64xf32>, %wg: tensor<64x128xf32>, %wu: tensor<64x128xf32>,
                          %wd: tensor<128x64xf32>, %b2: tensor<64xf32>) -> tensor<16x64xf32> {
  %u = flash.matmul %x, %wu : tensor<16x64xf32>, tensor<64x128xf32> -> tensor<16x128xf32>
  %g = flash.matmul %x, %wg : tensor<16x64xf32>, tensor<64x128xf32> -> tensor<16x128xf32>
  %a = flash.gelu tanh %g : tensor<16x128xf32>
  %h = flash.mul %u, %a : tensor<16x128xf32>
  %y = flash.matmul %h, %wd : tensor<16x128xf32>, tensor<128x64xf32> -> tensor<16x64xf32>
  %yb = flash.add %y, %b2 : tensor<16x64xf32>, tensor<64xf32>
  return %yb : tensor<16x64xf32>
}

// -----

// A residual add (full-shape rhs) after the FFN is not a bias: it stays.
// CHECK-LABEL: func.func @residual_stays
// CHECK-SAME: (%[[X:.+]]: tensor<{{.+}}>, %[[W1:.+]]: tensor<{{.+}}>, %[[W2:.+]]: tensor<{{.+}}>)
// CHECK-NEXT: %[[Y:.+]] = flash.ffn relu %[[X]], %[[W1]], %[[W2]] :
// CHECK-NEXT: %[[R:.+]] = flash.add %[[Y]], %[[X]] : tensor<8x64xf32>, tensor<8x64xf32>
// CHECK-NEXT: return %[[R]]
func.func @residual_stays(%x: tensor<8x64xf32>, %w1: tensor<64x256xf32>, %w2: tensor<256x64xf32>) -> tensor<8x64xf32> {
  %h = flash.matmul %x, %w1 : tensor<8x64xf32>, tensor<64x256xf32> -> tensor<8x256xf32>
  %a = flash.relu %h : tensor<8x256xf32>
  %y = flash.matmul %a, %w2 : tensor<8x256xf32>, tensor<256x64xf32> -> tensor<8x64xf32>
  %r = flash.add %y, %x : tensor<8x64xf32>, tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}

// -----

// Two FFN layers in a row both fuse, the second reading the first.
// CHECK-LABEL: func.func @two_layers
// CHECK-NEXT: %[[Y1:.+]] = flash.ffn relu
// CHECK-NEXT: flash.ffn silu %[[Y1]]
func.func @two_layers(%x: tensor<8x64xf32>, %w1: tensor<64x256xf32>, %w2: tensor<256x64xf32>) -> tensor<8x64xf32> {
  %h = flash.matmul %x, %w1 : tensor<8x64xf32>, tensor<64x256xf32> -> tensor<8x256xf32>
  %a = flash.relu %h : tensor<8x256xf32>
  %y = flash.matmul %a, %w2 : tensor<8x256xf32>, tensor<256x64xf32> -> tensor<8x64xf32>
  %h2 = flash.matmul %y, %w1 : tensor<8x64xf32>, tensor<64x256xf32> -> tensor<8x256xf32>
  %a2 = flash.silu %h2 : tensor<8x256xf32>
  %y2 = flash.matmul %a2, %w2 : tensor<8x256xf32>, tensor<256x64xf32> -> tensor<8x64xf32>
  return %y2 : tensor<8x64xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Graphs that must not fuse.
//===----------------------------------------------------------------------===//

// The activation output is also returned.
// CHECK-LABEL: func.func @hidden_used_twice
// CHECK-NOT: flash.ffn
func.func @hidden_used_twice(%x: tensor<8x64xf32>, %w1: tensor<64x256xf32>, %w2: tensor<256x64xf32>) -> (tensor<8x64xf32>, tensor<8x256xf32>) {
  %h = flash.matmul %x, %w1 : tensor<8x64xf32>, tensor<64x256xf32> -> tensor<8x256xf32>
  %a = flash.relu %h : tensor<8x256xf32>
  // expected-warning @+1 {{act(...)·W2 not fused into flash.ffn: the hidden activation has other users}}
  %y = flash.matmul %a, %w2 : tensor<8x256xf32>, tensor<256x64xf32> -> tensor<8x64xf32>
  return %y, %a : tensor<8x64xf32>, tensor<8x256xf32>
}

// -----

// The first projection is also returned.
// CHECK-LABEL: func.func @projection_used_twice
// CHECK-NOT: flash.ffn
func.func @projection_used_twice(%x: tensor<8x64xf32>, %w1: tensor<64x256xf32>, %w2: tensor<256x64xf32>) -> (tensor<8x64xf32>, tensor<8x256xf32>) {
  %h = flash.matmul %x, %w1 : tensor<8x64xf32>, tensor<64x256xf32> -> tensor<8x256xf32>
  %a = flash.relu %h : tensor<8x256xf32>
  // expected-warning @+1 {{act(...)·W2 not fused into flash.ffn: the activation's input must be a single-use x·W1 [+ b1] with W1 a static rank-2 matmul rhs and b1 rank 1}}
  %y = flash.matmul %a, %w2 : tensor<8x256xf32>, tensor<256x64xf32> -> tensor<8x64xf32>
  return %y, %h : tensor<8x64xf32>, tensor<8x256xf32>
}

// -----

// The bias-added pre-activation is also returned.
// CHECK-LABEL: func.func @biased_used_twice
// CHECK-NOT: flash.ffn
func.func @biased_used_twice(%x: tensor<8x64xf32>, %w1: tensor<64x256xf32>, %b1: tensor<256xf32>, %w2: tensor<256x64xf32>) -> (tensor<8x64xf32>, tensor<8x256xf32>) {
  %h = flash.matmul %x, %w1 : tensor<8x64xf32>, tensor<64x256xf32> -> tensor<8x256xf32>
  %hb = flash.add %h, %b1 : tensor<8x256xf32>, tensor<256xf32>
  %a = flash.relu %hb : tensor<8x256xf32>
  // expected-warning @+1 {{act(...)·W2 not fused into flash.ffn: the activation's input must be a single-use x·W1 [+ b1] with W1 a static rank-2 matmul rhs and b1 rank 1}}
  %y = flash.matmul %a, %w2 : tensor<8x256xf32>, tensor<256x64xf32> -> tensor<8x64xf32>
  return %y, %hb : tensor<8x64xf32>, tensor<8x256xf32>
}

// -----

// Transposed weight (W2 stored as [d_out, h]): flash.ffn takes [h, d_out].
// CHECK-LABEL: func.func @transposed_weight
// CHECK-NOT: flash.ffn
func.func @transposed_weight(%x: tensor<8x64xf32>, %w1: tensor<64x256xf32>, %w2t: tensor<64x256xf32>) -> tensor<8x64xf32> {
  %h = flash.matmul %x, %w1 : tensor<8x64xf32>, tensor<64x256xf32> -> tensor<8x256xf32>
  %a = flash.relu %h : tensor<8x256xf32>
  // expected-warning @+1 {{act(...)·W2 not fused into flash.ffn: W2 must be a static rank-2 matmul rhs, neither operand transposed}}
  %y = flash.matmul %a, %w2t transpose_b : tensor<8x256xf32>, tensor<64x256xf32> -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// Batched (rank-3) weights are per-batch matmuls, not an FFN's weights.
// CHECK-LABEL: func.func @batched_weights
// CHECK-NOT: flash.ffn
func.func @batched_weights(%x: tensor<2x8x64xf32>, %w1: tensor<2x64x256xf32>, %w2: tensor<2x256x64xf32>) -> tensor<2x8x64xf32> {
  %h = flash.matmul %x, %w1 : tensor<2x8x64xf32>, tensor<2x64x256xf32> -> tensor<2x8x256xf32>
  %a = flash.relu %h : tensor<2x8x256xf32>
  // expected-warning @+1 {{act(...)·W2 not fused into flash.ffn: W2 must be a static rank-2 matmul rhs, neither operand transposed}}
  %y = flash.matmul %a, %w2 : tensor<2x8x256xf32>, tensor<2x256x64xf32> -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

// Dynamic hidden size in a weight: flash.ffn weights are static.
// CHECK-LABEL: func.func @dynamic_weight
// CHECK-NOT: flash.ffn
func.func @dynamic_weight(%x: tensor<8x64xf32>, %w1: tensor<64x?xf32>, %w2: tensor<?x64xf32>) -> tensor<8x64xf32> {
  %h = flash.matmul %x, %w1 : tensor<8x64xf32>, tensor<64x?xf32> -> tensor<8x?xf32>
  %a = flash.relu %h : tensor<8x?xf32>
  // expected-warning @+1 {{act(...)·W2 not fused into flash.ffn: W2 must be a static rank-2 matmul rhs, neither operand transposed}}
  %y = flash.matmul %a, %w2 : tensor<8x?xf32>, tensor<?x64xf32> -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// No activation between the matmuls.
// CHECK-LABEL: func.func @no_activation
// CHECK-NOT: flash.ffn
func.func @no_activation(%x: tensor<8x64xf32>, %w1: tensor<64x256xf32>, %w2: tensor<256x64xf32>) -> tensor<8x64xf32> {
  %h = flash.matmul %x, %w1 : tensor<8x64xf32>, tensor<64x256xf32> -> tensor<8x256xf32>
  %y = flash.matmul %h, %w2 : tensor<8x256xf32>, tensor<256x64xf32> -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// Gate and up projections of different inputs.
// CHECK-LABEL: func.func @gated_different_inputs
// CHECK-NOT: flash.ffn
func.func @gated_different_inputs(%x: tensor<16x64xf32>, %z: tensor<16x64xf32>, %wg: tensor<64x128xf32>,
                                  %wu: tensor<64x128xf32>, %wd: tensor<128x64xf32>) -> tensor<16x64xf32> {
  %g = flash.matmul %x, %wg : tensor<16x64xf32>, tensor<64x128xf32> -> tensor<16x128xf32>
  %a = flash.silu %g : tensor<16x128xf32>
  %u = flash.matmul %z, %wu : tensor<16x64xf32>, tensor<64x128xf32> -> tensor<16x128xf32>
  %h = flash.mul %a, %u : tensor<16x128xf32>
  // expected-warning @+1 {{act(...)·W2 not fused into flash.ffn: a gated hidden must be act(x·Wg) ⊙ (x·Wu): single-use projections of the same x with static rank-2 weights of one shape}}
  %y = flash.matmul %h, %wd : tensor<16x128xf32>, tensor<128x64xf32> -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

// A bias on the gate projection has no place in the gated flash.ffn.
// CHECK-LABEL: func.func @gated_gate_bias
// CHECK-NOT: flash.ffn
func.func @gated_gate_bias(%x: tensor<16x64xf32>, %wg: tensor<64x128xf32>, %bg: tensor<128xf32>,
                           %wu: tensor<64x128xf32>, %wd: tensor<128x64xf32>) -> tensor<16x64xf32> {
  %g = flash.matmul %x, %wg : tensor<16x64xf32>, tensor<64x128xf32> -> tensor<16x128xf32>
  %gb = flash.add %g, %bg : tensor<16x128xf32>, tensor<128xf32>
  %a = flash.silu %gb : tensor<16x128xf32>
  %u = flash.matmul %x, %wu : tensor<16x64xf32>, tensor<64x128xf32> -> tensor<16x128xf32>
  %h = flash.mul %a, %u : tensor<16x128xf32>
  // expected-warning @+1 {{act(...)·W2 not fused into flash.ffn: a gated hidden must be act(x·Wg) ⊙ (x·Wu): single-use projections of the same x with static rank-2 weights of one shape}}
  %y = flash.matmul %h, %wd : tensor<16x128xf32>, tensor<128x64xf32> -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

// Gated product without any activation: a bilinear layer, not fused.
// CHECK-LABEL: func.func @gated_no_activation
// CHECK-NOT: flash.ffn
func.func @gated_no_activation(%x: tensor<16x64xf32>, %wg: tensor<64x128xf32>, %wu: tensor<64x128xf32>, %wd: tensor<128x64xf32>) -> tensor<16x64xf32> {
  %g = flash.matmul %x, %wg : tensor<16x64xf32>, tensor<64x128xf32> -> tensor<16x128xf32>
  %u = flash.matmul %x, %wu : tensor<16x64xf32>, tensor<64x128xf32> -> tensor<16x128xf32>
  %h = flash.mul %g, %u : tensor<16x128xf32>
  %y = flash.matmul %h, %wd : tensor<16x128xf32>, tensor<128x64xf32> -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

// An attention graph is left exactly as written.
// CHECK-LABEL: func.func @attention_untouched
// CHECK-NEXT: %[[S:.+]] = flash.matmul
// CHECK-NEXT: %[[P:.+]] = flash.softmax %[[S]]
// CHECK-NEXT: %[[O:.+]] = flash.matmul %[[P]]
// CHECK-NEXT: return %[[O]]
func.func @attention_untouched(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>
  %p = flash.softmax %s : tensor<1x2x8x8xf32>
  %o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// A static hidden size of 0: flash.ffn's sizes are positive, so the graph stays (it fused into an op that failed
// its verifier, an error about an op the spec never wrote).
// CHECK-LABEL: func.func @zero_hidden
// CHECK-NOT: flash.ffn
func.func @zero_hidden(%x: tensor<8x16xbf16>, %w1: tensor<16x0xbf16>, %w2: tensor<0x16xbf16>) -> tensor<8x16xbf16> {
  %h = flash.matmul %x, %w1 : tensor<8x16xbf16>, tensor<16x0xbf16> -> tensor<8x0xbf16>
  %a = flash.relu %h : tensor<8x0xbf16>
  // expected-warning @+1 {{act(...)·W2 not fused into flash.ffn: a static size of 0 (flash.ffn's sizes are positive; a size that may be 0 at run time is ?)}}
  %y = flash.matmul %a, %w2 : tensor<8x0xbf16>, tensor<0x16xbf16> -> tensor<8x16xbf16>
  return %y : tensor<8x16xbf16>
}

// -----

// x's width dynamic where W1's is static: the matmul accepts it, flash.ffn does not (x is checked at launch on its
// own: a width of 2 would pass and the kernel read 4 columns; 4 because fusion-numerics.test evaluates the graph at
// that size). The graph stays, with the verifier's reason.
// CHECK-LABEL: func.func @width_static_in_w1_only
// CHECK-NOT: flash.ffn
func.func @width_static_in_w1_only(%x: tensor<?x?xbf16>, %w1: tensor<4x512xbf16>, %w2: tensor<512x4xbf16>)
    -> tensor<?x4xbf16> {
  %h = flash.matmul %x, %w1 : tensor<?x?xbf16>, tensor<4x512xbf16> -> tensor<?x512xbf16>
  %a = flash.relu %h : tensor<?x512xbf16>
  // expected-warning @+1 {{act(...)·W2 not fused into flash.ffn: input must have a static width d in [..., M, d], got 'tensor<?x?xbf16>'}}
  %y = flash.matmul %a, %w2 : tensor<?x512xbf16>, tensor<512x4xbf16> -> tensor<?x4xbf16>
  return %y : tensor<?x4xbf16>
}
