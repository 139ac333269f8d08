// Mask modifiers that read tensors (flash.attention's mask_mod operands): the tile programs on the CPU against the
// float64 reference, forward and backward, in both backward forms, the deterministic one and sm_80's plans. The
// programs run the block-class kernels (tile.classify_blocks, exact on the CPU) into their workspace tables;
// flash-run-tile gives every i32 argument runs of equal values in [0, 4) (document ids; a per-(batch, head) key
// count of at most 3 leaves rows that see no key: zeros, lse -inf). Bound: f32, max |tile - ref| / max |ref| < 1e-5.
//
// RUN: flash-run-tile %s --backward --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --deterministic --block-m=16 --block-n=32 --warps=1 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --backward-form=transposed --block-m=32 --block-n=32 --warps=2 --tolerance=1e-5 | FileCheck %s
// RUN: flash-run-tile %s --backward --target=sm_80 --tolerance=1e-5 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @documents forward result 0: {{.*}} ok
// CHECK: @documents backward d_q: {{.*}} ok
// CHECK: @documents backward d_k: {{.*}} ok
// CHECK: @documents backward d_v: {{.*}} ok
// CHECK: @key_count forward lse: {{.*}} ok
// CHECK: @key_count backward d_v: {{.*}} ok
// CHECK: @shifted_documents_gqa backward d_k: {{.*}} ok
// CHECK: @block_sparse forward result 0: {{.*}} ok
// CHECK: @block_sparse backward d_q: {{.*}} ok

// Causal within documents: doc[q] == doc[k] (the ids: a tensor of the tokens).
func.func @documents(%q: tensor<2x2x70x32xf32>, %k: tensor<2x2x70x32xf32>, %v: tensor<2x2x70x32xf32>, %doc: tensor<70xi32>) -> tensor<2x2x70x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<causal> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %ids: tensor<70xi32>):
    %a = tensor.extract %ids[%i] : tensor<70xi32>   // the query's document
    %b = tensor.extract %ids[%j] : tensor<70xi32>   // the key's document
    %x = arith.index_cast %a : i32 to index
    %y = arith.index_cast %b : i32 to index
    %same = arith.cmpi eq, %x, %y : index
    flash.yield %same : i1
  } : (tensor<2x2x70x32xf32>, tensor<2x2x70x32xf32>, tensor<2x2x70x32xf32>, tensor<70xi32>) -> (tensor<2x2x70x32xf32>, tensor<2x2x70xf32>)
  return %out : tensor<2x2x70x32xf32>
}

// The batch and head indices: keys k < count[b, h] (a [B, Hq] tensor), no other mask.
func.func @key_count(%q: tensor<2x4x50x16xf32>, %k: tensor<2x2x61x16xf32>, %v: tensor<2x2x61x16xf32>, %count: tensor<2x4xi32>) -> tensor<2x4x50x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod(%count) {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %n: tensor<2x4xi32>):
    %c = tensor.extract %n[%b, %h] : tensor<2x4xi32>
    %limit = arith.index_cast %c : i32 to index
    %seen = arith.cmpi slt, %j, %limit : index
    flash.yield %seen : i1
  } : (tensor<2x4x50x16xf32>, tensor<2x2x61x16xf32>, tensor<2x2x61x16xf32>, tensor<2x4xi32>) -> (tensor<2x4x50x16xf32>, tensor<2x4x50xf32>)
  return %out : tensor<2x4x50x16xf32>
}

// GQA, Sq != Sk, a read at a computed position: doc[i + 5] == doc[j].
func.func @shifted_documents_gqa(%q: tensor<1x4x40x32xf32>, %k: tensor<1x2x57x32xf32>, %v: tensor<1x2x57x32xf32>, %doc: tensor<60xi32>) -> tensor<1x4x40x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %ids: tensor<60xi32>):
    %five = arith.constant 5 : index
    %p = arith.addi %i, %five : index
    %a = tensor.extract %ids[%p] : tensor<60xi32>
    %b = tensor.extract %ids[%j] : tensor<60xi32>
    %x = arith.index_cast %a : i32 to index
    %y = arith.index_cast %b : i32 to index
    %same = arith.cmpi eq, %x, %y : index
    flash.yield %same : i1
  } : (tensor<1x4x40x32xf32>, tensor<1x2x57x32xf32>, tensor<1x2x57x32xf32>, tensor<60xi32>) -> (tensor<1x4x40x32xf32>, tensor<1x4x40xf32>)
  return %out : tensor<1x4x40x32xf32>
}

// A block-sparse layout (block-sparse FlashAttention; flashc.mask_mod.block_sparse): key k is visible from query q
// when layout[h, q // 16, k // 16] != 0, the block size fixed by the spec, the layout [Hq, 3, 4] a tensor of the call.
func.func @block_sparse(%q: tensor<1x2x45x32xf32>, %k: tensor<1x2x61x32xf32>, %v: tensor<1x2x61x32xf32>, %layout: tensor<2x3x4xi32>) -> tensor<1x2x45x32xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.17677669529663687 mask = #flash.mask<none> num_kv_heads = 2 mask_mod(%layout) {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %l: tensor<2x3x4xi32>):
    %c16 = arith.constant 16 : index
    %c0 = arith.constant 0 : index
    %qb = arith.floordivsi %i, %c16 : index
    %kb = arith.floordivsi %j, %c16 : index
    %e = tensor.extract %l[%h, %qb, %kb] : tensor<2x3x4xi32>
    %x = arith.index_cast %e : i32 to index
    %on = arith.cmpi ne, %x, %c0 : index
    flash.yield %on : i1
  } : (tensor<1x2x45x32xf32>, tensor<1x2x61x32xf32>, tensor<1x2x61x32xf32>, tensor<2x3x4xi32>) -> (tensor<1x2x45x32xf32>, tensor<1x2x45xf32>)
  return %out : tensor<1x2x45x32xf32>
}
