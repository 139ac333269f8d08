// Hand-edited kernels whose recipe (spec) cannot be rebuilt for their
// arguments: flash-plan-memory checks them before it rebuilds anything (the
// kernel builders indexed the arguments by role and crashed). The bodies are
// empty: only the recipe and the signature matter to the planner.

// A head dim the arguments do not have.
// expected-error @+1 {{flash-plan-memory: @fwd cannot be planned: kernel recipe 'attention_forward': argument 0 (q) must have a static last dimension of 64 (the recipe's head dim), got '!tile.tensor<?x4x?x128xbf16>'}}
tile.kernel @fwd(%q: !tile.tensor<?x4x?x128xbf16>, %k: !tile.tensor<?x4x?x64xbf16>, %v: !tile.tensor<?x4x?x64xbf16>, %o: !tile.tensor<?x4x?x64xbf16>, %lse: !tile.tensor<?x4x?xf32>) attributes {block_m = 64 : i64, block_n = 64 : i64, grid = [#tile.grid<ceildiv(arg0[2], 64)>, #tile.grid<arg0[1]>, #tile.grid<arg0[0]>], spec = #tile.attention<role = attention_forward, head_dim = 64, value_dim = 64, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16>, stages = 2 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  tile.return
}

// -----

// A deleted argument.
// expected-error @+1 {{flash-plan-memory: @fwd cannot be planned: kernel recipe 'attention_forward' takes 5 arguments, got 4}}
tile.kernel @fwd(%q: !tile.tensor<?x4x?x64xbf16>, %k: !tile.tensor<?x4x?x64xbf16>, %v: !tile.tensor<?x4x?x64xbf16>, %o: !tile.tensor<?x4x?x64xbf16>) attributes {block_m = 64 : i64, block_n = 64 : i64, grid = [#tile.grid<ceildiv(arg0[2], 64)>, #tile.grid<arg0[1]>, #tile.grid<arg0[0]>], spec = #tile.attention<role = attention_forward, head_dim = 64, value_dim = 64, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16>, stages = 2 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  tile.return
}

// -----

// lse in the recipe's element type instead of f32.
// expected-error @+1 {{argument 4 (lse) must have element type 'f32', got '!tile.tensor<?x4x?xbf16>'}}
tile.kernel @fwd(%q: !tile.tensor<?x4x?x64xbf16>, %k: !tile.tensor<?x4x?x64xbf16>, %v: !tile.tensor<?x4x?x64xbf16>, %o: !tile.tensor<?x4x?x64xbf16>, %lse: !tile.tensor<?x4x?xbf16>) attributes {block_m = 64 : i64, block_n = 64 : i64, grid = [#tile.grid<ceildiv(arg0[2], 64)>, #tile.grid<arg0[1]>, #tile.grid<arg0[0]>], spec = #tile.attention<role = attention_forward, head_dim = 64, value_dim = 64, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16>, stages = 2 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  tile.return
}

// -----

// The fused FFN reads W2's output dim as a tile size: a rank-1 W2 was read past its shape.
// expected-error @+1 {{kernel recipe 'ffn_fused': argument 2 (w2) must have rank 2, got '!tile.tensor<64xbf16>'}}
tile.kernel @ffn(%x: !tile.tensor<?x64xbf16>, %w1: !tile.tensor<64x128xbf16>, %w2: !tile.tensor<64xbf16>, %y: !tile.tensor<?x64xbf16>) attributes {block_m = 64 : i64, block_n = 64 : i64, grid = [#tile.grid<ceildiv(arg3[0], 64)>, #tile.grid<1>, #tile.grid<1>], spec = #tile.gemm<role = ffn_fused, activation = relu, transpose_a = false, transpose_b = false, bias1 = false, bias2 = false, gated = false, accumulate = false, alpha = 1.000000e+00 : f64, block_k = 32, element_type = bf16>, stages = 2 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  tile.return
}

// -----

// expected-error @+1 {{kernel recipe 'ffn_fused': w2 must have a static output dim in [1, 65536], got '!tile.tensor<128x?xbf16>'}}
tile.kernel @ffn(%x: !tile.tensor<?x64xbf16>, %w1: !tile.tensor<64x128xbf16>, %w2: !tile.tensor<128x?xbf16>, %y: !tile.tensor<?x64xbf16>) attributes {block_m = 64 : i64, block_n = 64 : i64, grid = [#tile.grid<ceildiv(arg3[0], 64)>, #tile.grid<1>, #tile.grid<1>], spec = #tile.gemm<role = ffn_fused, activation = relu, transpose_a = false, transpose_b = false, bias1 = false, bias2 = false, gated = false, accumulate = false, alpha = 1.000000e+00 : f64, block_k = 32, element_type = bf16>, stages = 2 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  tile.return
}

// -----

// expected-error @+1 {{kernel recipe 'gemm_split_k': a batched b (rank 3) needs a batched a, got '!tile.tensor<?x64xbf16>' and '!tile.tensor<?x?x64xbf16>'}}
tile.kernel @wgrad(%a: !tile.tensor<?x64xbf16>, %b: !tile.tensor<?x?x64xbf16>, %c: !tile.tensor<64x64xf32>) attributes {block_m = 64 : i64, block_n = 64 : i64, grid = [#tile.grid<ceildiv(arg2[0], 64)>, #tile.grid<ceildiv(arg2[1], 64)>, #tile.grid<1>], spec = #tile.gemm<role = gemm_split_k, activation = identity, transpose_a = true, transpose_b = false, bias1 = false, bias2 = false, gated = false, accumulate = false, alpha = 1.000000e+00 : f64, block_k = 32, element_type = bf16>, stages = 2 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  tile.return
}

// -----

// C in another element type than the recipe's: the rebuilt store would not verify.
// expected-error @+1 {{kernel recipe 'gemm': argument 2 (c) must have element type 'bf16', got '!tile.tensor<?x64xf16>'}}
tile.kernel @mm(%a: !tile.tensor<?x64xbf16>, %b: !tile.tensor<64x64xbf16>, %c: !tile.tensor<?x64xf16>) attributes {block_m = 64 : i64, block_n = 64 : i64, grid = [#tile.grid<ceildiv(arg2[0], 64)>, #tile.grid<ceildiv(arg2[1], 64)>, #tile.grid<1>], spec = #tile.gemm<role = gemm, activation = identity, transpose_a = false, transpose_b = false, bias1 = false, bias2 = false, gated = false, accumulate = false, alpha = 1.000000e+00 : f64, block_k = 32, element_type = bf16>, stages = 2 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  tile.return
}

// -----

// A recipe with a run-time key offset, but the kernel lost its i32 argument.
// expected-error @+1 {{flash-plan-memory: @fwd cannot be planned: kernel recipe 'attention_forward' takes 6 arguments, got 5}}
tile.kernel @fwd(%q: !tile.tensor<?x4x?x64xbf16>, %k: !tile.tensor<?x4x?x64xbf16>, %v: !tile.tensor<?x4x?x64xbf16>, %o: !tile.tensor<?x4x?x64xbf16>, %lse: !tile.tensor<?x4x?xf32>) attributes {block_m = 64 : i64, block_n = 64 : i64, grid = [#tile.grid<ceildiv(arg0[2], 64)>, #tile.grid<arg0[1]>, #tile.grid<arg0[0]>], spec = #tile.attention<role = attention_forward, head_dim = 64, value_dim = 64, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16, key_offset = true>, stages = 2 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  tile.return
}

// -----

// The key offset must be an i32 (a tensor in its place).
// expected-error @+1 {{kernel recipe 'attention_forward': argument 5 (key_offset) must be an i32, got '!tile.tensor<?x4x?xf32>'}}
tile.kernel @fwd(%q: !tile.tensor<?x4x?x64xbf16>, %k: !tile.tensor<?x4x?x64xbf16>, %v: !tile.tensor<?x4x?x64xbf16>, %o: !tile.tensor<?x4x?x64xbf16>, %lse: !tile.tensor<?x4x?xf32>, %off: !tile.tensor<?x4x?xf32>) attributes {block_m = 64 : i64, block_n = 64 : i64, grid = [#tile.grid<ceildiv(arg0[2], 64)>, #tile.grid<arg0[1]>, #tile.grid<arg0[0]>], spec = #tile.attention<role = attention_forward, head_dim = 64, value_dim = 64, scale = 1.250000e-01 : f64, softcap = 0.000000e+00 : f64, window_left = -1, window_right = 0, element_type = bf16, key_offset = true>, stages = 2 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  tile.return
}

// -----

// The activation gradient walks dh's grid: a rank-2 pre beside a batched dh would be read out of bounds.
// expected-error @+1 {{kernel recipe 'ffn_activation_grad': argument 1 (pre) must have the shape of argument 0 (dh), got '!tile.tensor<?x256xbf16>' and '!tile.tensor<?x?x256xbf16>'}}
tile.kernel @act(%dh: !tile.tensor<?x?x256xbf16>, %pre: !tile.tensor<?x256xbf16>, %dpre: !tile.tensor<?x?x256xbf16>) attributes {block_m = 64 : i64, block_n = 32 : i64, grid = [#tile.grid<ceildiv(arg2[1], 64)>, #tile.grid<ceildiv(arg2[2], 32)>, #tile.grid<arg2[0]>], spec = #tile.gemm<role = ffn_activation_grad, activation = gelu_tanh, transpose_a = false, transpose_b = false, bias1 = false, bias2 = false, gated = false, accumulate = false, alpha = 1.000000e+00 : f64, block_k = 32, element_type = bf16>, stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  tile.return
}

// -----

// A saved pre-activation of another width than the output it is written with.
// expected-error @+1 {{kernel recipe 'gemm': argument 2 (pre) must have the shape of argument 3 (c), got '!tile.tensor<?x128xbf16>' and '!tile.tensor<?x64xbf16>'}}
tile.kernel @up(%a: !tile.tensor<?x64xbf16>, %b: !tile.tensor<64x64xbf16>, %pre: !tile.tensor<?x128xbf16>, %c: !tile.tensor<?x64xbf16>) attributes {block_m = 64 : i64, block_n = 64 : i64, grid = [#tile.grid<ceildiv(arg3[0], 64)>, #tile.grid<ceildiv(arg3[1], 64)>, #tile.grid<1>], spec = #tile.gemm<role = gemm, activation = gelu_tanh, transpose_a = false, transpose_b = false, bias1 = false, bias2 = false, gated = false, accumulate = false, alpha = 1.000000e+00 : f64, block_k = 32, element_type = bf16, save_pre = true>, stages = 2 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  tile.return
}
