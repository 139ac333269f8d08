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

// A head dim the device library's layouts cannot hold: named, not an NVRTC wall.
// RUN: not flashc %S/Inputs/head-dim-40.mlir -o %t.d40 2>&1 | FileCheck %s --check-prefix=D40
// D40: head-dim-40.mlir:2:14: error: CUDA emitter: a 16-bit shared tile of 40 columns is not supported
// A head dim whose tiles do not fit shared memory: by how many bytes.
// RUN: not flashc %S/Inputs/head-dim-512.mlir -o %t.d512 2>&1 | FileCheck %s --check-prefix=D512
// D512: error: flash-plan-memory: {{.*}} it overflows by {{[0-9]+}} bytes
// A static batch beyond CUDA's grid z limit could never launch: named at the spec line
// (was a bundle that failed at every launch).
// RUN: not flashc %S/Inputs/static-batch-70000.mlir --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=BATCH
// BATCH: static-batch-70000.mlir:2:14: error: bundle: kernel @attention_attention_{{.*}} needs 70000 blocks along grid z (from a static size of the spec); CUDA allows at most 65535
// Nothing fused: nothing to compile, said so.
// RUN: not flashc %S/Inputs/unfused.mlir -o %t.unf 2>&1 | FileCheck %s --check-prefix=UNFUSED
// UNFUSED: error: nothing to compile into kernels: after fusion the spec holds no flash.attention or flash.ffn
// An attention that does not fuse says why, before the same error.
// RUN: not flashc %S/Inputs/kt-argument-attention.mlir -o %t.kt 2>&1 | FileCheck %s --check-prefix=NEARMISS
// NEARMISS: kt-argument-attention.mlir:5:8: warning: softmax(...)·V not fused into flash.attention: K enters as Kᵀ [B, H, D, Sk]: write the scores as flash.matmul %q, %k transpose_b with K [B, H, Sk, D]
// NEARMISS: error: nothing to compile into kernels
// A wgmma matmul the device library has no form for (both operands transposed): named, not miscompiled.
// RUN: not flashc %S/Inputs/wgmma-both-transposed.mlir --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=WGMMA
// WGMMA: wgmma-both-transposed.mlir:11:8: error: strategy wgmma_sm90 supports C += A·B, A·Bᵀ and Aᵀ·B with A, B shared and C += A·B with A in registers
// The ws strategy on a kernel that is not an attention forward: named, not printed as one.
// RUN: not flashc %S/Inputs/ws-strategy-not-forward.mlir --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=WS
// WS: ws-strategy-not-forward.mlir:3:1: error: CUDA emitter: @not_forward has strategy wgmma_ws_sm90, the warp-specialised attention forward, but it is not an attention forward (#tile.attention<role = attention_forward>)
