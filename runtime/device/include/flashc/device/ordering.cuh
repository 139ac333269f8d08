// Inter-block ordering for deterministic accumulation (the deterministic dQ of the backward):
// blocks that add into the same rows take turns on a per-row-block int counter in global memory.
// A block waits until the counter equals its rank, adds, then passes the turn on. Waits only
// ever target blocks with a smaller rank, which the hardware dispatched earlier: no deadlock.
#pragma once
#include "flashc/device/types.cuh"

namespace flashc {
namespace device {

// Whole block: returns once *counter == turn (thread 0 spins with acquire loads).
__device__ __forceinline__ void wait_turn(const int* counter, int turn) {
  if (threadIdx.x == 0) {
    int seen;
    do {
      asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(seen) : "l"(counter) : "memory");
    } while (seen != turn);
  }
  __syncthreads();
}

// Whole block: after every thread's global writes/reductions, hand the turn to the next rank.
__device__ __forceinline__ void pass_turn(int* counter) {
  __threadfence();  // this thread's reductions are performed before the release below
  __syncthreads();
  if (threadIdx.x == 0) asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(counter) : "memory");
}

}  // namespace device
}  // namespace flashc
