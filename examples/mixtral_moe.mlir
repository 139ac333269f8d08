// A Mixtral-style mixture-of-experts layer: a router over 8 experts, each token sent to its top 2 (softmax over the
// router logits, the two weights renormalised to sum to 1), every expert a gated SiLU FFN, the outputs summed with
// the weights. Dynamic token count T; d = 1024, h = 3584 (Mixtral's h / d, at a quarter of its width so that the
// float64 check of the example stays quick; the kernels take Mixtral's d = 4096, h = 14336 as they are).
//
//   logits = x · router                  [T, 8], rounded to bf16 (the experts are chosen on these values)
//   K      = the top 2 experts of softmax(logits);  w_e = softmax(logits)_e / sum over K
//   y      = sum over K of w_e · (silu(x · w_gate[e]) ⊙ (x · w_up[e])) · w_down[e]
//
// `flashc mixtral_moe.mlir` lowers it to seven kernels (docs/design/moe.md): the router GEMM, the top-k selection,
// the plan of each expert's rows, the permutation of the tokens by expert, the grouped gated up projection and the
// grouped down projection (warp-specialised TMA GEMMs over every expert at once), and the weighted combine.
func.func @mixtral_moe(%x: tensor<?x1024xbf16>, %router: tensor<1024x8xbf16>, %w_gate: tensor<8x1024x3584xbf16>,
                       %w_up: tensor<8x1024x3584xbf16>, %w_down: tensor<8x3584x1024xbf16>) -> tensor<?x1024xbf16> {
  %y = flash.moe silu %x, %router, %w_gate up %w_up, %w_down top_k = 2 gating = softmax renormalize
      : (tensor<?x1024xbf16>, tensor<1024x8xbf16>, tensor<8x1024x3584xbf16>, tensor<8x1024x3584xbf16>,
         tensor<8x3584x1024xbf16>) -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}
