// RUN: flash-opt %s -split-input-file -verify-diagnostics
// Tile IR is an input: every integer and float attribute of the tile types,
// attributes and ops is bounded to what flash-plan-memory and the CUDA emitter
// can honour (dialect/include/flashc/Dialect/Tile/IR/TileLimits.h). Each case
// below crashed a kernel builder, hung the emitter or printed invalid CUDA.

// expected-error @+1 {{block_m must be in [1, 256], got 9223372036854775807}}
tile.kernel @k(%a: !tile.tensor<?x16xf32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 9223372036854775807, block_n = 16, warps = 1, stages = 1} {
  tile.return
}

// -----

// expected-error @+1 {{stages must be in [1, 8], got 72057594037927936}}
tile.kernel @k(%a: !tile.tensor<?x16xf32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 16, warps = 1, stages = 72057594037927936} {
  tile.return
}

// -----

// expected-error @+1 {{smem_bytes must be in [0, 2147483647], got -1}}
tile.kernel @k(%a: !tile.tensor<?x16xf32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 16, warps = 1, stages = 1, smem_bytes = -1} {
  tile.return
}

// -----

// expected-error @+1 {{spec must be a #tile.attention, #tile.gemm, #tile.decode, #tile.varlen or #tile.moe recipe, got 7 : i64}}
tile.kernel @k(%a: !tile.tensor<?x16xf32>) attributes {
    grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>], strategy = #tile.strategy<mma_sync_sm80>,
    block_m = 16, block_n = 16, warps = 1, stages = 1, spec = 7} {
  tile.return
}

// -----

