// flash.decode_attention through flash-tile and the CPU executor (the three #tile.decode kernels: the table
// check, the split kernel, the combine; 16 "SMs" on the CPU: 17 sequences x 2 kv heads take 1 split, 3 take 2,
// 1 takes 8) against the float64 graph evaluator. flash-run-tile gives the sequences
// lengths 0, 1, the capacity and ragged ones between, and page ids anywhere in the cache (shared by several).
// RUN: flash-run-tile %s --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %s --tolerance=2e-2 --dynamic-size=1 | FileCheck %s
// RUN: flash-run-tile %s --tolerance=2e-2 --dynamic-size=3 --seed=7 | FileCheck %s

// One token, GQA 4, a paged cache of 16-row pages.
// CHECK: @paged forward result 0: max relative error {{.*}} ok
// CHECK: @paged forward result 1: max relative error {{.*}} ok
func.func @paged(%q: tensor<?x8x1x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x64xbf16>,
                 %lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> (tensor<?x8x1x64xbf16>, tensor<?x8x1xf32>) {
  %out, %lse = flash.decode_attention %q, %k, %v, %lens block_table %table scale = 0.125 page_size = 16
      num_kv_heads = 2
      : (tensor<?x8x1x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?xi32>, tensor<?x?xi32>)
      -> (tensor<?x8x1x64xbf16>, tensor<?x8x1xf32>)
  return %out, %lse : tensor<?x8x1x64xbf16>, tensor<?x8x1xf32>
}

// Three causal tokens, MQA over 6 query heads (18 rows: two row groups), a contiguous cache, f16, Dv != D.
// CHECK: @contiguous forward result 0: max relative error {{.*}} ok
// CHECK: @contiguous forward result 1: max relative error {{.*}} ok
func.func @contiguous(%q: tensor<?x6x3x128xf16>, %k: tensor<?x1x?x128xf16>, %v: tensor<?x1x?x64xf16>,
                      %lens: tensor<?xi32>) -> (tensor<?x6x3x64xf16>, tensor<?x6x3xf32>) {
  %out, %lse = flash.decode_attention %q, %k, %v, %lens scale = 0.088 causal num_kv_heads = 1
      : (tensor<?x6x3x128xf16>, tensor<?x1x?x128xf16>, tensor<?x1x?x64xf16>, tensor<?xi32>)
      -> (tensor<?x6x3x64xf16>, tensor<?x6x3xf32>)
  return %out, %lse : tensor<?x6x3x64xf16>, tensor<?x6x3xf32>
}

// Two decode ops in one program: each its own workspaces (status, status2, ...).
// CHECK: @two forward result 0: max relative error {{.*}} ok
// CHECK: @two forward result 1: max relative error {{.*}} ok
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
