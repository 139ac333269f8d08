// A modifier's tensor read at one of its index arguments itself must hold that index's range (B, Hq, Sq or Sk), or
// the kernels would read the missing entries as 0: the compiled programs check it before their first launch
// (tile.require_extent), and the CPU executor runs that check with the runtime's message; the float64 reference
// (the flash graph evaluator) refuses such tensors too, in its own terms. A long enough tensor runs and matches.
//
// The compiled programs on the CPU executor (all dynamic sizes --dynamic-size: the ids and the slopes here):
// RUN: flashc %s --emit=tile -o %t.tile
// RUN: not flash-run-tile %t.tile --run-program=documents --dynamic-size=40 2>&1 | FileCheck %s --check-prefix=SHORT
// SHORT: flash-run-tile: @documents: {{.*}} 'tile.require_extent': argument 'mask_t0' dim 0 is 40, but the mask modifier reads it at the query index, which ranges over Sq = 70
// RUN: not flash-run-tile %t.tile --run-program=documents_backward --dynamic-size=69 2>&1 | FileCheck %s --check-prefix=SHORT-BWD
// SHORT-BWD: flash-run-tile: @documents_backward: {{.*}} 'tile.require_extent': argument 'mask_t0' dim 0 is 69, but the mask modifier reads it at the query index, which ranges over Sq = 70
// RUN: flash-run-tile %t.tile --run-program=documents --dynamic-size=70 | FileCheck %s --check-prefix=LONG
// LONG: @documents: ran {{[0-9]+}} blocks
// RUN: not flash-run-tile %t.tile --run-program=slopes --dynamic-size=3 2>&1 | FileCheck %s --check-prefix=SLOPES
// SLOPES: flash-run-tile: @slopes: {{.*}} 'tile.require_extent': argument 'score_t0' dim 0 is 3, but the score modifier reads it at the query head index, which ranges over Hq = 4
// RUN: flash-run-tile %t.tile --run-program=slopes --dynamic-size=4 | FileCheck %s --check-prefix=SLOPES-OK
// SLOPES-OK: @slopes: ran {{[0-9]+}} blocks
//
// Against float64 (the reference evaluates the graph first):
// RUN: not flash-run-tile %s --dynamic-size=40 2>&1 | FileCheck %s --check-prefix=REF
// REF: error: at run time: reads mask_mod operand #0 [40] at the query index q along dimension 0: it holds 40 entries, the query index q ranges over 70
// RUN: not flash-eval %s --dynamic-size=3 2>&1 | FileCheck %s --check-prefix=EVAL
// EVAL: error: at run time: reads mask_mod operand #0 [3] at the query index q along dimension 0: it holds 3 entries, the query index q ranges over 70
// The graph spelling's modifiers alike (flash.score, flash.mask):
// RUN: not flash-eval %S/Inputs/graph-short-table.mlir --split-input-file --dynamic-size=3 2>&1 | FileCheck %s --check-prefix=GRAPH
// GRAPH: error: at run time: reads mod operand #0 [3] at the query head h along dimension 0: it holds 3 entries, the query head h ranges over 4
// GRAPH: error: at run time: reads mod operand #0 [3] at the query index q along dimension 0: it holds 3 entries, the query index q ranges over 8
// RUN: flash-eval %S/Inputs/graph-short-table.mlir --split-input-file --dynamic-size=8 | FileCheck %s --check-prefix=GRAPH-OK
// GRAPH-OK: @score_slopes result #0 [1, 4, 8, 8]
// GRAPH-OK: @mask_ids result #0 [1, 4, 8, 8]
// RUN: flash-run-tile %s --backward --dynamic-size=70 --tolerance=1e-5 | FileCheck %s --check-prefix=NUM
// NUM-NOT: FAIL
// NUM: @documents forward result 0: {{.*}} ok
// NUM: @documents backward d_k: {{.*}} ok
// NUM: @slopes forward result 0: {{.*}} ok
// NUM: @slopes backward d_q: {{.*}} ok

// Causal within documents: ids[q] == ids[k].
func.func @documents(%q: tensor<1x2x70x16xf32>, %k: tensor<1x2x70x16xf32>, %v: tensor<1x2x70x16xf32>,
                     %doc: tensor<?xi32>) -> tensor<1x2x70x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<causal> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %ids: tensor<?xi32>):
    %a = tensor.extract %ids[%i] : tensor<?xi32>
    %b = tensor.extract %ids[%j] : tensor<?xi32>
    %x = arith.index_cast %a : i32 to index
    %y = arith.index_cast %b : i32 to index
    %same = arith.cmpi eq, %x, %y : index
    flash.yield %same : i1
  } : (tensor<1x2x70x16xf32>, tensor<1x2x70x16xf32>, tensor<1x2x70x16xf32>, tensor<?xi32>)
    -> (tensor<1x2x70x16xf32>, tensor<1x2x70xf32>)
  return %out : tensor<1x2x70x16xf32>
}

// ALiBi over 4 query heads: slopes[h] · (k - q).
func.func @slopes(%q: tensor<1x4x40x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>,
                  %slopes: tensor<?xf32>) -> tensor<1x4x40x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<causal> num_kv_heads = 2
      score_mod(%slopes) {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %m: tensor<?xf32>):
    %slope = tensor.extract %m[%h] : tensor<?xf32>
    %d = arith.subi %j, %i : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %bias = arith.mulf %slope, %df : f32
    %r = arith.addf %s, %bias : f32
    flash.yield %r : f32
  } : (tensor<1x4x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>, tensor<?xf32>)
    -> (tensor<1x4x40x16xf32>, tensor<1x4x40xf32>)
  return %out : tensor<1x4x40x16xf32>
}
