// A GPT-style block as a user writes it: causal multi-head self-attention
// (16 heads, head dim 128) and a GeLU feed-forward network (d = 2048,
// h = 8192), with dynamic batch B and sequence length S.
//
//   attention:  O = softmax(causal(QKᵀ / sqrt(128))) V       per head
//   FFN:        y = gelu_tanh(x W1 + b1) W2 + b2
//
// q, k, v are the projected heads [B, 16, S, 128]; x is the token stream
// [B, S, 2048]. `flashc gpt_block.mlir` fuses the attention into one
// flash.attention and the FFN into one flash.ffn.
func.func @gpt_block(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x16x?x128xbf16>, %v: tensor<?x16x?x128xbf16>,
                     %x: tensor<?x?x2048xbf16>,
                     %w1: tensor<2048x8192xbf16>, %b1: tensor<8192xbf16>,
                     %w2: tensor<8192x2048xbf16>, %b2: tensor<2048xbf16>)
    -> (tensor<?x16x?x128xbf16>, tensor<?x?x2048xbf16>) {
  // Attention scores S = Q Kᵀ / sqrt(128), causal, softmax over keys.
  %scores = flash.matmul %q, %k transpose_b
      : tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16> -> tensor<?x16x?x?xbf16>
  %scaled = flash.scale %scores by 0.08838834764831845 : tensor<?x16x?x?xbf16>
  %masked = flash.mask %scaled <causal> : tensor<?x16x?x?xbf16>
  %probs = flash.softmax %masked : tensor<?x16x?x?xbf16>
  %attn = flash.matmul %probs, %v
      : tensor<?x16x?x?xbf16>, tensor<?x16x?x128xbf16> -> tensor<?x16x?x128xbf16>

  // Feed-forward network.
  %h = flash.matmul %x, %w1 : tensor<?x?x2048xbf16>, tensor<2048x8192xbf16> -> tensor<?x?x8192xbf16>
  %hb = flash.add %h, %b1 : tensor<?x?x8192xbf16>, tensor<8192xbf16>
  %act = flash.gelu tanh %hb : tensor<?x?x8192xbf16>
  %y = flash.matmul %act, %w2 : tensor<?x?x8192xbf16>, tensor<8192x2048xbf16> -> tensor<?x?x2048xbf16>
  %yb = flash.add %y, %b2 : tensor<?x?x2048xbf16>, tensor<2048xbf16>
  return %attn, %yb : tensor<?x16x?x128xbf16>, tensor<?x?x2048xbf16>
}
