// The graph spelling's modifiers (flash.score, flash.mask) reading a table at an index itself: the evaluator refuses a
// table shorter than the index's range, as the fused attention's programs do at launch (test/Numerics/
// attention-table-extents.mlir). The slopes are dynamic: --dynamic-size sets their length.
func.func @score_slopes(%s: tensor<1x4x8x8xf32>, %slopes: tensor<?xf32>) -> tensor<1x4x8x8xf32> {
  %0 = flash.score %s mod(%slopes : tensor<?xf32>) {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index, %m: tensor<?xf32>):
    %slope = tensor.extract %m[%h] : tensor<?xf32>
    %r = arith.addf %x, %slope : f32
    flash.yield %r : f32
  } : tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @mask_ids(%s: tensor<1x4x8x8xf32>, %ids: tensor<?xi32>) -> tensor<1x4x8x8xf32> {
  %0 = flash.mask %s <none> mod(%ids : tensor<?xi32>) {
  ^bb0(%i: index, %j: index, %t: tensor<?xi32>):
    %a = tensor.extract %t[%i] : tensor<?xi32>
    %b = tensor.extract %t[%j] : tensor<?xi32>
    %x = arith.index_cast %a : i32 to index
    %y = arith.index_cast %b : i32 to index
    %same = arith.cmpi eq, %x, %y : index
    flash.yield %same : i1
  } : tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}
