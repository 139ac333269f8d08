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

// A head dim the device library's copies cannot hold (40, 72, 80 are padded to whole swizzle rows;
// 36 would end a row inside a 16-byte chunk): named with the supported ones before any kernel is
// built (was an emitter error on a shared tile, after --emit=tile had passed).
// RUN: not flashc %S/Inputs/head-dim-36.mlir -o %t.d36 2>&1 | FileCheck %s --check-prefix=D36
// D36: head-dim-36.mlir:2:14: error: flash-generate-backward: head dim D = 36 (query and key) is not supported by the kernels: 'bf16' attention takes head dims that are multiples of 8 from 8 to 256
// A head dim whose tiles do not fit shared memory: refused up front (was an overflow reported on
// a backward kernel the spec never names).
// RUN: not flashc %S/Inputs/head-dim-512.mlir -o %t.d512 2>&1 | FileCheck %s --check-prefix=D512
// D512: head-dim-512.mlir:2:14: error: flash-generate-backward: head dim D = 512 (query and key) is not supported by the kernels
// D512-NOT: flash-plan-memory
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
// Tiles the device library cannot hold unpadded: named at the op with what to do (flash-tile pads
// head dims and the fused FFN's d_out to whole swizzle rows). A column limit that ends inside a
// 16-byte chunk is no error: the copies are element-exact (cuda-ffn-any-width.mlir).
// RUN: not flashc %S/Inputs/unpadded-shared-tile.mlir --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNPADDED
// UNPADDED: unpadded-shared-tile.mlir:12:10: error: CUDA emitter: a 16-bit shared tile of 80 columns is not supported (rows must be multiples of 64 bytes: pad the tile to 96 columns and load it with limit 80
// Tile ops whose operand layouts the device library has no call for (the CPU executor runs
// them): named at the op, not CUDA that NVRTC rejects.
// RUN: not flashc %S/Inputs/f32-shared-store.mlir --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=F32-STORE
// F32-STORE: f32-shared-store.mlir:13:5: error: CUDA emitter: the device library has no 'tile.store' of a shared f32 tile; it supports stores of register tiles and of 16-bit mma_sync_sm80 shared tiles
// RUN: not flashc %S/Inputs/convert-16-bit.mlir --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=CVT16
// CVT16: convert-16-bit.mlir:11:10: error: CUDA emitter: the device library has no 'tile.convert' of a register bf16 tile to f16; it supports 16-bit <-> f32 conversions
// RUN: not flashc %S/Inputs/register-tile-bands.mlir --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=BANDS
// BANDS: register-tile-bands.mlir:11:10: error: CUDA emitter: a register tile of 16 rows does not split into 16-row bands over 4 warps (needs a multiple of 64)
// A wgmma matmul the device library has no form for (both operands transposed): named, not miscompiled.
// RUN: not flashc %S/Inputs/wgmma-both-transposed.mlir --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=WGMMA
// WGMMA: wgmma-both-transposed.mlir:11:8: error: strategy wgmma_sm90 supports C += A·B, A·Bᵀ and Aᵀ·B with A, B shared and C += A·B with A in registers
// The emitter folds scale·log2(e) into one f32 constant: tile IR whose softmax scale leaves
// the f32 range after the fold is refused (was a literal NVRTC rejects as out of range).
// flash.attention's verifier bounds the scale of specs; this is tile IR edited by hand.
// RUN: flashc %S/Inputs/attention-d64.mlir --emit=tile -o %t.tile.mlir
// RUN: sed 's/scale 1.250000e-01/scale 3.000000e+38/g' %t.tile.mlir | not flashc - --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=SCALE-LOG2
// The tile verifiers (TileLimits.h) refuse such a scale before the emitter's own check runs.
// SCALE-LOG2: error: 'tile.recompute_probs' op scale must be finite and at most 1.000000e+30 in magnitude, got 3.000000e+38
// The ws strategy on a kernel that is not an attention forward: named by flash-warp-specialize (which
// flashc runs on tile IR too) before anything is printed.
// RUN: not flashc %S/Inputs/ws-strategy-not-forward.mlir --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=WS
// A persistent grid order on a kernel that takes one tile a block (only the ws attention forward loops): the
// kernel verifier refuses it.
// RUN: not flashc %S/Inputs/persistent-not-ws.mlir --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=PERSISTENT
// PERSISTENT: persistent-not-ws.mlir:4:3: error: 'tile.kernel' op has a persistent grid order, which only a warp-specialised attention forward or GEMM (strategy wgmma_ws_sm90, #tile.attention<role = attention_forward>, #tile.gemm<role = gemm / gated_gemm / gemm_split_k> or a #tile.moe GEMM role) takes; other kernels take one tile a block
// WS: ws-strategy-not-forward.mlir:3:1: error: flash-warp-specialize: @not_forward is planned wgmma_ws_sm90 but is none of an attention forward, a fused FFN, a plain or gated GEMM or a mixture of experts' GEMM
// A packed-sequences kernel whose signature is not its role's: named, not read past its arguments.
// RUN: not flashc %S/Inputs/varlen-signature.mlir --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=VARLEN
// VARLEN: varlen-signature.mlir:3:1: error: CUDA emitter: @varlen_fwd (varlen_forward) takes q, k, v, cu_seqlens_q, cu_seqlens_k, tile_map, status, out, lse of ranks 3, 3, 3, 1, 1, 2, 1, 3, 2
