// The forward's wide key blocks (Inputs/tuning-wide-keys.txt: 192 keys a block) under a mask modifier of indices
// alone, prefix-LM: keys k < 100 seen by every query, the rest causally, (k < 100) | (k <= q). Its key blocks are
// classified by the modifier's interval analysis (the first 192-key block holds the prefix and the diagonal of the
// first query blocks), and a partial block is masked element by element; Sq = Sk = 500 and 70 (one block), and the
// backward reading that forward's out and lse.
// RUN: flashc %s --emit=tile --tuning-table=%S/Inputs/tuning-wide-keys.txt -o - | FileCheck %s --check-prefix=TILE
// RUN: flash-run-tile %s --tuning-table=%S/Inputs/tuning-wide-keys.txt --dynamic-size=500 --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %s --tuning-table=%S/Inputs/tuning-wide-keys.txt --dynamic-size=70 --tolerance=2e-2 --backward | FileCheck %s
// TILE: tile.kernel @attention_attention_fwd
// TILE-SAME: block_n = 192 : i64
// TILE-SAME: key = "sm_90a attention_forward bf16 d128 none+indexmod"
// CHECK: @attention forward result 0: {{.*}} ok
// CHECK-NOT: FAIL
func.func @attention(%q: tensor<1x2x?x128xbf16>, %k: tensor<1x2x?x128xbf16>, %v: tensor<1x2x?x128xbf16>) -> (tensor<1x2x?x128xbf16>, tensor<1x2x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.08838834764831845 mask = #flash.mask<none> num_kv_heads = 2 mask_mod {
  ^bb0(%qi: index, %ki: index):
    %prefix = arith.constant 100 : index
    %in_prefix = arith.cmpi slt, %ki, %prefix : index   // k < 100
    %seen = arith.cmpi sle, %ki, %qi : index            // k <= q
    %visible = arith.ori %in_prefix, %seen : i1
    flash.yield %visible : i1
  } : (tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>) -> (tensor<1x2x?x128xbf16>, tensor<1x2x?xf32>)
  return %o, %lse : tensor<1x2x?x128xbf16>, tensor<1x2x?xf32>
}
