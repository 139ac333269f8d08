// Compiles several CUDA translation units at once: one NVRTC program per
// unit on a small pool of threads, each through the kernel cache. flashc
// compiles a bundle's kernels this way (one unit per kernel, so each kernel is
// cached on its own); NVRTC programs are independent, so the units' cubins do
// not depend on the thread count.
#pragma once

#include "flashc/runtime/KernelCache.h"

#include <functional>
#include <vector>

namespace flashc::rt {

/// Threads for a batch: $FLASHC_COMPILE_JOBS when it is a positive integer,
/// else the number of cores (at least 1).
int defaultCompileJobs();

struct ParallelCompileOptions {
  int jobs = 0;                        // threads; 0: defaultCompileJobs()
  const KernelCache *cache = nullptr; // null: no disk cache (the memory cache stays)
  /// Called once per unit as it finishes (from a worker thread, one call at a
  /// time): its index, the result, and the seconds it took (compile or cache lookup).
  std::function<void(size_t, const Result<CachedCompile> &, double)> onDone;
};

/// Compiles every request; results in request order. Units start in request
/// order (put the slowest first); every unit is compiled even when one fails.
std::vector<Result<CachedCompile>> compileCudaParallel(const std::vector<CompileRequest> &requests,
                                                       const ParallelCompileOptions &options = {});

} // namespace flashc::rt
