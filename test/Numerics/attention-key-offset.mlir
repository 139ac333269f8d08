// A run-time key offset (flash.attention key_offset = %off): query row i sits
// at key position i + off instead of i + Sk - Sq, so a query chunk and a key
// chunk of one long sequence are aligned by their global positions (context
// parallelism). Every offset below gives other visible keys than Sk - Sq = 16:
// rows that see no key (off < 0), windows cut at both ends, all keys hidden
// (-40: lse = -inf, output 0), the extreme int32 values (clamped in the
// kernels without changing a result). f32, block 16: max |tile - ref| /
// max |ref| < 1e-5 against the float64 reference with the same offset.
//
// RUN: flash-run-tile %s --backward --key-offset=16 --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --key-offset=-7 --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --key-offset=29 --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --key-offset=-40 --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --key-offset=2147483647 --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --key-offset=-2147483648 --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// The deterministic and Sᵀ backward kernels read the offset too.
// RUN: flash-run-tile %s --backward --deterministic --key-offset=5 --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --backward-form=transposed --key-offset=-3 --block-m=32 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @causal_offset forward lse: {{.*}} ok
// CHECK: @causal_offset backward d_v: {{.*}} ok
// CHECK: @window_offset forward lse: {{.*}} ok
// CHECK: @window_offset backward d_v: {{.*}} ok
// CHECK: @full_offset backward d_v: {{.*}} ok

func.func @causal_offset(%q: tensor<1x4x37x32xf32>, %k: tensor<1x2x53x32xf32>, %v: tensor<1x2x53x32xf32>, %off: i32) -> (tensor<1x4x37x32xf32>, tensor<1x4x37xf32>) {
  %out, %lse = flash.attention %q, %k, %v key_offset = %off scale = 0.17677669529663687 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x4x37x32xf32>, tensor<1x2x53x32xf32>, tensor<1x2x53x32xf32>, i32) -> (tensor<1x4x37x32xf32>, tensor<1x4x37xf32>)
  return %out, %lse : tensor<1x4x37x32xf32>, tensor<1x4x37xf32>
}

func.func @window_offset(%q: tensor<1x2x37x32xf32>, %k: tensor<1x2x53x32xf32>, %v: tensor<1x2x53x32xf32>, %off: i32) -> (tensor<1x2x37x32xf32>, tensor<1x2x37xf32>) {
  %out, %lse = flash.attention %q, %k, %v key_offset = %off scale = 0.17677669529663687 mask = #flash.mask<sliding_window, left = 9, right = 4> softcap = 8.0 num_kv_heads = 2
      : (tensor<1x2x37x32xf32>, tensor<1x2x53x32xf32>, tensor<1x2x53x32xf32>, i32) -> (tensor<1x2x37x32xf32>, tensor<1x2x37xf32>)
  return %out, %lse : tensor<1x2x37x32xf32>, tensor<1x2x37xf32>
}

// No mask: the offset changes nothing (and the kernels still take it).
func.func @full_offset(%q: tensor<1x2x37x32xf32>, %k: tensor<1x2x53x32xf32>, %v: tensor<1x2x53x32xf32>, %off: i32) -> tensor<1x2x37x32xf32> {
  %out, %lse = flash.attention %q, %k, %v key_offset = %off scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<1x2x37x32xf32>, tensor<1x2x53x32xf32>, tensor<1x2x53x32xf32>, i32) -> (tensor<1x2x37x32xf32>, tensor<1x2x37xf32>)
  return %out : tensor<1x2x37x32xf32>
}
