// Specs that are valid flash IR but ask for sizes no kernel can run:
// flash-tile and flash-generate-backward both refuse them at the op, before
// building kernels (test/Passes/flash-tile.mlir, flash-generate-backward.mlir).

// A head dim of INT64_MAX crashed the kernel builders (SIGSEGV).
func.func @head_dim_max(%q: tensor<?x4x?x9223372036854775807xbf16>, %k: tensor<?x4x?x9223372036854775807xbf16>, %v: tensor<?x4x?x9223372036854775807xbf16>) -> (tensor<?x4x?x9223372036854775807xbf16>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{head dim D = 9223372036854775807 (query and key) is not supported by the kernels: 'bf16' attention takes head dims that are multiples of 8 from 8 to 256 (rows are copied in 16-byte chunks of 8 elements; the tiles are padded to the next multiple of 32)}}
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x?x9223372036854775807xbf16>, tensor<?x4x?x9223372036854775807xbf16>, tensor<?x4x?x9223372036854775807xbf16>) -> (tensor<?x4x?x9223372036854775807xbf16>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x9223372036854775807xbf16>, tensor<?x4x?xf32>
}

// -----

// Dv = INT64_MAX: the same crash through the value.
func.func @value_head_dim_max(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x9223372036854775807xbf16>) -> (tensor<?x4x?x9223372036854775807xbf16>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{head dim Dv = 9223372036854775807 (value) is not supported by the kernels: 'bf16' attention takes head dims that are multiples of 8 from 8 to 256 (rows are copied in 16-byte chunks of 8 elements; the tiles are padded to the next multiple of 32)}}
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x9223372036854775807xbf16>) -> (tensor<?x4x?x9223372036854775807xbf16>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x9223372036854775807xbf16>, tensor<?x4x?xf32>
}

// -----

// D = 2^56 wrapped the register and shared-memory estimates around and reached --emit=cuda.
func.func @head_dim_2_56(%q: tensor<?x4x?x72057594037927936xbf16>, %k: tensor<?x4x?x72057594037927936xbf16>, %v: tensor<?x4x?x72057594037927936xbf16>) -> (tensor<?x4x?x72057594037927936xbf16>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{head dim D = 72057594037927936 (query and key) is not supported}}
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x?x72057594037927936xbf16>, tensor<?x4x?x72057594037927936xbf16>, tensor<?x4x?x72057594037927936xbf16>) -> (tensor<?x4x?x72057594037927936xbf16>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x72057594037927936xbf16>, tensor<?x4x?xf32>
}

// -----

// D = 3 passed --emit=tile and failed only in the CUDA emitter.
func.func @head_dim_3(%q: tensor<?x4x?x3xbf16>, %k: tensor<?x4x?x3xbf16>, %v: tensor<?x4x?x3xbf16>) -> (tensor<?x4x?x3xbf16>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{head dim D = 3 (query and key) is not supported by the kernels: 'bf16' attention takes head dims that are multiples of 8 from 8 to 256 (rows are copied in 16-byte chunks of 8 elements; the tiles are padded to the next multiple of 32)}}
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x?x3xbf16>, tensor<?x4x?x3xbf16>, tensor<?x4x?x3xbf16>) -> (tensor<?x4x?x3xbf16>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x3xbf16>, tensor<?x4x?xf32>
}

// -----

// D = 1 (f16).
func.func @head_dim_1_f16(%q: tensor<?x4x?x1xf16>, %k: tensor<?x4x?x1xf16>, %v: tensor<?x4x?x1xf16>) -> (tensor<?x4x?x1xf16>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{head dim D = 1 (query and key) is not supported by the kernels: 'f16' attention takes head dims that are multiples of 8 from 8 to 256}}
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x?x1xf16>, tensor<?x4x?x1xf16>, tensor<?x4x?x1xf16>) -> (tensor<?x4x?x1xf16>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x1xf16>, tensor<?x4x?xf32>
}

// -----

// Not a multiple of 8: a row would end inside a 16-byte copy chunk (48, 72 or 80 are padded to
// the next multiple of 32 instead: test/Passes/flash-tile.mlir).
func.func @head_dim_44(%q: tensor<?x4x?x44xbf16>, %k: tensor<?x4x?x44xbf16>, %v: tensor<?x4x?x44xbf16>) -> (tensor<?x4x?x44xbf16>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{head dim D = 44 (query and key) is not supported by the kernels: 'bf16' attention takes head dims that are multiples of 8 from 8 to 256 (rows are copied in 16-byte chunks of 8 elements; the tiles are padded to the next multiple of 32)}}
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x?x44xbf16>, tensor<?x4x?x44xbf16>, tensor<?x4x?x44xbf16>) -> (tensor<?x4x?x44xbf16>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x44xbf16>, tensor<?x4x?xf32>
}

// -----

// Past 256 the backward kernels' tiles overflow shared memory or registers.
func.func @head_dim_288(%q: tensor<?x4x?x288xbf16>, %k: tensor<?x4x?x288xbf16>, %v: tensor<?x4x?x288xbf16>) -> (tensor<?x4x?x288xbf16>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{head dim D = 288 (query and key) is not supported by the kernels: 'bf16' attention takes head dims that are multiples of 8 from 8 to 256 (rows are copied in 16-byte chunks of 8 elements; the tiles are padded to the next multiple of 32)}}
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x?x288xbf16>, tensor<?x4x?x288xbf16>, tensor<?x4x?x288xbf16>) -> (tensor<?x4x?x288xbf16>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x288xbf16>, tensor<?x4x?xf32>
}

