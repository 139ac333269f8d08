// The forward's wide key blocks (Inputs/tuning-wide-keys.txt: 192 keys a block, a tuning point of unmasked forwards):
// the tile program over 500 keys (blocks of 192, 192 and 116, the last one masked past the keys) and 70 (one block,
// mostly padding) gives the float64 forward, GQA 2:1 at D = 128; the tile IR names the entry and its block.
// RUN: flashc %s --emit=tile --tuning-table=%S/Inputs/tuning-wide-keys.txt -o - | FileCheck %s --check-prefix=TILE
// RUN: flash-run-tile %s --tuning-table=%S/Inputs/tuning-wide-keys.txt --dynamic-size=500 --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %s --tuning-table=%S/Inputs/tuning-wide-keys.txt --dynamic-size=70 --tolerance=2e-2 --backward | FileCheck %s
// TILE: tile.kernel @attention_attention_fwd
// TILE-SAME: block_n = 192 : i64
// TILE-SAME: tuning = {entry = "{{.*}}tuning-wide-keys.txt:2"
// CHECK: @attention forward result 0: {{.*}} ok
// CHECK-NOT: FAIL
func.func @attention(%q: tensor<1x2x?x128xbf16>, %k: tensor<1x1x?x128xbf16>, %v: tensor<1x1x?x128xbf16>) -> (tensor<1x2x?x128xbf16>, tensor<1x2x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.088388346 mask = #flash.mask<none> num_kv_heads = 1 : (tensor<1x2x?x128xbf16>, tensor<1x1x?x128xbf16>, tensor<1x1x?x128xbf16>) -> (tensor<1x2x?x128xbf16>, tensor<1x2x?xf32>)
  return %o, %lse : tensor<1x2x?x128xbf16>, tensor<1x2x?xf32>
}
