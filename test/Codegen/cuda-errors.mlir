// f32 attention tiles run on the CPU executor only: mma.sync and wgmma take
// 16-bit operands, so the emitter says so instead of printing wrong code.
// RUN: not flashc %s --emit=cuda -o /dev/null 2>&1 | FileCheck %s
// CHECK: cuda-errors.mlir:[[@LINE+4]]:14: error: CUDA strategy mma_sync_sm80 needs bf16/f16 matmul operands

func.func @attention(%q: tensor<?x4x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x64xf32>)
    -> (tensor<?x4x?x64xf32>, tensor<?x4x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>) -> (tensor<?x4x?x64xf32>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x64xf32>, tensor<?x4x?xf32>
}
