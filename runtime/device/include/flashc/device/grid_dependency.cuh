// Programmatic dependent launch (sm_90): a kernel the manifest marks `launch programmatic` is launched with
// programmatic stream serialization, so its blocks may start (and run their prologue: barriers, descriptor
// prefetches) while the kernel before it in the program finishes. It calls grid_dependency_wait() before it touches
// memory that kernel writes; the wait returns once that kernel has completed and its writes are visible. A kernel
// calls launch_dependents() where the kernel after it may start (by default: when its blocks exit). Both are no-ops
// in a kernel launched without the attribute.
#pragma once

namespace flashc {
namespace device {

__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

}  // namespace device
}  // namespace flashc
