// flashc runtime C++ API: open a bundle, bind arguments, launch kernels and
// programs on a stream. Loads the CUDA driver at run time; never throws.
//
//   auto bundle = flashc::rt::Bundle::open("model.bundle");
//   if (!bundle) { std::cerr << bundle.message(); ... }
//   flashc::rt::Arguments args;
//   args.setTensor("q", qPtr, DType::BF16, 4, qShape);      // strides default to row-major
//   args.setF32("scale", 0.125f);
//   Status s = (*bundle)->launch("attention_fwd", args, stream);
#pragma once

#include "flashc/runtime/Binding.h"
#include "flashc/runtime/Manifest.h"
#include "flashc/runtime/Result.h"

#include <memory>
#include <string>
#include <vector>

namespace flashc::rt {

struct BundleOptions {
  std::string cacheDir;                      // empty: defaultCacheDir()
  bool disableCache = false;                 // no disk cache (memory cache stays)
  int noJit = -1;                            // -1: $FLASHC_NO_JIT; 0: JIT allowed; 1: cubins only
  std::string deviceIncludeDir;              // empty: deviceIncludeDir() lookup
  std::vector<std::string> extraNvrtcOptions; // appended to the manifest's (e.g. -lineinfo)
};

/// What code a bundle runs on the current device, and where it came from.
struct CodeInfo {
  std::string arch;      // arch of the loaded code, e.g. "sm_90a"
  bool fromCubin = false; // a cubin shipped in the bundle
  bool fromDiskCache = false;
  bool fromMemoryCache = false;
  std::string cubinFile; // when fromCubin (relative to the bundle directory); several: blank-separated
  std::vector<std::string> cubinFiles; // when fromCubin: every cubin loaded (one, or one per kernel)
  std::string variant;   // a multi-arch bundle: the arch of the variant chosen ("" for a single-arch bundle)
};

/// Code for some of a bundle's kernels: one cubin (one CUmodule once loaded)
/// and the kernels it holds (empty: all of them).
struct CodeImage {
  std::vector<std::string> kernels;
  std::vector<char> cubin;
};

/// Whether a driver and a device are usable ("no CUDA driver (libcuda.so.1 not
/// found)", "no CUDA device"). Does not create a context.
Status checkDevice();

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int major = 0, minor = 0;
  DeviceLimits limits;
};
/// The current context's device (makes device 0's primary context current if
/// no context is current).
Result<DeviceInfo> currentDeviceInfo();

/// Device memory a caller lends a program launch for its scratch tensors.
struct Workspace {
  void *data = nullptr;
  uint64_t bytes = 0;
};

class BundleFileSource;

/// Validates the bundle in `dir` as Bundle::open() does and packs the files
/// it reads (manifests, sources, cubins) into a bundle blob (BundleBlob.h).
Result<std::string> packBundleDirectory(const std::string &dir);

class Bundle {
public:
  /// Reads and validates <dir>/manifest.flashc (a single-arch manifest, or a
  /// multi-arch index and every variant it lists); checks that the sources
  /// and listed cubins exist. Compiles nothing yet.
  static Result<std::shared_ptr<Bundle>> open(const std::string &dir, const BundleOptions &options = {});
  /// The same from a bundle blob in memory (BundleBlob.h, docs/bundle.md):
  /// the blob is checked (size, checksum, sections), then its files are
  /// validated exactly as open() validates a directory. The bytes are copied:
  /// the caller's buffer may go away after the call. `name` stands for the
  /// bundle in messages.
  static Result<std::shared_ptr<Bundle>> openMemory(const void *data, size_t size, const BundleOptions &options = {},
                                                    const std::string &name = "<memory>");
  /// A bundle from an in-memory manifest and source (tests, tools). Cubin
  /// entries in the manifest are ignored.
  static Result<std::shared_ptr<Bundle>> fromSource(const Manifest &manifest, const std::string &source,
                                                    const BundleOptions &options = {});
  ~Bundle();
  Bundle(const Bundle &) = delete;

  Bundle &operator=(const Bundle &) = delete;

  /// The manifest (a multi-arch bundle: its first variant's; every variant
  /// has the same programs, planned for its own architecture).
  const Manifest &manifest() const;
  /// A multi-arch bundle's variant archs in index order; {""} for a single-arch bundle.
  std::vector<std::string> variantArchs() const;
  const std::string &directory() const;
  std::vector<std::string> kernelNames() const;
  std::vector<std::string> programNames() const;
  const KernelSpec *findKernel(const std::string &name) const;
  const ProgramSpec *findProgram(const std::string &name) const;

  /// Loads (or compiles) the code for the current device now instead of at
  /// the first launch.
  Result<CodeInfo> prepare();

  /// The code this bundle would load on a device of compute capability
  /// major.minor (shipped cubin, cache or NVRTC; honours no-JIT), without a
  /// driver: for tools and tests. The code is returned through `images` (one
  /// per cubin), and through `cubin` when it is a single image.
  Result<CodeInfo> selectCode(int major, int minor, std::vector<char> *cubin = nullptr,
                              std::vector<CodeImage> *images = nullptr);

  /// Validates `args` and launches the kernel or program `name` on `stream`
  /// (a CUstream / cudaStream_t; null = legacy default stream). Asynchronous.
  /// A program's scratch tensors come from `workspace` when one is given
  /// (device memory of at least workspaceBytes(name, args), 256-byte aligned,
  /// which the caller keeps until the launch's work on `stream` completes: a
  /// framework's own allocator; the bytes the scratch uses may not overlap a
  /// tensor argument), else from the runtime's stream-ordered pool.
  Status launch(const std::string &name, const Arguments &args, void *stream = nullptr,
                const Workspace *workspace = nullptr);
  Status launchKernel(const std::string &name, const Arguments &args, void *stream = nullptr);

  /// Programs whose kernels check their inputs on the device (`meta status`:
  /// decode's cache lengths and pages, packed sequences' offsets) report a bad
  /// entry as the launch's error, which waits for the program (a stream
  /// synchronization a launch). With deferChecks(true) the launch returns at
  /// once and the verdict is read later: a bad entry is the error of the next
  /// program launch of this bundle (which is then not made) or of
  /// checkDeferred(); the kernels of the bad launch wrote nothing. Under
  /// CUDA-graph capture nothing is read either way.
  void deferChecks(bool defer);
  /// The verdicts of deferred launches: those done so far (wait: all, waiting
  /// for their programs); the first bad one is the error, naming its launch.
  Status checkDeferred(bool wait = true);
  Status launchProgram(const std::string &name, const Arguments &args, void *stream = nullptr,
                       const Workspace *workspace = nullptr);

  /// Bytes of workspace the program `name` needs for `args` on the current
  /// device's variant: its scratch tensors, each at a 256-byte aligned offset
  /// (0 for a kernel or a program without scratch).
  Result<uint64_t> workspaceBytes(const std::string &name, const Arguments &args);

  /// Shape of tensor parameter `param` of `name` implied by `args` (to allocate outputs).
  Result<std::vector<int64_t>> paramShape(const std::string &name, const std::string &param,
                                          const Arguments &args) const;

  struct Impl;

private:
  explicit Bundle(std::unique_ptr<Impl> impl);
  /// open() and openMemory(): one loader, whatever the files' origin.
  static Result<std::shared_ptr<Bundle>> openFiles(std::shared_ptr<BundleFileSource> files,
                                                   const BundleOptions &options);
  std::unique_ptr<Impl> impl_;
};

/// The runtime's version ("0.1.0").
const char *runtimeVersion();

} // namespace flashc::rt