// -----

// f32 (CPU executor) takes any head dim up to 256.
func.func @head_dim_f32(%q: tensor<?x4x?x32xf32>, %k: tensor<?x4x?x32xf32>, %v: tensor<?x4x?x512xf32>) -> (tensor<?x4x?x512xf32>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{head dim Dv = 512 (value) is not supported by the kernels: head dims range from 1 to 256}}
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x512xf32>) -> (tensor<?x4x?x512xf32>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x512xf32>, tensor<?x4x?xf32>
}

// -----

// Static sizes >= 2^31 were truncated to int inside the kernels.
func.func @query_length_2_31(%q: tensor<?x4x2147483648x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>) -> (tensor<?x4x2147483648x64xbf16>, tensor<?x4x2147483648xf32>) {
  // expected-error @+1 {{query 'tensor<?x4x2147483648x64xbf16>' has a static size 2147483648 (Sq) above 2147483647, the largest size the kernels' 32-bit indices can address}}
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x2147483648x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>) -> (tensor<?x4x2147483648x64xbf16>, tensor<?x4x2147483648xf32>)
  return %o, %lse : tensor<?x4x2147483648x64xbf16>, tensor<?x4x2147483648xf32>
}

// -----

// Sk = INT64_MAX overflowed a grid size: "generated manifest is inconsistent" at 0:0.
func.func @key_length_max(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x9223372036854775807x64xbf16>, %v: tensor<?x4x9223372036854775807x64xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  // expected-error @+1 {{key 'tensor<?x4x9223372036854775807x64xbf16>' has a static size 9223372036854775807 (Sk) above 2147483647}}
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x?x64xbf16>, tensor<?x4x9223372036854775807x64xbf16>, tensor<?x4x9223372036854775807x64xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}

// -----

// B = 2^31.
func.func @batch_2_31(%q: tensor<2147483648x4x?x64xbf16>, %k: tensor<2147483648x4x?x64xbf16>, %v: tensor<2147483648x4x?x64xbf16>) -> (tensor<2147483648x4x?x64xbf16>, tensor<2147483648x4x?xf32>) {
  // expected-error @+1 {{query 'tensor<2147483648x4x?x64xbf16>' has a static size 2147483648 (B) above 2147483647}}
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<2147483648x4x?x64xbf16>, tensor<2147483648x4x?x64xbf16>, tensor<2147483648x4x?x64xbf16>) -> (tensor<2147483648x4x?x64xbf16>, tensor<2147483648x4x?xf32>)
  return %o, %lse : tensor<2147483648x4x?x64xbf16>, tensor<2147483648x4x?xf32>
}

// -----

// h = 2^56 reached the bundle as "grid y = ... is outside 0..4294967295" at 0:0.
func.func @ffn_hidden_2_56(%x: tensor<?x64xbf16>, %w1: tensor<64x72057594037927936xbf16>, %w2: tensor<72057594037927936x64xbf16>) -> tensor<?x64xbf16> {
  // expected-error @+1 {{w1 'tensor<64x72057594037927936xbf16>' has a static size 72057594037927936 (h) above 2147483647}}
  %y = flash.ffn gelu_tanh %x, %w1, %w2 : (tensor<?x64xbf16>, tensor<64x72057594037927936xbf16>, tensor<72057594037927936x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// M = 2^31.
func.func @ffn_rows_2_31(%x: tensor<2147483648x64xbf16>, %w1: tensor<64x256xbf16>, %w2: tensor<256x64xbf16>) -> tensor<2147483648x64xbf16> {
  // expected-error @+1 {{input 'tensor<2147483648x64xbf16>' has a static size 2147483648 (M) above 2147483647}}
  %y = flash.ffn gelu_tanh %x, %w1, %w2 : (tensor<2147483648x64xbf16>, tensor<64x256xbf16>, tensor<256x64xbf16>) -> tensor<2147483648x64xbf16>
  return %y : tensor<2147483648x64xbf16>
}

// -----

// Any FFN width compiles (d = 100, h = 1001, d_out = 77: test/Passes/flash-tile.mlir); what is refused
// is a size the kernels' 32-bit indices cannot address, here d_out = 2^31.
func.func @ffn_out_2_31(%x: tensor<?x64xbf16>, %w1: tensor<64x256xbf16>, %w2: tensor<256x2147483648xbf16>) -> tensor<?x2147483648xbf16> {
  // expected-error @+1 {{w2 'tensor<256x2147483648xbf16>' has a static size 2147483648 (d_out) above 2147483647, the largest size the kernels' 32-bit indices can address}}
  %y = flash.ffn gelu_tanh %x, %w1, %w2 : (tensor<?x64xbf16>, tensor<64x256xbf16>, tensor<256x2147483648xbf16>) -> tensor<?x2147483648xbf16>
  return %y : tensor<?x2147483648xbf16>
}
