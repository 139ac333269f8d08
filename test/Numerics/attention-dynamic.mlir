// Dynamic batch and sequence lengths: the kernels read sizes with tile.dim;
// every `?` is bound to --dynamic-size at run time.
// Bound: f32, max |tile - ref| / max |ref| < 1e-5.
//
// RUN: flash-run-tile %s --backward --dynamic-size=23 --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --dynamic-size=1 --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @dynamic_causal backward d_v: {{.*}} ok

func.func @dynamic_causal(%q: tensor<?x2x?x32xf32>, %k: tensor<?x2x?x32xf32>, %v: tensor<?x2x?x32xf32>) -> tensor<?x2x?x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>) -> (tensor<?x2x?x32xf32>, tensor<?x2x?xf32>)
  return %out : tensor<?x2x?x32xf32>
}
