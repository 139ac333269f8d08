// Writes a bundle directory (docs/bundle.md): manifest.flashc, the CUDA source
// and optional cubins compiled with the runtime's NVRTC wrapper (one per
// kernel, in parallel, cached per kernel). Plain C++ (no MLIR); links
// flashc_runtime (for NVRTC and the kernel cache) and flashc_bundle.
#pragma once

#include "flashc/Compiler/KernelUnit.h"
#include "flashc/runtime/Manifest.h"
#include "flashc/runtime/Result.h"

#include <functional>
#include <string>
#include <vector>

namespace flashc {

/// How one NVRTC compile of a bundle went (for progress and timing reports).
struct UnitReport {
  std::string unit;  // "<kernel> for <arch>", or "kernels.cu for <arch>"
  double seconds = 0; // wall time of the compile, or of the cache lookup
  bool fromCache = false;
  size_t done = 0, total = 0; // units finished so far (this one included), of all
};

struct BundleWriteOptions {
  /// Architectures to compile kernels.cu for and ship as cubins (e.g.
  /// {"sm_90a"}). Empty: source only, the runtime compiles at load.
  std::vector<std::string> cubinArchs;
  /// Also compile (and discard) for every manifest `arch` that gets no cubin,
  /// so a bundle that does not compile is never written.
  bool checkAllArchs = false;
  /// Device library include dir for NVRTC (empty: the runtime's lookup).
  std::string deviceIncludeDir;
  /// Replace an existing bundle directory (one holding manifest.flashc).
  bool overwrite = true;
  /// Compiles at once (0: rt::defaultCompileJobs(): $FLASHC_COMPILE_JOBS, else the cores).
  int jobs = 0;
  /// Each unit's cubin goes through the kernel cache in `cacheDir` (empty:
  /// rt::defaultCacheDir()); off, or $FLASHC_NO_CACHE: always compiled.
  bool useCache = true;
  std::string cacheDir;
  /// Told as each compile finishes (one call at a time, from a worker thread).
  std::function<void(const UnitReport &)> onUnitDone;
};

/// A bundle's generated CUDA source, and how it may be compiled.
struct BundleSource {
  std::string text; // written as the manifest's `source` (kernels.cu)
  /// Empty: `text` compiles into one kernels.<arch>.cubin holding every
  /// kernel. Else the translation units (KernelUnit.h), which together hold
  /// every manifest kernel exactly once.
  std::vector<KernelUnit> kernelUnits;
};

/// Validates `manifest`, compiles the requested cubins (an NVRTC error returns
/// ErrorCode::CompileFailed with the log), then writes everything into a
/// temporary directory that is renamed onto `dir`, so a reader never sees a
/// half-written bundle. The manifest's `cubin` lines are set from
/// options.cubinArchs; its `source` names the file the source is written to.
rt::Status writeBundle(const std::string &dir, rt::Manifest manifest, const BundleSource &source,
                       const BundleWriteOptions &options = {});
/// The same with one cubin per arch (the whole source compiled at once).
rt::Status writeBundle(const std::string &dir, rt::Manifest manifest, const std::string &source,
                       const BundleWriteOptions &options = {});

/// One architecture's code in a multi-architecture bundle: planned for `arch`,
/// so its kernels (block sizes, strategy, even which kernels) are its own.
struct ArchVariant {
  std::string arch;
  rt::Manifest manifest; // its `arch` line is set to {arch}
  BundleSource source;
};

/// Writes a multi-architecture bundle (docs/bundle.md, format version 2):
/// manifest.flashc is the index, and each variant a version-1 bundle in the
/// subdirectory named after its arch, with the cubins for its arch when
/// options.cubinArchs lists it. Every variant must have the same programs.
/// Compiles everything first (every variant's units in one parallel batch)
/// and writes atomically, as writeBundle does.
rt::Status writeMultiArchBundle(const std::string &dir, std::vector<ArchVariant> variants,
                                const BundleWriteOptions &options = {});

} // namespace flashc
