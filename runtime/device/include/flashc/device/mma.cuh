// Tensor-core primitives for sm_80+ (used on Hopper through mma.sync):
// mma.sync m16n8k16 with f32 accumulators, ldmatrix x4 (and .trans).
//
// Fragment layouts (g = lane / 4, t = lane % 4), 32-bit registers holding 2 x 16-bit:
//   A 16x16: a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..), a3 = (g+8, 2t+8..)
//   B 16x8 : b0 = (k=2t..2t+1, n=g), b1 = (k=2t+8.., n=g)
//   C 16x8 : c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..2t+1)
// Two adjacent C tiles (n 0-7, 8-15) packed to 16-bit are exactly one A fragment (k 0-15):
// that is why P = softmax(S) can feed P*V straight from registers.
#pragma once
#include "flashc/device/types.cuh"

namespace flashc {
namespace device {

template <class T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                          unsigned b1) {
  if constexpr (ElemTraits<T>::kIsBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Four 8x8 matrices; lane l supplies the row address of matrix l/8, row l%8.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}
// The inverse of ldmatrix_x4 (sm_90+): lane l gives the address of row l % 8 of matrix l / 8; register j holds the
// calling thread's pair of matrix j (row lane / 4, columns 2 (lane % 4), +1: an m16n8 C fragment's order).
__device__ __forceinline__ void stmatrix_x4(unsigned smem_addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};\n" ::"r"(smem_addr), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}

}  // namespace device
}  // namespace flashc
