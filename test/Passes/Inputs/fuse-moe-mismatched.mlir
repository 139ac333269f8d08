// flash-fuse-moe (flash-fuse-moe.mlir): cases the graph evaluator cannot run (widths or expert counts that disagree
// at run time); the pass leaves them unfused, saying why.
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

// -----

// The router scores 16 experts, the weights hold 8.
func.func @expert_count(%x: tensor<?x32xbf16>, %r: tensor<32x16xbf16>, %w1: tensor<8x32x16xbf16>,
                        %w2: tensor<8x16x32xbf16>) -> tensor<?x32xbf16> {
  %logits = flash.matmul %x, %r : tensor<?x32xbf16>, tensor<32x16xbf16> -> tensor<?x16xbf16>
  %p = flash.softmax %logits : tensor<?x16xbf16>
  %w, %ids = flash.top_k %p k = 2 : tensor<?x16xbf16> -> tensor<?x2xbf16>, tensor<?x2xi32>
  %rows = flash.expert_ffn silu %x, %ids, %w1, %w2
      : (tensor<?x32xbf16>, tensor<?x2xi32>, tensor<8x32x16xbf16>, tensor<8x16x32xbf16>) -> tensor<?x2x32xbf16>
  // expected-warning @+1 {{flash-fuse-moe: not fused into flash.moe: the router scores 16 experts, the expert weights hold 8}}
  %y = flash.combine %rows, %w : tensor<?x2x32xbf16>, tensor<?x2xbf16> -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}


// -----

// x of a dynamic width that the router and the experts both read as 32: the graph's ops accept it, flash.moe does not
// (x is checked at launch on its own: a width of 16 would pass and the kernels read 32 columns).
func.func @dynamic_width(%x: tensor<?x?xbf16>, %r: tensor<32x8xbf16>, %w1: tensor<8x32x16xbf16>,
                         %w2: tensor<8x16x32xbf16>) -> tensor<?x32xbf16> {
  %logits = flash.matmul %x, %r : tensor<?x?xbf16>, tensor<32x8xbf16> -> tensor<?x8xbf16>
  %p = flash.softmax %logits : tensor<?x8xbf16>
  %w, %ids = flash.top_k %p k = 2 : tensor<?x8xbf16> -> tensor<?x2xbf16>, tensor<?x2xi32>
  %rows = flash.expert_ffn silu %x, %ids, %w1, %w2
      : (tensor<?x?xbf16>, tensor<?x2xi32>, tensor<8x32x16xbf16>, tensor<8x16x32xbf16>) -> tensor<?x2x32xbf16>
  // expected-warning @+1 {{flash-fuse-moe: not fused into flash.moe: input must have a static width d in [T, d], got 'tensor<?x?xbf16>'}}
  %y = flash.combine %rows, %w : tensor<?x2x32xbf16>, tensor<?x2xbf16> -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}
