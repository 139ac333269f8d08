// Gemma-2's local attention layer: a causal sliding window of 4096 keys with
// the attention logits soft-capped, 50 · tanh(s / 50), over grouped heads
// (16 query heads sharing 8 kv heads, head dim 256, the scale 256^-1/2).
// Written as the model's graph: the scores, their scale, the cap as elementwise
// ops and the window as index tensors compared and selected (what an exporter
// of the model's attention emits). flash-fuse-attention lifts the cap into the
// attention's score modifier and the window into its mask modifier, whose
// blocks the compiler classifies (the kernels skip the key blocks outside the
// window and mask only the diagonal band's), and the backward differentiates
// the cap (d/ds = 1 - tanh²).
//
//   flashc examples/gemma2_local.mlir -o gemma2_local_bundle
func.func @gemma2_local(%q: tensor<?x16x?x256xbf16>, %k: tensor<?x8x?x256xbf16>, %v: tensor<?x8x?x256xbf16>)
    -> tensor<?x16x?x256xbf16> {
  %s = flash.matmul %q, %k transpose_b : tensor<?x16x?x256xbf16>, tensor<?x8x?x256xbf16> -> tensor<?x16x?x?xbf16>
  %t = flash.scale %s by 0.0625 : tensor<?x16x?x?xbf16>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %b = tensor.dim %t, %c0 : tensor<?x16x?x?xbf16>
  %sq = tensor.dim %t, %c2 : tensor<?x16x?x?xbf16>
  %sk = tensor.dim %t, %c3 : tensor<?x16x?x?xbf16>
  // the soft cap: 50 · tanh(s / 50)
  %cap0 = arith.constant 50.0 : bf16
  %cap = tensor.splat %cap0[%b, %sq, %sk] : tensor<?x16x?x?xbf16>
  %x = arith.divf %t, %cap : tensor<?x16x?x?xbf16>
  %th = math.tanh %x : tensor<?x16x?x?xbf16>
  %capped = arith.mulf %cap, %th : tensor<?x16x?x?xbf16>
  // the window: key kv_idx is visible from query q_idx when 0 <= q_idx - kv_idx < 4096
  %qi = tensor.generate %b, %sq, %sk {
  ^bb0(%i0: index, %i1: index, %i: index, %j: index):
    tensor.yield %i : index
  } : tensor<?x16x?x?xindex>
  %ki = tensor.generate %b, %sq, %sk {
  ^bb0(%i0: index, %i1: index, %i: index, %j: index):
    tensor.yield %j : index
  } : tensor<?x16x?x?xindex>
  %w0 = arith.constant 4096 : index
  %w = tensor.splat %w0[%b, %sq, %sk] : tensor<?x16x?x?xindex>
  %distance = arith.subi %qi, %ki : tensor<?x16x?x?xindex>
  %causal = arith.cmpi sge, %qi, %ki : tensor<?x16x?x?xindex>
  %near = arith.cmpi slt, %distance, %w : tensor<?x16x?x?xindex>
  %visible = arith.andi %causal, %near : tensor<?x16x?x?xi1>
  %ninf = arith.constant 0xFF80 : bf16
  %minus = tensor.splat %ninf[%b, %sq, %sk] : tensor<?x16x?x?xbf16>
  %masked = arith.select %visible, %capped, %minus : tensor<?x16x?x?xi1>, tensor<?x16x?x?xbf16>
  %p = flash.softmax %masked : tensor<?x16x?x?xbf16>
  %o = flash.matmul %p, %v : tensor<?x16x?x?xbf16>, tensor<?x8x?x256xbf16> -> tensor<?x16x?x256xbf16>
  return %o : tensor<?x16x?x256xbf16>
}
