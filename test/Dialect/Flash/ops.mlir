// Round trip of every flash op and attribute: custom form, then the generic
// form parsed back, must print the same IR.
// RUN: flash-opt %s | FileCheck %s
// RUN: flash-opt %s | flash-opt | FileCheck %s
// RUN: flash-opt %s --mlir-print-op-generic | flash-opt | FileCheck %s

// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>,
                  %q: tensor<?x32x?x128xbf16>, %k: tensor<?x8x?x128xbf16>,
                  %x: tensor<4x?x1024xf16>, %w: tensor<1024x4096xf16>,
                  %kt: tensor<2x4x128x?xf32>, %at: tensor<2x4x?x7xf32>)
    -> (tensor<64x16xf32>, tensor<?x32x?x?xbf16>, tensor<4x?x4096xf16>, tensor<2x4x7x?xf32>) {
  // CHECK: flash.matmul %{{.*}}, %{{.*}} : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  %0 = flash.matmul %a, %b : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  // Grouped batch: 32 query heads against 8 key heads.
  // CHECK: flash.matmul %{{.*}}, %{{.*}} transpose_b : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x?xbf16>
  %1 = flash.matmul %q, %k transpose_b : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x?xbf16>
  // A rank-2 rhs is shared by every lhs batch slice.
  // CHECK: flash.matmul %{{.*}}, %{{.*}} : tensor<4x?x1024xf16>, tensor<1024x4096xf16> -> tensor<4x?x4096xf16>
  %2 = flash.matmul %x, %w : tensor<4x?x1024xf16>, tensor<1024x4096xf16> -> tensor<4x?x4096xf16>
  // CHECK: flash.matmul %{{.*}}, %{{.*}} transpose_a transpose_b : tensor<2x4x?x7xf32>, tensor<2x4x128x?xf32> -> tensor<2x4x7x128xf32>
  %3 = flash.matmul %at, %kt transpose_a transpose_b : tensor<2x4x?x7xf32>, tensor<2x4x128x?xf32> -> tensor<2x4x7x128xf32>
  %4 = tensor.cast %3 : tensor<2x4x7x128xf32> to tensor<2x4x7x?xf32>
  return %0, %1, %2, %4 : tensor<64x16xf32>, tensor<?x32x?x?xbf16>, tensor<4x?x4096xf16>, tensor<2x4x7x?xf32>
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%s: tensor<?x16x?x?xf32>, %x: tensor<?x4096xbf16>, %b: tensor<4096xbf16>)
    -> (tensor<?x16x?x?xf32>, tensor<?x4096xbf16>) {
  // CHECK: flash.scale %{{.*}} by 1.250000e-01 : tensor<?x16x?x?xf32>
  %0 = flash.scale %s by 0.125 : tensor<?x16x?x?xf32>
  // CHECK: flash.mask %{{.*}} <none> : tensor<?x16x?x?xf32>
  %1 = flash.mask %0 <none> : tensor<?x16x?x?xf32>
  // CHECK: flash.mask %{{.*}} <causal> : tensor<?x16x?x?xf32>
  %2 = flash.mask %1 <causal> : tensor<?x16x?x?xf32>
  // CHECK: flash.mask %{{.*}} <sliding_window, left = 256, right = 0> : tensor<?x16x?x?xf32>
  %3 = flash.mask %2 <sliding_window, left = 256, right = 0> : tensor<?x16x?x?xf32>
  // CHECK: flash.mask %{{.*}} <sliding_window, left = -1, right = 4> : tensor<?x16x?x?xf32>
  %4 = flash.mask %3 <sliding_window, left = -1, right = 4> : tensor<?x16x?x?xf32>
  // CHECK: flash.softmax %{{.*}} : tensor<?x16x?x?xf32>
  %5 = flash.softmax %4 : tensor<?x16x?x?xf32>
  // CHECK: flash.gelu tanh %{{.*}} : tensor<?x4096xbf16>
  %6 = flash.gelu tanh %x : tensor<?x4096xbf16>
  // CHECK: flash.gelu erf %{{.*}} : tensor<?x4096xbf16>
  %7 = flash.gelu erf %6 : tensor<?x4096xbf16>
  // CHECK: flash.silu %{{.*}} : tensor<?x4096xbf16>
  %8 = flash.silu %7 : tensor<?x4096xbf16>
  // CHECK: flash.relu %{{.*}} : tensor<?x4096xbf16>
  %9 = flash.relu %8 : tensor<?x4096xbf16>
  // CHECK: flash.add %{{.*}}, %{{.*}} : tensor<?x4096xbf16>, tensor<4096xbf16>
  %10 = flash.add %9, %b : tensor<?x4096xbf16>, tensor<4096xbf16>
  // CHECK: flash.add %{{.*}}, %{{.*}} : tensor<?x4096xbf16>, tensor<?x4096xbf16>
  %11 = flash.add %10, %x : tensor<?x4096xbf16>, tensor<?x4096xbf16>
  // CHECK: flash.mul %{{.*}}, %{{.*}} : tensor<?x4096xbf16>
  %12 = flash.mul %11, %x : tensor<?x4096xbf16>
  return %5, %12 : tensor<?x16x?x?xf32>, tensor<?x4096xbf16>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<?x32x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x64xbf16>,
                     %q16: tensor<2x4x100x64xf16>, %k16: tensor<2x4x37x64xf16>)
    -> (tensor<?x32x?x64xbf16>, tensor<?x32x?xf32>, tensor<2x4x100x64xf16>, tensor<2x4x100xf32>,
        tensor<?x32x?x64xbf16>) {
  // CHECK: %[[OUT:.+]], %[[LSE:.+]] = flash.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 8.838830e-02 mask = #flash.mask<causal> num_kv_heads = 8 : (tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x64xbf16>) -> (tensor<?x32x?x64xbf16>, tensor<?x32x?xf32>)
  %o, %lse = flash.attention %q, %k, %v scale = 0.0883883 mask = #flash.mask<causal> num_kv_heads = 8
      : (tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x64xbf16>) -> (tensor<?x32x?x64xbf16>, tensor<?x32x?xf32>)
  // Sq = 100 queries against Sk = 37 keys, window, soft-capped scores.
  // CHECK: flash.attention %{{.*}} scale = 1.250000e-01 mask = #flash.mask<sliding_window, left = 16, right = 16> softcap = 3.000000e+01 num_kv_heads = 4 : (tensor<2x4x100x64xf16>, tensor<2x4x37x64xf16>, tensor<2x4x37x64xf16>) -> (tensor<2x4x100x64xf16>, tensor<2x4x100xf32>)
  %o2, %lse2 = flash.attention %q16, %k16, %k16 scale = 0.125 mask = #flash.mask<sliding_window, left = 16, right = 16> softcap = 30.0 num_kv_heads = 4
      : (tensor<2x4x100x64xf16>, tensor<2x4x37x64xf16>, tensor<2x4x37x64xf16>) -> (tensor<2x4x100x64xf16>, tensor<2x4x100xf32>)
  // softcap = 0 is the default and is not printed.
  // CHECK: flash.attention %{{.*}} mask = #flash.mask<none> num_kv_heads = 8 :
  %o3, %lse3 = flash.attention %q, %k, %v scale = 1.0 mask = #flash.mask<none> softcap = 0.0 num_kv_heads = 8
      : (tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x64xbf16>) -> (tensor<?x32x?x64xbf16>, tensor<?x32x?xf32>)
  // CHECK: return %[[OUT]], %[[LSE]]
  return %o, %lse, %o2, %lse2, %o3 : tensor<?x32x?x64xbf16>, tensor<?x32x?xf32>, tensor<2x4x100x64xf16>, tensor<2x4x100xf32>, tensor<?x32x?x64xbf16>
}

