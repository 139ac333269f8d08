// Thread block clusters (sm_90): a block's rank in its cluster, the cluster-wide barrier, and mbarriers of other
// blocks of the cluster (distributed shared memory). A block launched without a cluster is a cluster of one.
#pragma once

namespace flashc {
namespace device {

__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned cluster_blocks() {
  unsigned n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(n));
  return n;
}
// Every thread of every block of the cluster (none exited) meets here; what each did before is visible after.
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// One arrival on the mbarrier at this block's shared address `bar`, in the cluster's block `rank`, releasing this
// thread's earlier writes at cluster scope.
__device__ __forceinline__ void mbarrier_arrive_cluster(unsigned bar, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(bar), "r"(rank));
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}
// Until the phase with this parity of this block's mbarrier `bar` completes, acquiring at cluster scope what the
// arrivals released.
__device__ __forceinline__ void mbarrier_wait_cluster(unsigned bar, unsigned parity) {
  unsigned done = 0;
  while (!done) {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, "
        "p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  }
}

}  // namespace device
}  // namespace flashc
