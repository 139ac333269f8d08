// The project's one NVRTC wrapper: CUDA C++ -> cubin for one architecture.
// NVRTC is loaded at run time (dlopen), so an application that only ever loads
// cubins runs without the CUDA toolkit installed.
#pragma once

#include "flashc/runtime/Result.h"

#include <string>
#include <vector>

namespace flashc::rt {

struct CompileRequest {
  std::string source;
  std::string sourceName = "kernels.cu"; // appears in NVRTC's messages: kernels.cu(12): error ...
  std::string arch;                      // "sm_90a", "sm_80", ...
  std::vector<std::string> options;      // user options (the manifest's nvrtc-options)
  bool addDefaultIncludes = true;        // -I CUDA include, CUDA include/cccl, device library
  std::string deviceIncludeDir;          // empty: see deviceIncludeDir()
};

struct CompileOutput {
  std::vector<char> cubin;
  std::string ptx; // the PTX NVRTC generated on the way (for --emit=ptx)
  std::string log; // warnings and, with --ptxas-options=-v, the resource report
};

/// The exact option list handed to NVRTC for `request` (user options, include
/// paths, --gpu-architecture). Part of the kernel cache key.
std::vector<std::string> effectiveNvrtcOptions(const CompileRequest &request);

/// Compiles to a cubin. A compile error returns ErrorCode::CompileFailed with
/// NVRTC's log (file(line): error ...) in the message.
Result<CompileOutput> compileCuda(const CompileRequest &request);
Result<CompileOutput> compileCuda(const std::string &source, const std::string &arch,
                                  const std::vector<std::string> &options);

/// "major.minor" of the loaded NVRTC, or an error if NVRTC cannot be loaded.
Result<std::string> nvrtcVersion();

/// CUDA headers: $CUDA_HOME/include, $CUDA_PATH/include, the toolkit found at
/// build time, /usr/local/cuda/include (first that exists).
std::string cudaIncludeDir();

/// The device library's include dir: `override`, else $FLASHC_DEVICE_INCLUDE,
/// else the installed copy next to the runtime library (<prefix>/include),
/// else the source tree's runtime/device/include.
std::string deviceIncludeDir(const std::string &override = "");

} // namespace flashc::rt