// A run-time key offset (an i32): query row i sits at key position i + %off.
// CHECK-LABEL: func.func @attention_key_offset
// CHECK-SAME: %[[OFF:[a-z0-9]+]]: i32
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} key_offset = %[[OFF]] scale = 1.250000e-01 mask = #flash.mask<sliding_window, left = 64, right = 0> num_kv_heads = 4 : (tensor<2x4x100x64xf16>, tensor<2x4x37x64xf16>, tensor<2x4x37x64xf16>, i32) -> (tensor<2x4x100x64xf16>, tensor<2x4x100xf32>)
func.func @attention_key_offset(%q: tensor<2x4x100x64xf16>, %k: tensor<2x4x37x64xf16>, %off: i32)
    -> (tensor<2x4x100x64xf16>, tensor<2x4x100xf32>) {
  %o, %lse = flash.attention %q, %k, %k key_offset = %off scale = 0.125 mask = #flash.mask<sliding_window, left = 64, right = 0> num_kv_heads = 4
      : (tensor<2x4x100x64xf16>, tensor<2x4x37x64xf16>, tensor<2x4x37x64xf16>, i32) -> (tensor<2x4x100x64xf16>, tensor<2x4x100xf32>)
  return %o, %lse : tensor<2x4x100x64xf16>, tensor<2x4x100xf32>
}

