// The forward's wide key blocks under a causal mask (Inputs/tuning-wide-keys.txt: 192 keys a block): 128-row query
// blocks end inside a 192-key block, so the diagonal block is masked element by element and the blocks past it are
// skipped; Sq = Sk = 500 and 70 (one block), and the backward reading that forward's out and lse.
// RUN: flashc %s --emit=tile --tuning-table=%S/Inputs/tuning-wide-keys.txt -o - | FileCheck %s --check-prefix=TILE
// RUN: flash-run-tile %s --tuning-table=%S/Inputs/tuning-wide-keys.txt --dynamic-size=500 --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %s --tuning-table=%S/Inputs/tuning-wide-keys.txt --dynamic-size=70 --tolerance=2e-2 --backward | FileCheck %s
// TILE: tile.kernel @attention_attention_fwd
// TILE-SAME: block_n = 192 : i64
// CHECK: @attention forward result 0: {{.*}} ok
// CHECK-NOT: FAIL
func.func @attention(%q: tensor<1x2x?x80xbf16>, %k: tensor<1x2x?x80xbf16>, %v: tensor<1x2x?x80xbf16>) -> (tensor<1x2x?x80xbf16>, tensor<1x2x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.1118034 mask = #flash.mask<causal> num_kv_heads = 2 : (tensor<1x2x?x80xbf16>, tensor<1x2x?x80xbf16>, tensor<1x2x?x80xbf16>) -> (tensor<1x2x?x80xbf16>, tensor<1x2x?xf32>)
  return %o, %lse : tensor<1x2x?x80xbf16>, tensor<1x2x?xf32>
}
