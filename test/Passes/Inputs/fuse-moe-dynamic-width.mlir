// flash-fuse-moe (flash-fuse-moe.mlir): a case the graph evaluator cannot run (its widths disagree at run time).
// x of a dynamic width: the router's d and the experts' d must agree (no invalid flash.moe).
func.func @router_width(%x: tensor<?x?xbf16>, %r: tensor<48x8xbf16>, %w1: tensor<8x32x16xbf16>,
                        %w2: tensor<8x16x32xbf16>) -> tensor<?x32xbf16> {
  %logits = flash.matmul %x, %r : tensor<?x?xbf16>, tensor<48x8xbf16> -> tensor<?x8xbf16>
  %p = flash.softmax %logits : tensor<?x8xbf16>
  %w, %ids = flash.top_k %p k = 2 : tensor<?x8xbf16> -> tensor<?x2xbf16>, tensor<?x2xi32>
  %rows = flash.expert_ffn silu %x, %ids, %w1, %w2
      : (tensor<?x?xbf16>, tensor<?x2xi32>, tensor<8x32x16xbf16>, tensor<8x16x32xbf16>) -> tensor<?x2x32xbf16>
  // expected-warning @+1 {{flash-fuse-moe: not fused into flash.moe: the router's width d = 48 is not the experts' d = 32}}
  %y = flash.combine %rows, %w : tensor<?x2x32xbf16>, tensor<?x2xbf16> -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}
