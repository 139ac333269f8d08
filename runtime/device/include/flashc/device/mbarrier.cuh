// Warp-specialization primitives (sm_90): mbarriers (shared-memory transaction barriers), named
// barriers, and the warpgroup register reallocation of producer/consumer kernels.
//
// An mbarrier is a 64-bit shared-memory object with an expected arrival count and a transaction
// count. A phase completes when all arrivals happened AND the bytes announced by expect_tx have
// landed (TMA's complete_tx). Waiters name the phase by its parity (0, 1, 0, ...): a ring of
// stages indexed by `it` waits on parity (it / stages) & 1. A freshly initialized barrier is in
// phase 0, and a wait for parity 1 returns at once (it refers to the "previous" phase), which lets
// a producer treat every empty-slot barrier as already released on its first pass.
// All barrier operands are 32-bit shared::cta addresses (smem_u32).
#pragma once
#include "flashc/device/smem.cuh"

namespace flashc {
namespace device {

// One thread initializes; then mbarrier_init_fence() and a block barrier before any use.
__device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
}
// Makes the initialization visible to the async proxy (TMA complete_tx) and to other threads
// (a CTA outside a cluster launch is a cluster of one, so the .cluster form is always valid).
__device__ __forceinline__ void mbarrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// Producer: one arrival and `bytes` more expected transaction bytes for the current phase. Issue it
// before (or together with) the TMA copies that complete on this barrier.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// Consumer: one arrival (release semantics: this thread's earlier reads of the slot happen before).
__device__ __forceinline__ void mbarrier_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// Non-blocking probe (acquire): has the phase with this parity completed?
__device__ __forceinline__ bool mbarrier_try_wait(unsigned bar, unsigned parity) {
  unsigned done;
  asm volatile(
      "{\n.reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
// A position in a ring of kStages slots: the slot and the phase parity its barriers are in. Carried from one
// step to the next (and across a persistent block's tiles), so that a steady-state loop advances it with a compare
// and a select instead of dividing a running counter.
template <int kStages>
struct RingPosition {
  int stage = 0;
  unsigned phase = 0;
  __device__ __forceinline__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

// Blocking wait (try_wait suspends the thread for a hardware time limit per probe; loop on it).
__device__ __forceinline__ void mbarrier_wait(unsigned bar, unsigned parity) {
  while (!mbarrier_try_wait(bar, parity)) {
  }
}

// Named barriers (ids 1..15; 0 is __syncthreads): `threads` counts every participant, syncing or
// arriving, a multiple of 32. sync blocks until the count is reached; arrive signals and goes on.
// Two warpgroups alternate with them (ping-pong): each syncs on its own id and arrives on the other's.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// The non-.aligned forms: the participating warps may reach the barrier from different instructions
// (warpgroups in different roles meeting on one id); bar.sync / bar.arrive promise the same one.
__device__ __forceinline__ void named_barrier_sync_unaligned(int id, int threads) {
  asm volatile("barrier.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive_unaligned(int id, int threads) {
  asm volatile("barrier.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Warpgroup register reallocation (every thread of the warpgroup executes the same one). The kernel
// launches with the launch-bounds count per thread (e.g. 168 for 384 threads); a producer warpgroup
// that only issues copies gives registers back, and the consumer warpgroups take them: the totals
// must fit the block's allocation (128 x 24 + 256 x 240 <= 384 x 168). Counts: multiples of 8, 24..256.
// Whether one producer warpgroup at `producer` and `consumers` warpgroups at `consumer` registers fit a block of
// (1 + consumers) warpgroups launched at 168 a thread (384 threads share the 65536): the ws kernels' plans check it.
__host__ __device__ constexpr bool warpgroup_budgets_fit(int producer, int consumer, int consumers = 2) {
  // At launch every thread of the (1 + consumers) warpgroups holds 65536 / threads registers, rounded down to 8.
  return producer % 8 == 0 && consumer % 8 == 0 && producer >= 24 && consumer <= 256 &&
         producer + consumers * consumer <= (1 + consumers) * (65536 / ((1 + consumers) * 128) / 8 * 8);
}

template <int kRegs>
__device__ __forceinline__ void warpgroup_reg_dealloc() {
  static_assert(kRegs % 8 == 0 && kRegs >= 24 && kRegs <= 256, "setmaxnreg: multiple of 8 in [24, 256]");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void warpgroup_reg_alloc() {
  static_assert(kRegs % 8 == 0 && kRegs >= 24 && kRegs <= 256, "setmaxnreg: multiple of 8 in [24, 256]");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

}  // namespace device
}  // namespace flashc
