// A Mixtral-style mixture-of-experts layer, spelled as the model writes it: a router over 8 experts, each token sent
// to its top 2 (softmax over the router logits, the two weights renormalised to sum to 1), every expert a gated SiLU
// FFN, the expert outputs summed with the weights. Dynamic token count T; d = 1024, h = 3584 (Mixtral's h / d, at a
// quarter of its width so that the float64 check of the example stays quick; the kernels take Mixtral's d = 4096,
// h = 14336 as they are).
//
//   logits  = x · router                          [T, 8], bf16 (the experts are chosen on these values)
//   w, ids  = the top 2 of softmax(logits)        [T, 2] each; w renormalised
//   rows    = expert ids[t, j]'s FFN of x_t       [T, 2, 1024]: (silu(x · w_gate[e]) ⊙ (x · w_up[e])) · w_down[e]
//   y       = sum over j of w[t, j] · rows[t, j]
//
// flash-fuse-moe rewrites the chain into one flash.moe (the op can be written directly too: docs/design/moe.md), and
// `flashc mixtral_moe.mlir` lowers it to seven kernels — the router GEMM, the top-k selection, the plan of each
// expert's rows, the permutation of the tokens by expert, the grouped gated up projection and the grouped down
// projection (warp-specialised TMA GEMMs over every expert at once), the weighted combine — and builds its training
// forward and backward (the gradients of x, the router and every expert weight).
func.func @mixtral_moe(%x: tensor<?x1024xbf16>, %router: tensor<1024x8xbf16>, %w_gate: tensor<8x1024x3584xbf16>,
                       %w_up: tensor<8x1024x3584xbf16>, %w_down: tensor<8x3584x1024xbf16>) -> tensor<?x1024xbf16> {
  %logits = flash.matmul %x, %router : tensor<?x1024xbf16>, tensor<1024x8xbf16> -> tensor<?x8xbf16>
  %probs = flash.softmax %logits : tensor<?x8xbf16>
  %w, %ids = flash.top_k %probs k = 2 : tensor<?x8xbf16> -> tensor<?x2xbf16>, tensor<?x2xi32>
  %weights = flash.normalize %w : tensor<?x2xbf16>
  %rows = flash.expert_ffn silu %x, %ids, %w_gate up %w_up, %w_down
      : (tensor<?x1024xbf16>, tensor<?x2xi32>, tensor<8x1024x3584xbf16>, tensor<8x1024x3584xbf16>,
         tensor<8x3584x1024xbf16>) -> tensor<?x2x1024xbf16>
  %y = flash.combine %rows, %weights : tensor<?x2x1024xbf16>, tensor<?x2xbf16> -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
