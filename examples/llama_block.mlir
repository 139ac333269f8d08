// A LLaMA-style block as a user writes it: causal grouped-query attention
// (32 query heads share 8 key/value heads, head dim 128) and a gated SiLU
// feed-forward network (d = 4096, h = 11008), with dynamic batch B and
// sequence length S.
//
//   attention:  O = softmax(causal((Q / sqrt(128)) Kᵀ)) V
//               query head h reads key/value head h / 4 (grouped matmul)
//   FFN:        y = (silu(x Wg) ⊙ (x Wu)) Wd
//
// `flashc llama_block.mlir` fuses the attention into one flash.attention
// (num_kv_heads = 8) and the FFN into one gated flash.ffn.
func.func @llama_block(%q: tensor<?x32x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>,
                       %x: tensor<?x?x4096xbf16>,
                       %w_gate: tensor<4096x11008xbf16>, %w_up: tensor<4096x11008xbf16>,
                       %w_down: tensor<11008x4096xbf16>)
    -> (tensor<?x32x?x128xbf16>, tensor<?x?x4096xbf16>) {
  // The softmax scale is applied to Q, as many implementations do.
  %q_scaled = flash.scale %q by 0.08838834764831845 : tensor<?x32x?x128xbf16>
  %scores = flash.matmul %q_scaled, %k transpose_b
      : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x?xbf16>
  %masked = flash.mask %scores <causal> : tensor<?x32x?x?xbf16>
  %probs = flash.softmax %masked : tensor<?x32x?x?xbf16>
  %attn = flash.matmul %probs, %v
      : tensor<?x32x?x?xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x128xbf16>

  // Gated SiLU feed-forward network.
  %gate = flash.matmul %x, %w_gate : tensor<?x?x4096xbf16>, tensor<4096x11008xbf16> -> tensor<?x?x11008xbf16>
  %act = flash.silu %gate : tensor<?x?x11008xbf16>
  %up = flash.matmul %x, %w_up : tensor<?x?x4096xbf16>, tensor<4096x11008xbf16> -> tensor<?x?x11008xbf16>
  %hidden = flash.mul %act, %up : tensor<?x?x11008xbf16>
  %y = flash.matmul %hidden, %w_down : tensor<?x?x11008xbf16>, tensor<11008x4096xbf16> -> tensor<?x?x4096xbf16>
  return %attn, %y : tensor<?x32x?x128xbf16>, tensor<?x?x4096xbf16>
}
