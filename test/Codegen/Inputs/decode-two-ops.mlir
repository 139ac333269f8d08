// Two flash.decode_attention ops in one function (test/Codegen/cuda-decode-attention.mlir).
func.func @two(%q: tensor<?x8x1x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x64xbf16>, %lens: tensor<?xi32>,
               %table: tensor<?x?xi32>, %q2: tensor<?x4x1x64xbf16>, %k2: tensor<?x4x?x64xbf16>, %v2: tensor<?x4x?x64xbf16>,
               %lens2: tensor<?xi32>) -> (tensor<?x8x1x64xbf16>, tensor<?x4x1x64xbf16>) {
  %out, %lse = flash.decode_attention %q, %k, %v, %lens block_table %table scale = 0.125 page_size = 16 num_kv_heads = 2
      : (tensor<?x8x1x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?xi32>, tensor<?x?xi32>)
      -> (tensor<?x8x1x64xbf16>, tensor<?x8x1xf32>)
  %out2, %lse2 = flash.decode_attention %q2, %k2, %v2, %lens2 scale = 0.125 causal num_kv_heads = 4
      : (tensor<?x4x1x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?xi32>)
      -> (tensor<?x4x1x64xbf16>, tensor<?x4x1xf32>)
  return %out, %out2 : tensor<?x8x1x64xbf16>, tensor<?x4x1x64xbf16>
}
