// The elementwise graph spelling of attention modifiers (index tensors by tensor.generate, gathers, compare,
// select with -inf, a bias, a tanh cap), lifted into mask / score regions and fused by flash-fuse-attention
// (test/Passes/flash-fuse-attention.mlir checks the regions op by op): the fused attention's tile programs on the
// CPU against the float64 reference, which evaluates the graph as written, op by op (arith / math on tensors,
// tensor.generate bodies per element: Execution/ScalarOps.cpp), forward and backward, ragged sizes.
//
// RUN: flash-run-tile %s --backward --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 --input-range=2 | FileCheck %s
// RUN: flash-run-tile %s --backward --backward-form=transposed --block-m=32 --block-n=32 --warps=2 --tolerance=1e-5 --input-range=2 | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: @causal_by_iota forward result 0: {{.*}} ok
// CHECK: @causal_by_iota backward d_k: {{.*}} ok
// CHECK: @documents_by_gather forward result 0: {{.*}} ok
// CHECK: @documents_by_gather backward d_q: {{.*}} ok
// CHECK: @alibi_capped_by_ops forward result 0: {{.*}} ok
// CHECK: @alibi_capped_by_ops backward d_v: {{.*}} ok

func.func @causal_by_iota(%q: tensor<1x2x37x32xf32>, %k: tensor<1x2x37x32xf32>, %v: tensor<1x2x37x32xf32>) -> tensor<1x2x37x32xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x37x32xf32>, tensor<1x2x37x32xf32> -> tensor<1x2x37x37xf32>
  %t = flash.scale %s by 0.17677669529663687 : tensor<1x2x37x37xf32>
  %qi = tensor.generate {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    tensor.yield %i : index
  } : tensor<1x2x37x37xindex>
  %ki = tensor.generate {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    tensor.yield %j : index
  } : tensor<1x2x37x37xindex>
  %visible = arith.cmpi sge, %qi, %ki : tensor<1x2x37x37xindex>
  %minus = arith.constant dense<0xFF800000> : tensor<1x2x37x37xf32>
  %m = arith.select %visible, %t, %minus : tensor<1x2x37x37xi1>, tensor<1x2x37x37xf32>
  %p = flash.softmax %m : tensor<1x2x37x37xf32>
  %o = flash.matmul %p, %v : tensor<1x2x37x37xf32>, tensor<1x2x37x32xf32> -> tensor<1x2x37x32xf32>
  return %o : tensor<1x2x37x32xf32>
}

func.func @documents_by_gather(%q: tensor<1x2x50x32xf32>, %k: tensor<1x2x50x32xf32>, %v: tensor<1x2x50x32xf32>, %doc: tensor<50xi32>) -> tensor<1x2x50x32xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x50x32xf32>, tensor<1x2x50x32xf32> -> tensor<1x2x50x50xf32>
  %t = flash.scale %s by 0.17677669529663687 : tensor<1x2x50x50xf32>
  %c = flash.mask %t <causal> : tensor<1x2x50x50xf32>
  %dq = tensor.generate {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %d = tensor.extract %doc[%i] : tensor<50xi32>
    %x = arith.index_cast %d : i32 to index
    tensor.yield %x : index
  } : tensor<1x2x50x50xindex>
  %dk = tensor.generate {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %d = tensor.extract %doc[%j] : tensor<50xi32>
    %x = arith.index_cast %d : i32 to index
    tensor.yield %x : index
  } : tensor<1x2x50x50xindex>
  %same = arith.cmpi eq, %dq, %dk : tensor<1x2x50x50xindex>
  %minus = arith.constant dense<0xFF800000> : tensor<1x2x50x50xf32>
  %m = arith.select %same, %c, %minus : tensor<1x2x50x50xi1>, tensor<1x2x50x50xf32>
  %p = flash.softmax %m : tensor<1x2x50x50xf32>
  %o = flash.matmul %p, %v : tensor<1x2x50x50xf32>, tensor<1x2x50x32xf32> -> tensor<1x2x50x32xf32>
  return %o : tensor<1x2x50x32xf32>
}

func.func @alibi_capped_by_ops(%q: tensor<1x2x41x32xf32>, %k: tensor<1x2x41x32xf32>, %v: tensor<1x2x41x32xf32>, %slopes: tensor<2xf32>) -> tensor<1x2x41x32xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x41x32xf32>, tensor<1x2x41x32xf32> -> tensor<1x2x41x41xf32>
  %t = flash.scale %s by 0.17677669529663687 : tensor<1x2x41x41xf32>
  %bias = tensor.generate {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %slope = tensor.extract %slopes[%h] : tensor<2xf32>
    %d = arith.subi %j, %i : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %r = arith.mulf %slope, %df : f32
    tensor.yield %r : f32
  } : tensor<1x2x41x41xf32>
  %biased = arith.addf %t, %bias : tensor<1x2x41x41xf32>
  %cap = arith.constant dense<30.0> : tensor<1x2x41x41xf32>
  %x = arith.divf %biased, %cap : tensor<1x2x41x41xf32>
  %th = math.tanh %x : tensor<1x2x41x41xf32>
  %capped = arith.mulf %cap, %th : tensor<1x2x41x41xf32>
  %p = flash.softmax %capped : tensor<1x2x41x41xf32>
  %o = flash.matmul %p, %v : tensor<1x2x41x41xf32>, tensor<1x2x41x32xf32> -> tensor<1x2x41x32xf32>
  return %o : tensor<1x2x41x32xf32>
}