// A mask modifier: prefix-LM over 64 keys, causal after them (the region an index function of
// the query row and the key row, yielding whether the key is visible).
// CHECK-LABEL: func.func @attention_mask_mod
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 1.250000e-01 mask = #flash.mask<none> num_kv_heads = 4 mask_mod {
// CHECK-NEXT: ^bb0(%[[Q:.+]]: index, %[[K:.+]]: index):
// CHECK-NEXT:   %[[PREFIX:.+]] = arith.constant 64 : index
// CHECK-NEXT:   %[[IN:.+]] = arith.cmpi slt, %[[K]], %[[PREFIX]] : index
// CHECK-NEXT:   %[[CAUSAL:.+]] = arith.cmpi sle, %[[K]], %[[Q]] : index
// CHECK-NEXT:   %[[VISIBLE:.+]] = arith.ori %[[IN]], %[[CAUSAL]] : i1
// CHECK-NEXT:   flash.yield %[[VISIBLE]] : i1
// CHECK-NEXT: } : (tensor<2x4x100x64xf16>
func.func @attention_mask_mod(%q: tensor<2x4x100x64xf16>, %k: tensor<2x4x37x64xf16>)
    -> (tensor<2x4x100x64xf16>, tensor<2x4x100xf32>) {
  %o, %lse = flash.attention %q, %k, %k scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4 mask_mod {
  ^bb0(%i: index, %j: index):
    %prefix = arith.constant 64 : index
    %in_prefix = arith.cmpi slt, %j, %prefix : index
    %causal = arith.cmpi sle, %j, %i : index
    %visible = arith.ori %in_prefix, %causal : i1
    flash.yield %visible : i1
  } : (tensor<2x4x100x64xf16>, tensor<2x4x37x64xf16>, tensor<2x4x37x64xf16>) -> (tensor<2x4x100x64xf16>, tensor<2x4x100xf32>)
  return %o, %lse : tensor<2x4x100x64xf16>, tensor<2x4x100xf32>
}

