// ALiBi (attention with linear biases): each query head h adds slope[h] · (k - q)
// to its scores, a penalty growing with the distance to the key, instead of
// position embeddings. FlexAttention users write it as a score modifier
//   lambda score, b, h, q_idx, kv_idx: score + slopes[h] * (kv_idx - q_idx)
// and flashc.torch.attention(causal=True, score_mod=...) traces that function
// into this region: the slopes (f32, one per query head) are an operand it
// reads, an argument of the compiled programs (score_t0), not part of the bundle.
//
// The forward applies the region to every block's scores (after the scale,
// before the causal mask and the softmax); the backward takes the score
// gradient back through it: the compiler differentiates the region (here
// d/ds = 1).
//
//   flashc examples/alibi.mlir -o alibi_bundle
func.func @alibi(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x16x?x128xbf16>, %v: tensor<?x16x?x128xbf16>,
                 %slopes: tensor<16xf32>) -> tensor<?x16x?x128xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.08838834764831845 mask = #flash.mask<causal> num_kv_heads = 16
      score_mod(%slopes) {
  ^bb0(%s: f32, %b: index, %h: index, %q_idx: index, %kv_idx: index, %m: tensor<16xf32>):
    %slope = tensor.extract %m[%h] : tensor<16xf32>     // this head's slope
    %d = arith.subi %kv_idx, %q_idx : index              // k - q (<= 0 under the causal mask)
    %d64 = arith.index_cast %d : index to i64
    %distance = arith.sitofp %d64 : i64 to f32
    %bias = arith.mulf %slope, %distance : f32
    %biased = arith.addf %s, %bias : f32
    flash.yield %biased : f32
  } : (tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<16xf32>)
    -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>)
  return %o : tensor<?x16x?x128xbf16>
}
