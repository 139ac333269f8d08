// Every tile op the passes generate prints and parses back to the same IR
// (custom assembly of kernels, programs, recipes, grids and all ops).
// RUN: flash-opt %s --flash-generate-backward --flash-tile --flash-plan-memory > %t.1.mlir
// RUN: flash-opt %t.1.mlir > %t.2.mlir
// RUN: flash-opt %t.2.mlir > %t.3.mlir
// RUN: diff %t.2.mlir %t.3.mlir
// RUN: FileCheck %s < %t.2.mlir
// RUN: flash-opt %s --flash-generate-backward=deterministic=true --flash-tile=ffn-plan=two-kernel --flash-plan-memory=target=sm_80 | flash-opt | FileCheck %s --check-prefix=ALT
// RUN: flash-opt %s --flash-generate-backward=form=transposed --flash-tile --flash-plan-memory | flash-opt | FileCheck %s --check-prefix=TR
// TR-DAG: role = attention_backward_transposed
// TR-DAG: transposed :
// TR-DAG: -> <64xf32, shared>

// CHECK-DAG: tile.program_id x
// CHECK-DAG: tile.dim
// CHECK-DAG: tile.load
// CHECK-DAG: tile.store
// CHECK-DAG: tile.atomic_add
// CHECK-DAG: tile.load_rows
// CHECK-DAG: tile.store_rows
// CHECK-DAG: tile.add_bias
// CHECK-DAG: tile.fill
// CHECK-DAG: tile.copy
// CHECK-DAG: tile.convert
// CHECK-DAG: tile.matmul
// CHECK-DAG: tile.mask
// CHECK-DAG: tile.softcap
// CHECK-DAG: tile.softcap_grad
// CHECK-DAG: tile.scale
// CHECK-DAG: tile.mul
// CHECK-DAG: tile.activation gelu_erf
// CHECK-DAG: tile.activation_grad silu
// CHECK-DAG: tile.row_max
// CHECK-DAG: tile.exp2
// CHECK-DAG: tile.softmax_correction
// CHECK-DAG: tile.online_sum
// CHECK-DAG: tile.rescale
// CHECK-DAG: tile.normalize
// CHECK-DAG: tile.lse
// CHECK-DAG: tile.row_dot
// CHECK-DAG: tile.recompute_probs
// CHECK-DAG: tile.softmax_grad
// CHECK-DAG: tile.alloc_tensor
// CHECK-DAG: tile.launch
// CHECK-DAG: spec = #tile.gemm<role = column_sum
// CHECK-DAG: spec = #tile.gemm<role = ffn_fused
// CHECK-DAG: spec = #tile.attention<role = attention_backward,
// ALT-DAG: spec = #tile.attention<role = attention_backward_kv,
// ALT-DAG: spec = #tile.attention<role = attention_backward_dq,
// ALT-DAG: spec = #tile.gemm<role = gated_gemm
// ALT-DAG: accumulate = true

func.func @layer(%q: tensor<?x4x?x32xbf16>, %k: tensor<?x2x?x32xbf16>, %v: tensor<?x2x?x32xbf16>,
                 %x: tensor<?x64xbf16>, %w1: tensor<64x128xbf16>, %b1: tensor<128xbf16>,
                 %w2: tensor<128x64xbf16>, %b2: tensor<64xbf16>)
    -> (tensor<?x4x?x32xbf16>, tensor<?x64xbf16>) {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669 mask = #flash.mask<sliding_window, left = 64, right = 0> softcap = 20.0 num_kv_heads = 2
      : (tensor<?x4x?x32xbf16>, tensor<?x2x?x32xbf16>, tensor<?x2x?x32xbf16>) -> (tensor<?x4x?x32xbf16>, tensor<?x4x?xf32>)
  %y = flash.ffn gelu_erf %x, %w1 bias %b1, %w2 bias %b2
      : (tensor<?x64xbf16>, tensor<64x128xbf16>, tensor<128xbf16>, tensor<128x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %out, %y : tensor<?x4x?x32xbf16>, tensor<?x64xbf16>
}

func.func @gated(%x: tensor<?x?x64xf32>, %wg: tensor<64x96xf32>, %wu: tensor<64x96xf32>, %w2: tensor<96x64xf32>) -> tensor<?x?x64xf32> {
  %y = flash.ffn silu %x, %wg up %wu, %w2 : (tensor<?x?x64xf32>, tensor<64x96xf32>, tensor<64x96xf32>, tensor<96x64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}
