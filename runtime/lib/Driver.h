// The CUDA driver API, loaded at run time: dlopen("libcuda.so.1") and
// cuGetProcAddress. Nothing links against libcuda, so every binary starts and
// CPU tests run on machines without a driver. cuda.h is used for types only.
#pragma once

#include "flashc/runtime/Result.h"

#include <cuda.h>

#include <string>

namespace flashc::rt {

struct Driver {
#define FLASHC_DRIVER_FUNCTIONS(X)                                                                 \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetAttribute)       \
  X(cuDeviceGetName) X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuCtxGetDevice)                       \
  X(cuDevicePrimaryCtxRetain) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)         \
  X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuLaunchKernel) X(cuPointerGetAttribute)           \
  X(cuMemAllocAsync) X(cuMemFreeAsync) X(cuMemsetD8Async) X(cuMemAlloc) X(cuMemFree)               \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD8) X(cuCtxSynchronize) X(cuStreamSynchronize)         \
  X(cuGetErrorName) X(cuGetErrorString) X(cuTensorMapEncodeTiled) X(cuMemPoolCreate)              \
  X(cuMemPoolSetAttribute) X(cuMemPoolDestroy) X(cuMemAllocFromPoolAsync) X(cuStreamIsCapturing)           \
  X(cuMemcpyDtoHAsync) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuEventCreate) X(cuEventRecord)          \
  X(cuEventQuery) X(cuEventSynchronize) X(cuEventDestroy) X(cuLaunchKernelEx) X(cuCtxGetId)
#define FLASHC_DECLARE(name) decltype(&::name) name = nullptr;
  FLASHC_DRIVER_FUNCTIONS(FLASHC_DECLARE)
#undef FLASHC_DECLARE

  /// The loaded driver, or the reason it is unusable: "no CUDA driver
  /// (libcuda.so.1 not found)" (NoDriver) or "no CUDA device" (NoDevice).
  static Result<const Driver *> get();

  /// "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (invalid argument)".
  Error error(const char *what, CUresult rc) const;
};

/// Makes a context current if none is (the primary context of device 0, as
/// the CUDA runtime would) and returns the current device.
Result<CUdevice> currentDevice(const Driver &d);

/// A context as caches of per-context state know it: its ID (cuCtxGetId) is unique for the process's lifetime, where
/// its handle is not (a reset primary context keeps its handle; a context destroyed and another created may get the
/// same address). They key by the ID and keep the handle to ask whether the context still lives.
struct ContextIdentity {
  CUcontext handle = nullptr;
  unsigned long long id = 0;
};
/// The current context (currentDevice makes one current if none is).
Result<ContextIdentity> currentContext(const Driver &d);
/// Whether `c` still lives: cuCtxGetId on its handle gives its ID (or fails with another error than a destroyed or
/// invalid context: a sticky fault of an earlier launch leaves it alive). Relies on the driver answering for a
/// destroyed context's handle with an error or another context's ID, which cuda.h lists (CONTEXT_IS_DESTROYED,
/// INVALID_CONTEXT) but does not promise. State of a dead context is then left alone: its own handles (modules,
/// events, pinned memory) went with it, and the driver may have given them to others since.
bool contextAlive(const Driver &d, const ContextIdentity &c);

} // namespace flashc::rt
