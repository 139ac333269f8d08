// The attention backward's dQ hand-off: the postprocess of a (batch, kv head) may convert its dQ as soon as every
// main-kernel block of that head has added its part, instead of after the whole main kernel.
//
// Why: the main kernel is compute-bound and its last wave leaves SMs idle (its tail); the postprocess is
// memory-bound (dq_accum read at the memory's rate). Launched programmatically (grid_dependency.cuh) behind a main
// kernel whose blocks call launch_dependents() first, the postprocess's blocks take the SMs the tail frees and
// convert the heads that are done while the last ones finish.
//
// State: dq_ready [B, Hkv, 2] i32, element 0 the count of arrivals, element 1 the ready flag.
// - the preprocess clears it (count 0; flag set at once where the main kernel has no block: Sk = 0);
// - each main-kernel block's consumer warpgroups arrive once each, after their dQ reductions have completed and
//   their dK / dV stores are done (so that a finished postprocess also means a finished main kernel), the arrival
//   that completes the count releases the flag;
// - the postprocess's blocks wait for their kv head's flag (acquire) before reading dq_accum.
// Without the state (nullptr) each function does nothing: the kernels then run in plain stream order.
#pragma once
#include "flashc/device/mbarrier.cuh"
#include "flashc/device/tensor.cuh"
#include "flashc/device/tma.cuh"

namespace flashc {
namespace device {

namespace detail {
__device__ __forceinline__ int* dq_ready_at(const TensorArg& ready, int batch, int kv_head) {
  return static_cast<int*>(ready.data) + batch * ready.stride[0] + kv_head * ready.stride[1];
}
}  // namespace detail

// Preprocess (one thread of one block a kv head): count 0, flag = (the main kernel has no block for it).
__device__ __forceinline__ void dq_ready_clear(const TensorArg& ready, int batch, int kv_head, bool no_main_blocks) {
  int* at = detail::dq_ready_at(ready, batch, kv_head);
  at[0] = 0;
  at[ready.stride[2]] = no_main_blocks ? 1 : 0;
}

// Main kernel (one thread, after the arrivals it stands for have made their writes visible, see
// dq_ready_warpgroup_done): add `arrivals`; the one that reaches `expected` releases the flag.
__device__ __forceinline__ void dq_ready_arrive(const TensorArg& ready, int batch, int kv_head, int arrivals,
                                                int expected) {
  int* at = detail::dq_ready_at(ready, batch, kv_head);
  int before;
  asm volatile("atom.add.acq_rel.gpu.global.s32 %0, [%1], %2;\n" : "=r"(before) : "l"(at), "r"(arrivals) : "memory");
  if (before + arrivals == expected)
    asm volatile("st.release.gpu.global.s32 [%0], %1;\n" ::"l"(at + ready.stride[2]), "r"(1) : "memory");
}

// Main kernel, every thread of a consumer warpgroup once its dQ reductions are issued and its dK / dV stored: the
// warpgroup's writes made visible (the bulk reductions of its issuing thread completed, not only read, and ordered
// before generic accesses; every thread's stores fenced), then its issuing thread arrives for it. barrier: a named
// barrier id of the warpgroup's own, free at this point; expected: the arrivals of a kv head (its blocks x
// warpgroups).
template <bool kBulkReductions>
__device__ __forceinline__ void dq_ready_warpgroup_done(const TensorArg& ready, int batch, int kv_head, int barrier,
                                                        int expected) {
  const bool issuer = threadIdx.x % 128 == 0;
  if (kBulkReductions && issuer) {
    tma_wait_group<0, false>();
    asm volatile("fence.proxy.async.global;\n" ::: "memory");
  }
  __threadfence();
  named_barrier_sync_unaligned(barrier, 128);
  if (issuer) dq_ready_arrive(ready, batch, kv_head, 1, expected);
}

// Postprocess (every thread of the block): returns once the kv head's flag is set, the main kernel's writes to that
// head's dq_accum visible (one thread acquires, then the block's barrier).
__device__ __forceinline__ void dq_ready_wait(const TensorArg& ready, int batch, int kv_head) {
  if (threadIdx.x == 0) {
    const int* flag = detail::dq_ready_at(ready, batch, kv_head) + ready.stride[2];
    for (unsigned backoff = 32;; backoff = backoff < 1024 ? 2 * backoff : backoff) {
      int set;
      asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(set) : "l"(flag) : "memory");
      if (set) break;
      __nanosleep(backoff);
    }
  }
  __syncthreads();
}

}  // namespace device
}  // namespace flashc
