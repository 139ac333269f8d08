// Hand-written pairs for flash-eval --compare.

// Unfused causal GQA attention with Sq = 5 queries and Sk = 7 keys ...
func.func @unfused(%q: tensor<2x4x5x8xf32>, %k: tensor<2x2x7x8xf32>, %v: tensor<2x2x7x3xf32>) -> tensor<2x4x5x3xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<2x4x5x8xf32>, tensor<2x2x7x8xf32> -> tensor<2x4x5x7xf32>
  %t = flash.scale %s by 0.5 : tensor<2x4x5x7xf32>
  %m = flash.mask %t <causal> : tensor<2x4x5x7xf32>
  %p = flash.softmax %m : tensor<2x4x5x7xf32>
  %o = flash.matmul %p, %v : tensor<2x4x5x7xf32>, tensor<2x2x7x3xf32> -> tensor<2x4x5x3xf32>
  return %o : tensor<2x4x5x3xf32>
}

// ... equals the fused op written by hand ...
func.func @fused(%q: tensor<2x4x5x8xf32>, %k: tensor<2x2x7x8xf32>, %v: tensor<2x2x7x3xf32>) -> tensor<2x4x5x3xf32> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.5 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<2x4x5x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x3xf32>) -> (tensor<2x4x5x3xf32>, tensor<2x4x5xf32>)
  return %o : tensor<2x4x5x3xf32>
}

// ... and causal is the window (left unbounded, right = 0) ...
func.func @fused_window(%q: tensor<2x4x5x8xf32>, %k: tensor<2x2x7x8xf32>, %v: tensor<2x2x7x3xf32>) -> tensor<2x4x5x3xf32> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.5 mask = #flash.mask<sliding_window, left = -1, right = 0> num_kv_heads = 2
      : (tensor<2x4x5x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x3xf32>) -> (tensor<2x4x5x3xf32>, tensor<2x4x5xf32>)
  return %o : tensor<2x4x5x3xf32>
}

// ... but not with another scale, nor without the mask.
func.func @fused_wrong_scale(%q: tensor<2x4x5x8xf32>, %k: tensor<2x2x7x8xf32>, %v: tensor<2x2x7x3xf32>) -> tensor<2x4x5x3xf32> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<2x4x5x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x3xf32>) -> (tensor<2x4x5x3xf32>, tensor<2x4x5xf32>)
  return %o : tensor<2x4x5x3xf32>
}
func.func @fused_unmasked(%q: tensor<2x4x5x8xf32>, %k: tensor<2x2x7x8xf32>, %v: tensor<2x2x7x3xf32>) -> tensor<2x4x5x3xf32> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.5 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<2x4x5x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x3xf32>) -> (tensor<2x4x5x3xf32>, tensor<2x4x5xf32>)
  return %o : tensor<2x4x5x3xf32>
}

// The gated FFN against its unfused graph, and against the plain form.
func.func @ffn_unfused(%x: tensor<3x4x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>, %wd: tensor<32x8xf32>) -> tensor<3x4x8xf32> {
  %g = flash.matmul %x, %wg : tensor<3x4x16xf32>, tensor<16x32xf32> -> tensor<3x4x32xf32>
  %a = flash.gelu erf %g : tensor<3x4x32xf32>
  %u = flash.matmul %x, %wu : tensor<3x4x16xf32>, tensor<16x32xf32> -> tensor<3x4x32xf32>
  %h = flash.mul %a, %u : tensor<3x4x32xf32>
  %y = flash.matmul %h, %wd : tensor<3x4x32xf32>, tensor<32x8xf32> -> tensor<3x4x8xf32>
  return %y : tensor<3x4x8xf32>
}
func.func @ffn_fused(%x: tensor<3x4x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>, %wd: tensor<32x8xf32>) -> tensor<3x4x8xf32> {
  %y = flash.ffn gelu_erf %x, %wg up %wu, %wd
      : (tensor<3x4x16xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<3x4x8xf32>
  return %y : tensor<3x4x8xf32>
}
func.func @ffn_plain(%x: tensor<3x4x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>, %wd: tensor<32x8xf32>) -> tensor<3x4x8xf32> {
  %y = flash.ffn gelu_erf %x, %wg, %wd
      : (tensor<3x4x16xf32>, tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<3x4x8xf32>
  return %y : tensor<3x4x8xf32>
}
