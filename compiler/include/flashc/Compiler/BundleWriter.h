// Writes a bundle directory (docs/bundle.md): manifest.flashc, the CUDA source
// and optional cubins compiled with the runtime's NVRTC wrapper. Plain C++ (no
// MLIR); links flashc_runtime (for compileCuda) and flashc_bundle.
#pragma once

#include "flashc/runtime/Manifest.h"
#include "flashc/runtime/Result.h"

#include <string>
#include <vector>

namespace flashc {

struct BundleWriteOptions {
  /// Architectures to compile kernels.cu for and ship as kernels.<arch>.cubin
  /// (e.g. {"sm_90a"}). Empty: source only, the runtime compiles at load.
  std::vector<std::string> cubinArchs;
  /// Also compile (and discard) for every manifest `arch` that gets no cubin,
  /// so a bundle that does not compile is never written.
  bool checkAllArchs = false;
  /// Device library include dir for NVRTC (empty: the runtime's lookup).
  std::string deviceIncludeDir;
  /// Replace an existing bundle directory (one holding manifest.flashc).
  bool overwrite = true;
};

/// Validates `manifest`, compiles the requested cubins (an NVRTC error returns
/// ErrorCode::CompileFailed with the log), then writes everything into a
/// temporary directory that is renamed onto `dir`, so a reader never sees a
/// half-written bundle. The manifest's `cubin` lines are set from
/// options.cubinArchs; its `source` names the file the source is written to.
rt::Status writeBundle(const std::string &dir, rt::Manifest manifest, const std::string &source,
                       const BundleWriteOptions &options = {});

/// One architecture's code in a multi-architecture bundle: planned for `arch`,
/// so its kernels (block sizes, strategy, even which kernels) are its own.
struct ArchVariant {
  std::string arch;
  rt::Manifest manifest; // its `arch` line is set to {arch}
  std::string source;
};

/// Writes a multi-architecture bundle (docs/bundle.md, format version 2):
/// manifest.flashc is the index, and each variant a version-1 bundle in the
/// subdirectory named after its arch, with the cubin for its arch when
/// options.cubinArchs lists it. Every variant must have the same programs.
/// Compiles everything first and writes atomically, as writeBundle does.
rt::Status writeMultiArchBundle(const std::string &dir, std::vector<ArchVariant> variants,
                                const BundleWriteOptions &options = {});

} // namespace flashc
