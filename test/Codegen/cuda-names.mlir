// The kernel builders name their values through locations (NameLoc); the CUDA
// emitter names the C++ variables after them. The names survive printing the
// tile IR with its locations and reading it back; tile IR without them gets
// the emitter's own names.
// RUN: flash-opt %s --flash-tile --flash-plan-memory --mlir-print-debuginfo -o %t.tile.mlir
// RUN: FileCheck %s --check-prefix=TILE < %t.tile.mlir
// RUN: flashc %t.tile.mlir --emit=cuda -o - | FileCheck %s
// RUN: flash-opt %s --flash-tile --flash-plan-memory -o %t.bare.mlir
// RUN: flashc %t.bare.mlir --emit=cuda -o - | FileCheck %s --check-prefix=BARE

func.func @attention(%q: tensor<?x4x?x32xbf16>, %k: tensor<?x1x?x32xbf16>, %v: tensor<?x1x?x32xbf16>) -> (tensor<?x4x?x32xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.17677669 mask = #flash.mask<causal> num_kv_heads = 1 : (tensor<?x4x?x32xbf16>, tensor<?x1x?x32xbf16>, tensor<?x1x?x32xbf16>) -> (tensor<?x4x?x32xbf16>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x32xbf16>, tensor<?x4x?xf32>
}

// TILE: loc("row0"
// TILE: [[IV:#loc[0-9]+]] = loc("k_block"
// TILE-NEXT: [[ACC:#loc[0-9]+]] = loc("acc"
// TILE-NEXT: [[M:#loc[0-9]+]] = loc("m"
// TILE-NEXT: [[L:#loc[0-9]+]] = loc("l"
// TILE: loc(fused[[[IV]], [[ACC]], [[M]], [[L]]])

// CHECK-LABEL: flashc_attention_attention_fwd(
// CHECK: const int q_block = static_cast<int>(gridDim.x - 1 - blockIdx.x);
// CHECK-NEXT: const int head = static_cast<int>(blockIdx.y);
// CHECK-NEXT: const int batch = static_cast<int>(blockIdx.z);
// CHECK: const int kv_head = (head / group);
// CHECK-NEXT: const int row0 = (q_block * {{[0-9]+}});
// CHECK: for (int k_block = 0, stage = 0; k_block < k_block_end;
// CHECK: const int col0 = (k_block * {{[0-9]+}});
// CHECK: RegRowVec<{{[0-9]+}}, kWarps> m_new = row_max(s_masked, m);

// BARE-LABEL: flashc_attention_attention_fwd(
// BARE: const int block_x = static_cast<int>(gridDim.x - 1 - blockIdx.x);
// BARE: for (int n = 0, stage = 0;
