// The library-block ops (packed sequences, decode, append, mixture of experts) read their sizes from the tensors'
// shapes as 32-bit ints, as the attention and FFN kernels do: flash-tile refuses a static size past 2^31 - 1 at the
// op (test/Passes/flash-tile.mlir). Each compiled with exit 0 and a kernel that truncated the size.

// T = 2^31 packed tokens became static_cast<int>(q.shape[0]) < 0.
func.func @varlen_tokens(%q: tensor<2147483648x4x128xbf16>, %k: tensor<64x4x128xbf16>, %v: tensor<64x4x128xbf16>,
                         %cu_q: tensor<?xi32>, %cu_k: tensor<?xi32>) -> tensor<2147483648x4x128xbf16> {
  // expected-error @+1 {{flash-tile: query 'tensor<2147483648x4x128xbf16>' has a static size 2147483648 (dimension 0) above 2147483647, the largest size the kernels' 32-bit indices can address}}
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.0883883 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<2147483648x4x128xbf16>, tensor<64x4x128xbf16>, tensor<64x4x128xbf16>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<2147483648x4x128xbf16>, tensor<4x2147483648xf32>)
  return %out : tensor<2147483648x4x128xbf16>
}

// -----

// 2^32 + 1 sequence offsets.
func.func @varlen_offsets(%q: tensor<?x4x128xbf16>, %k: tensor<?x4x128xbf16>, %v: tensor<?x4x128xbf16>,
                          %cu_q: tensor<4294967297xi32>, %cu_k: tensor<4294967297xi32>) -> tensor<?x4x128xbf16> {
  // expected-error @+1 {{flash-tile: cu_seqlens_q 'tensor<4294967297xi32>' has a static size 4294967297 (dimension 0) above 2147483647}}
  %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.0883883 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4x128xbf16>, tensor<4294967297xi32>, tensor<4294967297xi32>)
      -> (tensor<?x4x128xbf16>, tensor<4x?xf32>)
  return %out : tensor<?x4x128xbf16>
}

// -----

// 2^31 pages made every page id out of range (static_cast<int>(k_cache.shape[0]) < 0).
func.func @decode_pages(%q: tensor<?x32x1x128xbf16>, %kc: tensor<2147483648x64x8x128xbf16>,
                        %vc: tensor<2147483648x64x8x128xbf16>, %len: tensor<?xi32>, %table: tensor<?x?xi32>)
    -> (tensor<?x32x1x128xbf16>, tensor<?x32x1xf32>) {
  // expected-error @+1 {{flash-tile: key_cache 'tensor<2147483648x64x8x128xbf16>' has a static size 2147483648 (dimension 0) above 2147483647}}
  %out, %lse = flash.decode_attention %q, %kc, %vc, %len block_table %table scale = 0.088 causal page_size = 64
      num_kv_heads = 8
      : (tensor<?x32x1x128xbf16>, tensor<2147483648x64x8x128xbf16>, tensor<2147483648x64x8x128xbf16>, tensor<?xi32>,
         tensor<?x?xi32>) -> (tensor<?x32x1x128xbf16>, tensor<?x32x1xf32>)
  return %out, %lse : tensor<?x32x1x128xbf16>, tensor<?x32x1xf32>
}

// -----

// The capacity, pages a sequence x page size, is a 32-bit int: 2^25 pages of 64 rows is 2^31.
func.func @decode_capacity(%q: tensor<?x32x1x128xbf16>, %kc: tensor<?x64x8x128xbf16>, %vc: tensor<?x64x8x128xbf16>,
                           %len: tensor<?xi32>, %table: tensor<?x33554432xi32>)
    -> (tensor<?x32x1x128xbf16>, tensor<?x32x1xf32>) {
  // expected-error @+1 {{flash-tile: block_table 'tensor<?x33554432xi32>' gives each sequence 33554432 pages of 64 rows, a capacity above 2147483647}}
  %out, %lse = flash.decode_attention %q, %kc, %vc, %len block_table %table scale = 0.088 causal page_size = 64
      num_kv_heads = 8
      : (tensor<?x32x1x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?xi32>,
         tensor<?x33554432xi32>) -> (tensor<?x32x1x128xbf16>, tensor<?x32x1xf32>)
  return %out, %lse : tensor<?x32x1x128xbf16>, tensor<?x32x1xf32>
}

// -----

// The append checks the same capacity.
func.func @append_capacity(%k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>, %kc: tensor<?x64x8x128xbf16>,
                           %vc: tensor<?x64x8x128xbf16>, %len: tensor<?xi32>, %table: tensor<?x33554432xi32>)
    -> (tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>) {
  // expected-error @+1 {{flash-tile: block_table 'tensor<?x33554432xi32>' gives each sequence 33554432 pages of 64 rows}}
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %len page_size = 64 block_table %table
      : (tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>,
         tensor<?xi32>, tensor<?x33554432xi32>) -> (tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>)
  return %k2, %v2 : tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>
}

// -----

// An expert width h = 2^31 reached moe_activation_grad as static_cast<int>(...) < 0.
func.func @moe_width(%x: tensor<?x16xbf16>, %r: tensor<16x8xbf16>, %w1: tensor<8x16x2147483648xbf16>,
                     %w2: tensor<8x2147483648x16xbf16>) -> tensor<?x16xbf16> {
  // expected-error @+1 {{flash-tile: w1 'tensor<8x16x2147483648xbf16>' has a static size 2147483648 (dimension 2) above 2147483647}}
  %y = flash.moe relu %x, %r, %w1, %w2 top_k = 1 gating = sigmoid
      : (tensor<?x16xbf16>, tensor<16x8xbf16>, tensor<8x16x2147483648xbf16>, tensor<8x2147483648x16xbf16>)
      -> tensor<?x16xbf16>
  return %y : tensor<?x16xbf16>
}

// -----

// Each token's top_k copies are rows of the expert GEMMs: 2^30 tokens x 2 is 2^31 rows.
func.func @moe_rows(%x: tensor<1073741824x16xbf16>, %r: tensor<16x8xbf16>, %w1: tensor<8x16x16xbf16>,
                    %w2: tensor<8x16x16xbf16>) -> tensor<1073741824x16xbf16> {
  // expected-error @+1 {{flash-tile: 1073741824 tokens x top_k = 2 expert rows exceed 2147483647}}
  %y = flash.moe relu %x, %r, %w1, %w2 top_k = 2 gating = sigmoid
      : (tensor<1073741824x16xbf16>, tensor<16x8xbf16>, tensor<8x16x16xbf16>, tensor<8x16x16xbf16>)
      -> tensor<1073741824x16xbf16>
  return %y : tensor<1073741824x16xbf16>
}