// The graph spelling of a modifier: flash.mask ... mod { region } (flash-fuse-attention moves it into
// the attention's mask_mod).
// CHECK-LABEL: func.func @mask_with_modifier
// CHECK: flash.mask %{{.+}} <causal> mod {
// CHECK-NEXT: ^bb0(%[[Q:.+]]: index, %[[K:.+]]: index):
// CHECK: arith.cmpi eq, %[[Q]], %[[K]] : index
// CHECK: flash.yield %{{.+}} : i1
// CHECK-NEXT: } : tensor<?x4x?x?xf32>
func.func @mask_with_modifier(%s: tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32> {
  %m = flash.mask %s <causal> mod {
  ^bb0(%i: index, %j: index):
    %d = arith.cmpi eq, %i, %j : index
    %c3 = arith.constant 3 : index
    %r = arith.remsi %j, %c3 : index
    %c0 = arith.constant 0 : index
    %every3 = arith.cmpi eq, %r, %c0 : index
    %visible = arith.ori %d, %every3 : i1
    flash.yield %visible : i1
  } : tensor<?x4x?x?xf32>
  return %m : tensor<?x4x?x?xf32>
}

// CHECK-LABEL: func.func @ffn
func.func @ffn(%x: tensor<?x?x1024xbf16>, %w1: tensor<1024x4096xbf16>, %b1: tensor<4096xbf16>,
               %w2: tensor<4096x1024xbf16>, %b2: tensor<1024xbf16>, %wu: tensor<1024x4096xbf16>,
               %w3: tensor<4096x512xbf16>)
    -> (tensor<?x?x1024xbf16>, tensor<?x?x1024xbf16>, tensor<?x?x512xbf16>, tensor<?x?x1024xbf16>) {
  // CHECK: flash.ffn gelu_tanh %{{.*}}, %{{.*}} bias %{{.*}}, %{{.*}} bias %{{.*}} : (tensor<?x?x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096xbf16>, tensor<4096x1024xbf16>, tensor<1024xbf16>) -> tensor<?x?x1024xbf16>
  %0 = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 bias %b2
      : (tensor<?x?x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096xbf16>, tensor<4096x1024xbf16>, tensor<1024xbf16>) -> tensor<?x?x1024xbf16>
  // CHECK: flash.ffn gelu_erf %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<?x?x1024xbf16>
  %1 = flash.ffn gelu_erf %x, %w1, %w2
      : (tensor<?x?x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<?x?x1024xbf16>
  // Gated, with d_out != d.
  // CHECK: flash.ffn silu %{{.*}}, %{{.*}} up %{{.*}}, %{{.*}} : (tensor<?x?x1024xbf16>, tensor<1024x4096xbf16>, tensor<1024x4096xbf16>, tensor<4096x512xbf16>) -> tensor<?x?x512xbf16>
  %2 = flash.ffn silu %x, %w1 up %wu, %w3
      : (tensor<?x?x1024xbf16>, tensor<1024x4096xbf16>, tensor<1024x4096xbf16>, tensor<4096x512xbf16>) -> tensor<?x?x512xbf16>
  // CHECK: flash.ffn relu %{{.*}}, %{{.*}} up %{{.*}}, %{{.*}} bias %{{.*}} :
  %3 = flash.ffn relu %x, %w1 up %wu, %w2 bias %b2
      : (tensor<?x?x1024xbf16>, tensor<1024x4096xbf16>, tensor<1024x4096xbf16>, tensor<4096x1024xbf16>, tensor<1024xbf16>) -> tensor<?x?x1024xbf16>
  return %0, %1, %2, %3 : tensor<?x?x1024xbf16>, tensor<?x?x1024xbf16>, tensor<?x?x512xbf16>, tensor<?x?x1024xbf16>
}

// Score modifiers: flash.score (the graph spelling) and flash.attention's score_mod with its operand.
// CHECK-LABEL: func.func @score_modifiers
// CHECK: flash.score %{{.*}} mod(%{{.*}} : tensor<16xf32>) {
// CHECK: flash.yield %{{.*}} : f32
// CHECK: flash.attention {{.*}} num_kv_heads = 16 score_mod(%{{.*}}) {
// CHECK: math.tanh
func.func @score_modifiers(%s: tensor<?x16x?x?xbf16>, %slopes: tensor<16xf32>, %q: tensor<?x16x?x64xbf16>,
                           %k: tensor<?x16x?x64xbf16>, %v: tensor<?x16x?x64xbf16>) -> (tensor<?x16x?x?xbf16>, tensor<?x16x?x64xbf16>) {
  %0 = flash.score %s mod(%slopes : tensor<16xf32>) {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index, %m: tensor<16xf32>):
    %slope = tensor.extract %m[%h] : tensor<16xf32>
    %r = arith.addf %x, %slope : f32
    flash.yield %r : f32
  } : tensor<?x16x?x?xbf16>
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 16 score_mod(%slopes) {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index, %m: tensor<16xf32>):
    %cap = arith.constant 30.0 : f32
    %y = arith.divf %x, %cap : f32
    %t = math.tanh %y : f32
    %r = arith.mulf %cap, %t : f32
    flash.yield %r : f32
  } : (tensor<?x16x?x64xbf16>, tensor<?x16x?x64xbf16>, tensor<?x16x?x64xbf16>, tensor<16xf32>) -> (tensor<?x16x?x64xbf16>, tensor<?x16x?xf32>)
  return %0, %o : tensor<?x16x?x?xbf16>, tensor<?x16x?x64xbf16>
}

// The largest scale and softcap, as a spec writes them: the f32 1e30 (1.0000000150e30) is at the bound (it was
// refused as "at most 1e30, got 1e30").
// CHECK-LABEL: func.func @scale_at_the_bound
// CHECK: scale = 1.000000e+30 {{.*}}softcap = 1.000000e+30
func.func @scale_at_the_bound(%q: tensor<1x2x8x64xbf16>, %k: tensor<1x2x8x64xbf16>, %v: tensor<1x2x8x64xbf16>) -> tensor<1x2x8x64xbf16> {
  %o, %l = flash.attention %q, %k, %v scale = 1.0e30 mask = #flash.mask<causal> softcap = 1.0e30 num_kv_heads = 2
      : (tensor<1x2x8x64xbf16>, tensor<1x2x8x64xbf16>, tensor<1x2x8x64xbf16>) -> (tensor<1x2x8x64xbf16>, tensor<1x2x8xf32>)
  return %o : tensor<1x2x8x64xbf16>
}
