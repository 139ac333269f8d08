// An attention forward split by key length (test/Numerics/Inputs/tuning-keys-le-200.txt: the two-warpgroup
// persistent plan up to 200 keys, the hand rule above): at 100 keys only the bounded kernel runs, at 300 only the
// other (#tile.run_if); each gives the float64 forward, and the backward reads either's out and lse.
// RUN: flash-run-tile %s --tuning-table=%S/Inputs/tuning-keys-le-200.txt --dynamic-size=100 --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %s --tuning-table=%S/Inputs/tuning-keys-le-200.txt --dynamic-size=300 --tolerance=2e-2 --backward | FileCheck %s
// CHECK: @attention forward result 0: {{.*}} ok
// CHECK-NOT: FAIL
func.func @attention(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4 : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