// expected-error @+1 {{grid divisor must be in [1, 2147483647], got 4294967296}}
func.func private @g() attributes {g = #tile.grid<ceildiv(arg0[2], 4294967296)>}

// -----

// expected-error @+1 {{grid dimension index must be in [0, 3] (tensors have rank 1 to 4), got -1}}
func.func private @g() attributes {g = #tile.grid<arg0[-1]>}

// -----

// expected-error @+1 {{grid constant must be in [1, 2147483647], got 9223372036854775807}}
func.func private @g() attributes {g = #tile.grid<9223372036854775807>}

// -----

// A window side past 2^30 was rebuilt by flash-plan-memory into overflowing
// index math (a crash for sm_80) or passed unchecked into the manifest (sm_90a).
// expected-error @+1 {{#tile.attention window_left must be in [-1, 1073741823] (-1: unbounded), got 9223372036854775807}}
func.func private @s() attributes {s = #tile.attention<role = attention_forward, head_dim = 64, value_dim = 64, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = 9223372036854775807, window_right = 0, element_type = bf16>}

// -----

// expected-error @+1 {{#tile.attention head_dim must be in [1, 1024], got 72057594037927936}}
func.func private @s() attributes {s = #tile.attention<role = attention_forward, head_dim = 72057594037927936, value_dim = 64, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16>}

// -----

// expected-error @+1 {{#tile.attention value_dim must be in [1, 1024], got 0}}
func.func private @s() attributes {s = #tile.attention<role = attention_forward, head_dim = 64, value_dim = 0, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16>}

// -----

// expected-error @+1 {{#tile.attention scale must be finite and at most 1.000000e+30 in magnitude}}
func.func private @s() attributes {s = #tile.attention<role = attention_forward, head_dim = 64, value_dim = 64, scale = 0x7FF0000000000000 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16>}

// -----

// expected-error @+1 {{#tile.attention softcap must be >= 0 (0: none)}}
func.func private @s() attributes {s = #tile.attention<role = attention_forward, head_dim = 64, value_dim = 64, scale = 1.250000e-01 : f64, softcap = -1.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16>}

// -----

// expected-error @+1 {{#tile.attention role must be an attention kernel, got gemm (a #tile.gemm role)}}
func.func private @s() attributes {s = #tile.attention<role = gemm, head_dim = 64, value_dim = 64, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16>}

// -----

// expected-error @+1 {{#tile.attention element_type must be bf16, f16 or f32, got i8}}
func.func private @s() attributes {s = #tile.attention<role = attention_forward, head_dim = 64, value_dim = 64, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = i8>}

// -----

// expected-error @+1 {{#tile.gemm block_k must be in [1, 256], got 2147483648}}
func.func private @s() attributes {s = #tile.gemm<role = gemm, activation = identity, transpose_a = false, transpose_b = false, bias1 = false, bias2 = false, gated = false, accumulate = false, alpha = 1.000000e+00 : f64, block_k = 2147483648, element_type = bf16>}

// -----

// expected-error @+1 {{#tile.gemm alpha must be finite and at most 1.000000e+30 in magnitude}}
func.func private @s() attributes {s = #tile.gemm<role = gemm, activation = identity, transpose_a = false, transpose_b = false, bias1 = false, bias2 = false, gated = false, accumulate = false, alpha = 0x7FF8000000000000 : f64, block_k = 32, element_type = bf16>}

// -----

// expected-error @+1 {{#tile.gemm role must be a GEMM-family kernel, got attention_forward (a #tile.attention role)}}
func.func private @s() attributes {s = #tile.gemm<role = attention_forward, activation = identity, transpose_a = false, transpose_b = false, bias1 = false, bias2 = false, gated = false, accumulate = false, alpha = 1.000000e+00 : f64, block_k = 32, element_type = bf16>}

// -----

// act_grad (C = alpha·op(A)·op(B) ∘ act'(P)) is a plain GEMM's epilogue with an activation to differentiate.
// expected-error @+1 {{#tile.gemm act_grad applies to a gemm with an activation and no bias, accumulation or save_pre, got role gemm with activation identity}}
func.func private @s() attributes {s = #tile.gemm<role = gemm, activation = identity, transpose_a = false, transpose_b = true, bias1 = false, bias2 = false, gated = false, accumulate = false, alpha = 1.000000e+00 : f64, block_k = 32, element_type = bf16, act_grad = true>}

// -----

// expected-error @+1 {{#tile.gemm act_grad applies to a gemm with an activation and no bias, accumulation or save_pre, got role gemm with activation gelu_tanh}}
func.func private @s() attributes {s = #tile.gemm<role = gemm, activation = gelu_tanh, transpose_a = false, transpose_b = true, bias1 = false, bias2 = false, gated = false, accumulate = true, alpha = 1.000000e+00 : f64, block_k = 32, element_type = bf16, act_grad = true>}

// -----

// expected-error @+1 {{#tile.gemm act_grad applies to a gemm with an activation and no bias, accumulation or save_pre, got role gated_gemm with activation silu}}
func.func private @s() attributes {s = #tile.gemm<role = gated_gemm, activation = silu, transpose_a = false, transpose_b = false, bias1 = false, bias2 = false, gated = false, accumulate = false, alpha = 1.000000e+00 : f64, block_k = 32, element_type = bf16, act_grad = true>}

// -----

// (gated = true is the gated FFN's form: two tiles read, two written.) A bias is not.
// expected-error @+1 {{#tile.gemm act_grad applies to a gemm with an activation and no bias, accumulation or save_pre, got role gemm with activation silu}}
func.func private @s() attributes {s = #tile.gemm<role = gemm, activation = silu, transpose_a = false, transpose_b = true, bias1 = true, bias2 = false, gated = true, accumulate = false, alpha = 1.000000e+00 : f64, block_k = 32, element_type = bf16, act_grad = true>}

// -----

// expected-error @+1 {{!tile.tensor dimension must be in [0, 2147483647] or ?, got 2147483648}}
func.func private @t(!tile.tensor<2147483648x16xbf16>)

// -----

// expected-error @+1 {{!tile.tile dimension 72057594037927936 exceeds 65536}}
func.func private @t(!tile.tile<72057594037927936x16xbf16, shared>)

// -----

// expected-error @+1 {{!tile.tile of 524288 bytes exceeds 262144 (no register file or shared memory holds it)}}
func.func private @t(!tile.tile<512x256xf32, register>)

// -----

// `buffers` is the emitter's pipeline depth: 2^63 - 1 unrolled a prologue for
// over a minute.
func.func @f(%t: !tile.tensor<?x16xbf16>, %i: index) {
  // expected-error @+1 {{'tile.load' op buffers must be in [1, 8], got 9223372036854775807}}
  %x = tile.load %t[%i, %i] limit [%i, %i] {buffers = 9223372036854775807 : i64} : !tile.tensor<?x16xbf16> -> !tile.tile<16x16xbf16, shared>
  return
}

// -----

func.func @f(%t: !tile.tensor<?x16xbf16>, %i: index) {
  // expected-error @+1 {{'tile.load' op smem_offset must be in [0, 2147483647], got -128}}
  %x = tile.load %t[%i, %i] limit [%i, %i] {smem_offset = -128 : i64} : !tile.tensor<?x16xbf16> -> !tile.tile<16x16xbf16, shared>
  return
}

// -----

func.func @f(%r: !tile.tile<16x16xbf16, register>) {
  // expected-error @+1 {{'tile.copy' op smem_offset must be in [0, 2147483647], got 4294967296}}
  %x = tile.copy %r {smem_offset = 4294967296 : i64} : !tile.tile<16x16xbf16, register> -> !tile.tile<16x16xbf16, shared>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'tile.fill' op fill value must not be NaN}}
  %x = tile.fill 0x7FF8000000000000 : !tile.tile<16x16xf32, register>
  return
}

// -----

func.func @f(%s: !tile.tile<16x16xf32, register>) {
  // expected-error @+1 {{'tile.scale' op factor must be finite and at most 1.000000e+30 in magnitude, got INF}}
  %x = tile.scale %s by 0x7FF0000000000000 : !tile.tile<16x16xf32, register>
  return
}

// -----

func.func @f(%s: !tile.tile<16x16xf32, register>) {
  // expected-error @+1 {{'tile.softcap' op scale must be finite and at most 1.000000e+30 in magnitude, got 3.000000e+38}}
  %x = tile.softcap %s scale 3.0e38 cap 30.0 : !tile.tile<16x16xf32, register>
  return
}

// -----

func.func @f(%s: !tile.tile<16x16xf32, register>, %m: !tile.tile<16xf32, register>) {
  // expected-error @+1 {{'tile.exp2' op scale must be finite}}
  %x = tile.exp2 %s, %m scale 0xFFF0000000000000 : !tile.tile<16x16xf32, register>, !tile.tile<16xf32, register>
  return
}
