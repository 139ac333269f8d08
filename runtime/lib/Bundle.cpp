// Bundle loading, code selection (cubin / cache / NVRTC), module management
// per context and launching.
#include "flashc/runtime/Runtime.h"

#include "Driver.h"
#include "FileRead.h"
#include "flashc/runtime/Arch.h"
#include "flashc/runtime/BundleBlob.h"
#include "flashc/runtime/BundleIndex.h"
#include "flashc/device/table_status.h"  // (the device library's verdict codes: plain C++)
#include "flashc/runtime/KernelCache.h"
#include "flashc/runtime/LaunchPlanCache.h"
#include "flashc/runtime/Nvrtc.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace flashc::rt {

const char *runtimeVersion() { return FLASHC_VERSION_STRING; }

namespace {

Result<std::string> readFile(const std::string &path) {
  std::string bytes;
  if (FileRead fault = readRegularFile(path, bytes); fault != FileRead::Ok)
    return makeError(ErrorCode::NotFound, path + " " + describe(fault));
  return bytes;
}

int attribute(const Driver &d, CUdevice dev, CUdevice_attribute a) {
  int v = 0;
  d.cuDeviceGetAttribute(&v, a, dev);
  return v;
}

DeviceLimits deviceLimits(const Driver &d, CUdevice dev) {
  DeviceLimits l;
  l.maxGrid = {attribute(d, dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X), attribute(d, dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
               attribute(d, dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)};
  l.maxBlock = {attribute(d, dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
                attribute(d, dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                attribute(d, dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)};
  l.maxThreadsPerBlock = attribute(d, dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  l.maxDynamicSharedBytes = attribute(d, dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  // At least 1: a failed query must not turn a persistent grid into an empty one (a silent skip).
  l.multiprocessors = std::max(1, attribute(d, dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  return l;
}

bool envNoJit() {
  const char *v = std::getenv("FLASHC_NO_JIT");
  return v && *v && std::string(v) != "0";
}

constexpr int kDefaultSharedLimit = 48 * 1024;

/// Why a cubin whose first bytes are `h` (`got` of them, at most 64) and
/// whose size is `size` is not loadable (an ELF64 image for the CUDA machine
/// whose header tables lie inside the file), or "" if it looks like one.
/// Catches garbage, empty and truncated files before the driver sees them.
std::string cubinFault(const unsigned char *h, size_t got, uint64_t size) {
  if (got < 4 || h[0] != 0x7f || h[1] != 'E' || h[2] != 'L' || h[3] != 'F')
    return size == 0 ? "is empty" : "is not an ELF file";
  if (got < 64 || h[4] != 2 /* ELFCLASS64 */ || h[5] != 1 /* little-endian */)
    return "is not a 64-bit little-endian ELF file";
  auto u16 = [&](int at) { return uint64_t(h[at]) | uint64_t(h[at + 1]) << 8; };
  auto u64 = [&](int at) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v << 8 | h[at + i];
    return v;
  };
  if (u16(18) != 190 /* EM_CUDA */) return "is an ELF file for machine " + std::to_string(u16(18)) + ", not CUDA";
  uint64_t phoff = u64(32), shoff = u64(40), phsize = u16(54) * u16(56), shsize = u16(58) * u16(60);
  if (phoff > size || phsize > size - phoff || shoff > size || shsize > size - shoff)
    return "is truncated (" + std::to_string(size) + " bytes; its ELF header describes tables beyond the end)";
  return "";
}

} // namespace

/// Where a bundle's files come from: a directory on disk or the sections of
/// a blob in memory. The loader sees only this, so both paths run the same
/// validation. Paths are relative to the bundle, '/'-separated.
class BundleFileSource {
public:
  enum class Kind { Missing, File, Other };
  virtual ~BundleFileSource() = default;
  /// How messages name the bundle: its directory, or "<memory>".
  virtual const std::string &root() const = 0;
  virtual Kind kind(const std::string &rel) const = 0;
  virtual Result<std::string> read(const std::string &rel) const = 0;
  /// Why the cubin at `rel` is not loadable, or "".
  virtual std::string cubinFaultOf(const std::string &rel) const = 0;
  std::string path(const std::string &rel) const { return root() + "/" + rel; }
};

namespace {

class DirectorySource : public BundleFileSource {
public:
  explicit DirectorySource(std::string dir) : dir_(std::move(dir)) {}
  const std::string &root() const override { return dir_; }
  Kind kind(const std::string &rel) const override {
    std::error_code ec;
    if (fs::is_regular_file(path(rel), ec)) return Kind::File;
    return fs::exists(path(rel), ec) ? Kind::Other : Kind::Missing;
  }
  Result<std::string> read(const std::string &rel) const override {
    auto text = readFile(path(rel));
    if (text) touched_.insert(rel);
    return text;
  }
  std::string cubinFaultOf(const std::string &rel) const override {
    std::ifstream in(path(rel), std::ios::binary);
    if (!in) return "cannot be read";
    unsigned char h[64] = {0};
    in.read(reinterpret_cast<char *>(h), sizeof h);
    std::error_code ec;
    uint64_t size = fs::file_size(path(rel), ec);
    if (ec) return "cannot be read";
    touched_.insert(rel);
    return cubinFault(h, size_t(in.gcount()), size);
  }
  /// The files the loader read or checked (what a blob of this bundle holds).
  const std::set<std::string> &touched() const { return touched_; }

private:
  std::string dir_;
  mutable std::set<std::string> touched_;
};

class MemorySource : public BundleFileSource {
public:
  MemorySource(std::string name, BundleFiles files) : name_(std::move(name)), files_(std::move(files)) {}
  const std::string &root() const override { return name_; }
  Kind kind(const std::string &rel) const override {
    if (files_.count(rel)) return Kind::File;
    // A directory in a blob exists only as the prefix of its files' names.
    auto it = files_.lower_bound(rel + "/");
    return it != files_.end() && it->first.compare(0, rel.size() + 1, rel + "/") == 0 ? Kind::Other : Kind::Missing;
  }
  Result<std::string> read(const std::string &rel) const override {
    auto it = files_.find(rel);
    if (it == files_.end()) return makeError(ErrorCode::NotFound, "no section " + rel + " in " + name_);
    return it->second;
  }
  std::string cubinFaultOf(const std::string &rel) const override {
    auto it = files_.find(rel);
    if (it == files_.end()) return "cannot be read";
    const std::string &b = it->second;
    return cubinFault(reinterpret_cast<const unsigned char *>(b.data()), std::min<size_t>(b.size(), 64), b.size());
  }

private:
  std::string name_;
  BundleFiles files_;
};

} // namespace

Status checkDevice() {
  auto d = Driver::get();
  return d ? Status() : Status(d.error());
}

Result<DeviceInfo> currentDeviceInfo() {
  auto d = Driver::get();
  if (!d) return d.error();
  auto dev = currentDevice(**d);
  if (!dev) return dev.error();
  DeviceInfo info;
  info.ordinal = int(*dev);
  char name[256] = {0};
  (*d)->cuDeviceGetName(name, sizeof name - 1, *dev);
  info.name = name;
  info.major = attribute(**d, *dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.minor = attribute(**d, *dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.limits = deviceLimits(**d, *dev);
  return info;
}

// One architecture's code: a manifest, its source and its cubins. A
// single-arch bundle is one variant; a multi-arch bundle (format version 2
// index) has one per architecture, each planned for it, in a subdirectory.
struct Variant {
  std::string arch; // the index's arch; empty for a single-arch bundle
  std::string directory; // relative to the bundle ("" for a single-arch bundle)
  std::string dir;  // where its manifest, source and cubins are (for messages)
  std::string prefix; // its files' paths in the bundle's file source: "" or "<directory>/"
  Manifest manifest;
  std::string source;
  std::string sourcePath;
};

// Code loaded into one context: its modules (one per cubin) and one function per kernel.
struct LoadedModule {
  ContextIdentity context;          // the modules belong to it
  const Variant *variant = nullptr; // whose kernels the modules hold
  std::vector<CUmodule> modules;
  CUdevice device = 0;
  CodeInfo info;
  std::map<std::string, CUfunction> functions; // by kernel name
  std::map<std::string, DeviceLimits> limits;  // by kernel name (function-specific)
  std::map<std::string, int> sharedAttribute;  // dynamic shared bytes already allowed
  /// Launch plans on this device by argument signature (a repeated launch is not validated and planned again).
  std::unique_ptr<LaunchPlanCache> plans;
};

struct Bundle::Impl {
  std::string dir;
  std::shared_ptr<BundleFileSource> files; // the cubins are read from here when a module is loaded
  // The first variant answers the device-independent queries (names,
  // parameters, shapes): every variant has the same programs.
  std::vector<Variant> variants;
  std::vector<CodeVariant> code; // per variant: archs and cubins, for chooseCode
  BundleOptions options;
  bool cubinsUsable = true;
  std::mutex mutex;
  std::map<unsigned long long, LoadedModule> modules;  // by context ID (ContextIdentity), not by handle

  Result<LoadedModule *> moduleForCurrentContext(const Driver &d);
  const Manifest &manifest() const { return variants.front().manifest; }
  /// `refreshCache`: the kernel cache's cubin was refused by the driver; compile it again (compileCudaCached).
  Result<std::vector<CodeImage>> codeFor(const DeviceInfo &dev, CodeInfo &info, const Variant *&variant,
                                         bool refreshCache = false);
  Status ensureShared(const Driver &d, LoadedModule &m, const KernelSpec &k, uint32_t bytes);
  /// The caller's tensors of a kernel launch or of a program's kernels: each one's first and last byte are device
  /// memory of `device`, and none that a kernel writes overlaps another (checkCallerOverlaps), nor the caller's
  /// `workspace` (its bytes, or null).
  Status checkCallerTensors(const Driver &d, const KernelLaunch *launches, size_t count, CUdevice device,
                            const TensorBytes *workspace = nullptr);
  /// `afterKernel`: the stream's last work is a kernel this program launched (a `launch programmatic` kernel may
  /// then overlap its end).
  Status launchOne(const Driver &d, LoadedModule &m, KernelLaunch &launch, CUstream stream, bool afterKernel = false);
  Result<ProgramLaunch> planProgram(LoadedModule &m, const std::string &name, const Arguments &args);
  /// A caller's workspace is device memory of `device` whose allocation covers `bytes` from `data`.
  Status checkWorkspaceMemory(const Driver &d, const void *data, uint64_t bytes, CUdevice device,
                              const std::string &program);

  /// Deferred verdicts (deferChecks): a launch's 16-byte status copied into pinned memory behind an event.
  struct PendingVerdict {
    ContextIdentity context;  // its event and pinned memory belong to this context
    CUevent event = nullptr;
    int32_t *host = nullptr;  // pinned, 16 bytes
    bool busy = false;
    uint64_t order = 0;       // launch order, for the oldest-first reading
    std::string program, statusName;
    std::map<std::string, int64_t> rows;  // the launch's tensors' first dims, for the message
  };
  std::mutex verdictMutex;
  bool deferVerdicts = false;
  // Deferred verdicts not read yet: every program launch asks, and most bundles never defer, so the answer
  // without the lock when there are none.
  std::atomic<int> pendingVerdicts{0};
  uint64_t verdictOrder = 0;
  std::vector<PendingVerdict> verdicts;
  /// Queues the status at `ptr` (after the program's kernels on `stream`).
  Status deferVerdict(const Driver &d, CUdeviceptr ptr, CUstream stream, const Arguments &args,
                      const std::string &program, const std::string &statusName);
  /// Reads finished verdicts (wait: every one); the first bad one is the error.
  Status collectVerdicts(const Driver &d, bool wait);
};

Bundle::Bundle(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Bundle::~Bundle() {
  auto d = Driver::get();
  if (!d) return;
  // A dead context's handles are left alone: they went with it, and the driver may have given them to others since.
  for (auto &v : impl_->verdicts) {  // (a pending verdict is dropped: nobody is left to report it to)
    if (!contextAlive(**d, v.context)) continue;
    if (v.busy) (*d)->cuEventSynchronize(v.event);
    (*d)->cuEventDestroy(v.event);
    (*d)->cuMemFreeHost(v.host);
  }
  for (auto &[id, m] : impl_->modules)
    if (contextAlive(**d, m.context))
      for (CUmodule module : m.modules) (*d)->cuModuleUnload(module);
}

namespace {

/// What a program shows its callers, item by item: each parameter it takes from them (callerParams: tensors with
/// dtype, rank and direction, scalars with their type, in the C ABI's order), then its meta lines.
std::vector<std::string> programSignature(const Manifest &m, const ProgramSpec &p) {
  std::vector<CallerParam> params;
  callerParams(m, p.name, params);
  std::vector<std::string> items;
  for (const CallerParam &c : params)
    items.push_back(c.tensor ? std::string("tensor '") + c.tensor->name + "' " + dtypeName(c.tensor->dtype) +
                                   " rank " + std::to_string(c.tensor->dims.size()) + " " + directionName(c.direction)
                             : std::string("scalar '") + c.scalar->name + "' " + scalarTypeName(c.scalar->type));
  for (const auto &[key, value] : p.meta) items.push_back("meta " + key + " " + value);
  return items;
}

/// Reads the version-1 bundle at `prefix` of `files` (a whole single-arch
/// bundle, or one variant of a multi-arch bundle): manifest, source, and the
/// cubins checked.
Result<Variant> loadVariant(const BundleFileSource &files, const std::string &prefix, const std::string &text) {
  std::string dir = prefix.empty() ? files.root() : files.path(prefix.substr(0, prefix.size() - 1));
  auto manifest = parseManifest(text);
  if (!manifest) return makeError(manifest.code(), dir + "/" + manifest.message());
  Variant v;
  v.dir = dir;
  v.prefix = prefix;
  v.manifest = std::move(*manifest);
  v.sourcePath = dir + "/" + v.manifest.source;
  auto kind = files.kind(prefix + v.manifest.source);
  if (kind != BundleFileSource::Kind::File)
    return makeError(ErrorCode::InvalidBundle, "bundle " + dir + ": source " + v.manifest.source +
                                                   (kind == BundleFileSource::Kind::Other ? " is not a file" : " is missing"));
  auto source = files.read(prefix + v.manifest.source);
  if (!source)  // (there, but unreadable: permissions, an I/O error)
    return makeError(ErrorCode::InvalidBundle, "bundle " + dir + ": source " + v.manifest.source + ": " + source.message());
  v.source = std::move(*source);
  for (const auto &c : v.manifest.cubins) {
    if (files.kind(prefix + c.file) != BundleFileSource::Kind::File)
      return makeError(ErrorCode::InvalidBundle, "bundle " + dir + ": cubin " + c.file + " (" + c.arch + ") is missing");
    if (std::string fault = files.cubinFaultOf(prefix + c.file); !fault.empty())
      return makeError(ErrorCode::InvalidBundle, "bundle " + dir + ": cubin " + c.file + " (" + c.arch + ") " + fault +
                                                     (c.holdsAllKernels() ? "; rebuild the bundle or remove its 'cubin' line"
                                                                          : "; rebuild the bundle or remove its " + c.arch +
                                                                                " 'cubin' lines"));
  }
  return v;
}

/// The variants of the multi-arch bundle in `files` whose index is `text`.
Result<std::vector<Variant>> loadVariants(const BundleFileSource &files, const std::string &text) {
  const std::string &dir = files.root();
  auto index = parseBundleIndex(text);
  if (!index) return makeError(index.code(), dir + "/" + index.message());
  std::vector<Variant> variants;
  for (const VariantRef &ref : index->variants) {
    std::string prefix = ref.directory + "/";
    auto subText = files.read(prefix + "manifest.flashc");
    if (!subText)
      return makeError(ErrorCode::InvalidBundle, "bundle " + dir + ": variant " + ref.arch + " has no " +
                                                     ref.directory + "/manifest.flashc");
    if (bundleFormatVersion(*subText) == kBundleIndexVersion)
      return makeError(ErrorCode::InvalidBundle, "bundle " + files.path(ref.directory) +
                                                     ": a variant must be a single-arch bundle "
                                                     "(format version 1), not another index");
    auto v = loadVariant(files, prefix, *subText);
    if (!v) return v.error();
    const auto &archs = v->manifest.archs;
    if (std::find(archs.begin(), archs.end(), ref.arch) == archs.end())
      return makeError(ErrorCode::InvalidBundle, "bundle " + dir + ": variant " + ref.arch + " (" + ref.directory +
                                                     ") holds code for other architectures, not " + ref.arch);
    v->arch = ref.arch;
    v->directory = ref.directory;
    variants.push_back(std::move(*v));
  }
  // Users name programs, not variants: each must offer the same ones, taking the same parameters (what callers
  // bind and what param_info reports come from the first variant) and saying the same of themselves (meta).
  const Variant &first = variants.front();
  for (const Variant &v : variants) {
    for (const auto &p : first.manifest.programs) {
      const ProgramSpec *other = v.manifest.findProgram(p.name);
      if (!other)
        return makeError(ErrorCode::InvalidBundle, "bundle " + dir + ": variant " + v.arch + " has no program '" +
                                                       p.name + "' (variant " + first.arch + " has it)");
      std::vector<std::string> a = programSignature(first.manifest, p), b = programSignature(v.manifest, *other);
      if (a != b) {
        size_t i = 0;
        while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
        auto item = [](const std::vector<std::string> &sig, size_t at) { return at < sig.size() ? sig[at] : "nothing"; };
        return makeError(ErrorCode::InvalidBundle, "bundle " + dir + ": program '" + p.name + "' differs between "
                                                       "variants: " + first.arch + " has " + item(a, i) + " where " +
                                                       v.arch + " has " + item(b, i));
      }
    }
    for (const auto &p : v.manifest.programs)
      if (!first.manifest.findProgram(p.name))
        return makeError(ErrorCode::InvalidBundle, "bundle " + dir + ": variant " + first.arch + " has no program '" +
                                                       p.name + "' (variant " + v.arch + " has it)");
  }
  return variants;
}

/// The one loader behind open() and openMemory(): the manifest (or index),
/// then every variant, validated the same way whatever the files' origin.
Result<std::vector<Variant>> loadBundle(const BundleFileSource &files) {
  switch (files.kind("manifest.flashc")) {
  case BundleFileSource::Kind::Missing:
    return makeError(ErrorCode::InvalidBundle, "bundle " + files.root() + " has no manifest.flashc");
  case BundleFileSource::Kind::Other:
    return makeError(ErrorCode::InvalidBundle, "bundle " + files.root() + ": manifest.flashc is not a regular file");
  case BundleFileSource::Kind::File: break;
  }
  auto text = files.read("manifest.flashc");
  if (!text)  // (there, but unreadable: permissions, an I/O error)
    return makeError(ErrorCode::InvalidBundle, "bundle " + files.root() + ": " + text.message());
  if (bundleFormatVersion(*text) == kBundleIndexVersion) return loadVariants(files, *text);
  auto variant = loadVariant(files, "", *text);
  if (!variant) return variant.error();
  std::vector<Variant> variants;
  variants.push_back(std::move(*variant));
  return variants;
}

} // namespace

Result<std::shared_ptr<Bundle>> Bundle::open(const std::string &dir, const BundleOptions &options) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return makeError(ErrorCode::NotFound, "bundle directory " + dir +
                                              (fs::exists(dir, ec) ? " is not a directory" : " does not exist"));
  return openFiles(std::make_shared<DirectorySource>(dir), options);
}

Result<std::shared_ptr<Bundle>> Bundle::openMemory(const void *data, size_t size, const BundleOptions &options,
                                                   const std::string &name) {
  auto files = unpackBundleBlob(data, size);
  if (!files) {
    Error e = files.error();
    const std::string prefix = "bundle blob: "; // the unpacker's; the name says more
    if (e.message.compare(0, prefix.size(), prefix) == 0) e.message = e.message.substr(prefix.size());
    e.message = "bundle " + name + ": " + e.message;
    return e;
  }
  return openFiles(std::make_shared<MemorySource>(name, std::move(*files)), options);
}

Result<std::shared_ptr<Bundle>> Bundle::openFiles(std::shared_ptr<BundleFileSource> files,
                                                  const BundleOptions &options) {
  auto variants = loadBundle(*files);
  if (!variants) return variants.error();
  auto impl = std::make_unique<Impl>();
  impl->dir = files->root();
  impl->files = std::move(files);
  impl->options = options;
  impl->variants = std::move(*variants);
  for (const Variant &v : impl->variants) impl->code.push_back({v.manifest.archs, v.manifest.cubins});
  return std::shared_ptr<Bundle>(new Bundle(std::move(impl)));
}

Result<std::string> packBundleDirectory(const std::string &dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return makeError(ErrorCode::NotFound, "bundle directory " + dir +
                                              (fs::exists(dir, ec) ? " is not a directory" : " does not exist"));
  // Validate as open() does, and pack exactly the files that load read.
  DirectorySource source(dir);
  auto variants = loadBundle(source);
  if (!variants) return variants.error();
  BundleFiles files;
  for (const std::string &rel : source.touched()) {
    if (std::string fault = bundleBlobNameFault(rel); !fault.empty())
      return makeError(ErrorCode::InvalidBundle, "bundle " + dir + ": file name '" + rel + "' " + fault);
    auto bytes = readFile(source.path(rel));
    if (!bytes) return makeError(ErrorCode::InvalidBundle, "bundle " + dir + ": " + bytes.message());
    files[rel] = std::move(*bytes);
  }
  return packBundleBlob(files);
}

Result<std::shared_ptr<Bundle>> Bundle::fromSource(const Manifest &manifest, const std::string &source,
                                                   const BundleOptions &options) {
  if (Status s = validateManifest(manifest); !s) return s.error();
  auto impl = std::make_unique<Impl>();
  impl->dir = "<memory>";
  Variant v;
  v.dir = impl->dir;
  v.manifest = manifest;
  v.source = source;
  v.sourcePath = manifest.source;
  impl->variants.push_back(std::move(v));
  impl->code.push_back({manifest.archs, {}});
  impl->options = options;
  impl->cubinsUsable = false;
  return std::shared_ptr<Bundle>(new Bundle(std::move(impl)));
}

const Manifest &Bundle::manifest() const { return impl_->manifest(); }
const std::string &Bundle::directory() const { return impl_->dir; }
const KernelSpec *Bundle::findKernel(const std::string &n) const { return impl_->manifest().findKernel(n); }
const ProgramSpec *Bundle::findProgram(const std::string &n) const { return impl_->manifest().findProgram(n); }

std::vector<std::string> Bundle::variantArchs() const {
  std::vector<std::string> v;
  for (const auto &variant : impl_->variants) v.push_back(variant.arch);
  return v;
}

std::vector<std::string> Bundle::kernelNames() const {
  std::vector<std::string> v;
  for (const auto &k : impl_->manifest().kernels) v.push_back(k.name);
  return v;
}
std::vector<std::string> Bundle::programNames() const {
  std::vector<std::string> v;
  for (const auto &p : impl_->manifest().programs) v.push_back(p.name);
  return v;
}

Result<std::vector<CodeImage>> Bundle::Impl::codeFor(const DeviceInfo &dev, CodeInfo &info, const Variant *&variant,
                                                     bool refreshCache) {
  std::string devText = dev.name + ", compute capability " + std::to_string(dev.major) + "." + std::to_string(dev.minor);
  bool noJit = options.noJit < 0 ? envNoJit() : options.noJit != 0;
  auto choice = chooseCode(code, dev.major, dev.minor, cubinsUsable, !noJit, "bundle " + dir, devText);
  if (!choice) return choice.error();
  variant = &variants[size_t(choice->variant)];
  info.variant = variant->arch;
  if (choice->cubin >= 0) {
    // Every cubin of the chosen arch: one of the whole source, or one per
    // kernel (together they hold each kernel once: checked when parsed).
    const std::string arch = variant->manifest.cubins[size_t(choice->cubin)].arch;
    std::vector<CodeImage> images;
    for (const CubinSpec &c : variant->manifest.cubins) {
      if (c.arch != arch) continue;
      auto bytes = files->read(variant->prefix + c.file);
      if (!bytes) return makeError(ErrorCode::InvalidBundle, "bundle " + dir + ": " + bytes.message());
      images.push_back({c.kernels, std::vector<char>(bytes->begin(), bytes->end())});
      std::string file = variant->directory.empty() ? c.file : variant->directory + "/" + c.file;
      info.cubinFile += (info.cubinFiles.empty() ? "" : " ") + file;
      info.cubinFiles.push_back(file);
    }
    info.arch = arch;
    info.fromCubin = true;
    return images;
  }
  // The source calls the device library it was generated against: compile it only with those headers.
  std::string includeDir = deviceIncludeDir(options.deviceIncludeDir);
  std::string fingerprint = directoryFingerprint(includeDir);
  if (Status s = checkDeviceLibrary(variant->manifest, fingerprint, includeDir); !s)
    return makeError(s.error().code, "bundle " + dir + ": " + s.error().message);
  CompileRequest req;
  req.source = variant->source;
  req.sourceName = variant->sourcePath;
  req.arch = choice->jitArch.str();
  req.options = variant->manifest.nvrtcOptions;
  req.options.insert(req.options.end(), options.extraNvrtcOptions.begin(), options.extraNvrtcOptions.end());
  req.deviceIncludeDir = options.deviceIncludeDir;
  std::optional<KernelCache> cache;
  if (!options.disableCache && !kernelCacheDisabled()) cache.emplace(options.cacheDir.empty() ? defaultCacheDir() : options.cacheDir);
  auto code = compileCudaCached(req, cache ? &*cache : nullptr, fingerprint, refreshCache);
  if (!code) return code.error();
  info.arch = req.arch;
  info.fromDiskCache = code->source == CachedCompile::DiskCache;
  info.fromMemoryCache = code->source == CachedCompile::MemoryCache;
  std::vector<CodeImage> images(1);
  images[0].cubin = std::move(code->cubin);
  return images;
}

Result<LoadedModule *> Bundle::Impl::moduleForCurrentContext(const Driver &d) {
  auto device = currentDevice(d);
  if (!device) return device.error();
  auto ctx = currentContext(d);
  if (!ctx) return ctx.error();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = modules.find(ctx->id);
  if (it != modules.end()) return &it->second;
  // (A dead context's entry stays until the bundle closes, which leaves its modules alone: a launch on another thread
  // may still hold the entry, and its calls then fail with the driver's error. A few KB a context.)

  auto dev = currentDeviceInfo();
  if (!dev) return dev.error();
  LoadedModule m;
  m.context = *ctx;
  m.device = *device;
  auto unloadAll = [&] {
    for (CUmodule module : m.modules) d.cuModuleUnload(module);
    m.modules.clear();
  };
  std::map<std::string, CUmodule> moduleOf; // kernel -> the module holding it
  // Loads every image into m.modules: CUDA_SUCCESS, or the first refusal (`failed`: its index), nothing loaded.
  auto loadImages = [&](const std::vector<CodeImage> &images, size_t &failed) {
    for (size_t i = 0; i < images.size(); ++i) {
      CUmodule module = nullptr;
      if (CUresult rc = d.cuModuleLoadData(&module, images[i].cubin.data()); rc != CUDA_SUCCESS) {
        unloadAll();
        moduleOf.clear();
        failed = i;
        return rc;
      }
      m.modules.push_back(module);
      if (images[i].kernels.empty())
        for (const auto &k : m.variant->manifest.kernels) moduleOf[k.name] = module;
      for (const auto &name : images[i].kernels) moduleOf[name] = module;
    }
    return CUDA_SUCCESS;
  };
  auto code = codeFor(*dev, m.info, m.variant);
  if (!code) return code.error();
  size_t failed = 0;
  CUresult rc = loadImages(*code, failed);
  const bool imageRefused = rc == CUDA_ERROR_INVALID_IMAGE || rc == CUDA_ERROR_INVALID_PTX ||
                            rc == CUDA_ERROR_INVALID_SOURCE || rc == CUDA_ERROR_NO_BINARY_FOR_GPU ||
                            rc == CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  if (imageRefused && (m.info.fromDiskCache || m.info.fromMemoryCache)) {
    // The kernel cache's cubin passed its checksum but the driver refuses the image itself (not memory or a sticky
    // error): compiled again and replaced, once a process (compileCudaCached: only a cubin the disk gave).
    if (std::getenv("FLASHC_VERBOSE"))
      std::fprintf(stderr,
                   "flashc: bundle %s: the kernel cache's code for %s was refused (%s); asking the cache again (a cubin "
                   "from the disk is compiled again, once a process)\n",
                   dir.c_str(), m.info.arch.c_str(), d.error("cuModuleLoadData", rc).message.c_str());
    m.info = CodeInfo();
    code = codeFor(*dev, m.info, m.variant, /*refreshCache=*/true);
    if (!code) return code.error();
    rc = loadImages(*code, failed);
  }
  if (rc != CUDA_SUCCESS) {
    Error e = d.error("cuModuleLoadData", rc);
    std::string file = failed < m.info.cubinFiles.size() ? m.info.cubinFiles[failed] : "";
    e.message = "bundle " + dir + ": loading code for " + m.info.arch + (file.empty() ? "" : " (" + file + ")") +
                " on " + dev->name + ": " + e.message;
    return e;
  }
  for (const auto &k : m.variant->manifest.kernels) {
    CUfunction fn = nullptr;
    auto holder = moduleOf.find(k.name);
    if (holder == moduleOf.end() || d.cuModuleGetFunction(&fn, holder->second, k.entry.c_str()) != CUDA_SUCCESS) {
      unloadAll();
      return makeError(ErrorCode::InvalidBundle, "bundle " + dir + ": kernel '" + k.name + "': entry symbol '" + k.entry +
                                                     "' is not in the code" +
                                                     (m.info.cubinFiles.size() > 1 ? " of the cubin listed for it" : "") +
                                                     " (is it extern \"C\" __global__?)");
    }
    DeviceLimits l = dev->limits;
    int staticShared = 0, maxThreads = 0;
    d.cuFuncGetAttribute(&staticShared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
    d.cuFuncGetAttribute(&maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn);
    l.maxDynamicSharedBytes -= staticShared;
    if (maxThreads > 0 && maxThreads < l.maxThreadsPerBlock) l.maxThreadsPerBlock = maxThreads;
    m.functions[k.name] = fn;
    m.limits[k.name] = l;
    m.sharedAttribute[k.name] = kDefaultSharedLimit;
  }
  m.plans = std::make_unique<LaunchPlanCache>(alignmentLog2Of(m.variant->manifest));
  return &modules.emplace(ctx->id, std::move(m)).first->second;
}

Result<CodeInfo> Bundle::prepare() {
  auto d = Driver::get();
  if (!d) return d.error();
  auto m = impl_->moduleForCurrentContext(**d);
  if (!m) return m.error();
  return (*m)->info;
}

Result<CodeInfo> Bundle::selectCode(int major, int minor, std::vector<char> *cubin, std::vector<CodeImage> *images) {
  DeviceInfo dev;
  dev.name = "device";
  dev.major = major;
  dev.minor = minor;
  CodeInfo info;
  const Variant *variant = nullptr;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto code = impl_->codeFor(dev, info, variant);
  if (!code) return code.error();
  if (cubin) *cubin = code->size() == 1 ? code->front().cubin : std::vector<char>();
  if (images) *images = std::move(*code);
  return info;
}

Status Bundle::Impl::ensureShared(const Driver &d, LoadedModule &m, const KernelSpec &k, uint32_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  int &allowed = m.sharedAttribute[k.name];
  if (int(bytes) <= allowed) return Status();
  if (CUresult rc = d.cuFuncSetAttribute(m.functions[k.name], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(bytes));
      rc != CUDA_SUCCESS) {
    Error e = d.error("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", rc);
    e.message = "kernel '" + k.name + "' (" + std::to_string(bytes) + " bytes of dynamic shared memory): " + e.message;
    return e;
  }
  allowed = int(bytes);
  return Status();
}

namespace {
// Where the bytes [first, last] are not all device memory of `device`: the first or the last byte (`last`) and the
// ordinal CUDA gives it (-1: not device memory known to CUDA). Only those two bytes are asked about, not the
// allocation's range: memory mapped from several handles, as torch's expandable segments are, reports one handle's.
struct DeviceBytesFault {
  bool last = false;
  int ordinal = -1;
};
std::optional<DeviceBytesFault> deviceBytesFault(const Driver &d, uint64_t first, uint64_t last, CUdevice device) {
  for (uint64_t at : {first, last}) {
    int ordinal = -1;
    if (d.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CUdeviceptr(at)) != CUDA_SUCCESS)
      return DeviceBytesFault{at != first, -1};
    if (ordinal != int(device)) return DeviceBytesFault{at != first, ordinal};
  }
  return std::nullopt;
}

std::string onOtherDevice(int ordinal, CUdevice device) {
  return "is on device " + std::to_string(ordinal) + " but the current context is on device " +
         std::to_string(int(device));
}
}  // namespace

Status Bundle::Impl::checkWorkspaceMemory(const Driver &d, const void *data, uint64_t bytes, CUdevice device,
                                          const std::string &program) {
  auto base = reinterpret_cast<CUdeviceptr>(data);
  if (bytes == 0) return Status();
  if (base > ~CUdeviceptr(0) - (bytes - 1))
    return makeError(ErrorCode::InvalidArgument, "program '" + program + "': the workspace's " + std::to_string(bytes) +
                                                     " bytes run past the end of the address space");
  auto fault = deviceBytesFault(d, base, base + (bytes - 1), device);
  if (!fault) return Status();
  std::ostringstream os;
  os << "program '" << program << "': the workspace";
  if (fault->ordinal >= 0)
    os << " " << onOtherDevice(fault->ordinal, device);
  else
    os << "'s " << (fault->last ? "last" : "first") << " byte ("
       << reinterpret_cast<void *>(fault->last ? base + (bytes - 1) : base) << ") is not device memory known to CUDA ("
       << bytes << " bytes from " << data << ")";
  return makeError(ErrorCode::InvalidArgument, os.str());
}

Status Bundle::Impl::checkCallerTensors(const Driver &d, const KernelLaunch *launches, size_t count,
                                        CUdevice device, const TensorBytes *workspace) {
  std::vector<TensorBytes> tensors = callerTensorBytes(launches, count);
  // The last byte too: a size larger than the allocation is refused where the memory after it is not mapped.
  for (const TensorBytes &t : tensors) {
    auto fault = deviceBytesFault(d, t.first, t.last, device);
    if (!fault) continue;
    std::ostringstream os;
    os << "argument '" << *t.name << "': ";
    if (fault->ordinal >= 0)
      os << "memory " << onOtherDevice(fault->ordinal, device);
    else if (!fault->last)
      os << "pointer " << reinterpret_cast<void *>(t.first) << " is not device memory known to CUDA";
    else
      os << "its last byte (" << reinterpret_cast<void *>(t.last) << ", " << (t.last - t.first + 1) << " bytes from "
         << reinterpret_cast<void *>(t.first)
         << " by its shape and strides) is not device memory known to CUDA: is the tensor larger than its allocation?";
    return makeError(ErrorCode::InvalidArgument, os.str());
  }
  if (workspace) tensors.push_back(*workspace);
  return checkCallerOverlaps(tensors);
}

// The binder's copies of cuda.h's tensor map enums and layout (it has no CUDA headers).
static_assert(tma::Int32 == int(CU_TENSOR_MAP_DATA_TYPE_INT32) && tma::Float16 == int(CU_TENSOR_MAP_DATA_TYPE_FLOAT16) &&
                  tma::Float32 == int(CU_TENSOR_MAP_DATA_TYPE_FLOAT32) && tma::BFloat16 == int(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16),
              "tma::DataType mirrors CUtensorMapDataType");
static_assert(tma::SwizzleNone == int(CU_TENSOR_MAP_SWIZZLE_NONE) && tma::Swizzle32B == int(CU_TENSOR_MAP_SWIZZLE_32B) &&
                  tma::Swizzle64B == int(CU_TENSOR_MAP_SWIZZLE_64B) && tma::Swizzle128B == int(CU_TENSOR_MAP_SWIZZLE_128B),
              "tma::Swizzle mirrors CUtensorMapSwizzle");
static_assert(tma::kInterleaveNone == int(CU_TENSOR_MAP_INTERLEAVE_NONE) &&
                  tma::kL2Promotion128B == int(CU_TENSOR_MAP_L2_PROMOTION_L2_128B) &&
                  tma::kOobFillZeros == int(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
              "tma constants mirror cuda.h");
static_assert(sizeof(TensorMapValue) == sizeof(CUtensorMap) && alignof(TensorMapValue) >= alignof(CUtensorMap),
              "TensorMapValue is a CUtensorMap");
static_assert(sizeof(cuuint64_t) == sizeof(uint64_t) && sizeof(cuuint32_t) == sizeof(uint32_t), "cuuint types");

namespace {

std::string joinNumbers(const uint64_t *v, size_t n) {
  std::string s = "[";
  for (size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

Status encodeWithDriver(const TensorMapEncoding &e, TensorMapValue &out) {
  auto d = Driver::get();
  if (!d) return d.error();
  CUresult rc = (*d)->cuTensorMapEncodeTiled(
      reinterpret_cast<CUtensorMap *>(&out), CUtensorMapDataType(e.dataType), e.rank, e.address,
      reinterpret_cast<const cuuint64_t *>(e.dims.data()), reinterpret_cast<const cuuint64_t *>(e.strides.data()),
      reinterpret_cast<const cuuint32_t *>(e.box.data()), reinterpret_cast<const cuuint32_t *>(e.elementStrides.data()),
      CUtensorMapInterleave(e.interleave), CUtensorMapSwizzle(e.swizzle), CUtensorMapL2promotion(e.l2Promotion),
      CUtensorMapFloatOOBfill(e.oobFill));
  if (rc == CUDA_SUCCESS) return Status();
  Error err = (*d)->error("cuTensorMapEncodeTiled", rc);
  uint64_t box[tma::kMaxRank];
  for (uint32_t i = 0; i < e.rank; ++i) box[i] = e.box[i];
  err.message += " (dims " + joinNumbers(e.dims.data(), e.rank) + ", byte strides " +
                 joinNumbers(e.strides.data(), e.rank - 1) + ", box " + joinNumbers(box, e.rank) + ", innermost first)";
  return err;
}

// The memory pool programs take their scratch from. By default the device's
// default pool (null here: cuMemAllocAsync), whose release threshold is 0: a
// training step's scratch (1 GB for an FFN backward at d = 4096) may go back
// to the driver at every synchronisation and be mapped again at the next
// launch. FLASHC_SCRATCH_POOL=keep (opt-in: not yet timed on a GPU) takes it
// from a pool for the process that keeps what it has allocated, one per context (by its ID: a reset context's
// pool is not reused). A dead context's pool is not destroyed (pools belong to the device, and whether a reset frees
// one is not known here): a process that makes many contexts should not ask for this.
Result<CUmemoryPool> scratchPool(const Driver &d, CUdevice device) {
  const char *v = std::getenv("FLASHC_SCRATCH_POOL");
  if (!v || std::string(v) != "keep")
    return CUmemoryPool(nullptr);
  auto context = currentContext(d);
  if (!context) return context.error();
  static std::mutex mutex;
  static std::map<unsigned long long, CUmemoryPool> pools;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = pools.find(context->id); it != pools.end()) return it->second;
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = static_cast<int>(device);
  CUmemoryPool pool = nullptr;
  if (CUresult rc = d.cuMemPoolCreate(&pool, &props); rc != CUDA_SUCCESS)
    return d.error("creating the scratch memory pool", rc);
  cuuint64_t keep = ~cuuint64_t(0);
  if (CUresult rc = d.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep); rc != CUDA_SUCCESS) {
    d.cuMemPoolDestroy(pool);
    return d.error("setting the scratch memory pool's release threshold", rc);
  }
  pools[context->id] = pool;
  return pool;
}

// One process-wide cache: tensor maps are plain values (no context), keyed by
// everything they encode, so bundles and threads share it.
TensorMapCache &tensorMapCache() {
  static TensorMapCache cache(encodeWithDriver);
  return cache;
}

} // namespace

Status Bundle::Impl::launchOne(const Driver &d, LoadedModule &m, KernelLaunch &launch, CUstream stream,
                               bool afterKernel) {
  const KernelSpec &k = *launch.kernel;
  if (launch.skip) return Status();
  if (Status s = ensureShared(d, m, k, launch.sharedBytes); !s) return s;
  // Kernel ABI order: tensors, tensor maps, scalars. cuLaunchKernel copies
  // the values these point at before it returns.
  if (launch.tensorMaps.size() != launch.tensorMapPlans.size())
    return makeError(ErrorCode::Internal, "kernel '" + k.name + "': tensor maps not encoded before the launch");
  std::vector<void *> params;
  for (auto &t : launch.tensors) params.push_back(&t);
  for (auto &t : launch.tensorMaps) params.push_back(&t);
  for (auto &s : launch.scalars) params.push_back(&s);
  CUfunction fn = m.functions.at(k.name);
  CUresult rc;
  if (k.programmatic && afterKernel) {
    CUlaunchAttribute attribute{};
    attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config{};
    config.gridDimX = launch.grid[0], config.gridDimY = launch.grid[1], config.gridDimZ = launch.grid[2];
    config.blockDimX = launch.block[0], config.blockDimY = launch.block[1], config.blockDimZ = launch.block[2];
    config.sharedMemBytes = launch.sharedBytes;
    config.hStream = stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
    rc = d.cuLaunchKernelEx(&config, fn, params.data(), nullptr);
  } else {
    rc = d.cuLaunchKernel(fn, launch.grid[0], launch.grid[1], launch.grid[2], launch.block[0], launch.block[1],
                          launch.block[2], launch.sharedBytes, stream, params.data(), nullptr);
  }
  if (rc != CUDA_SUCCESS) {
    Error e = d.error("cuLaunchKernel", rc);
    e.message = "kernel '" + k.name + "': " + e.message;
    return e;
  }
  return Status();
}

Status Bundle::launchKernel(const std::string &name, const Arguments &args, void *stream) {
  if (!impl_->manifest().findKernel(name))
    return makeError(ErrorCode::NotFound, "bundle " + impl_->dir + " has no kernel '" + name + "'");
  auto d = Driver::get();
  if (!d) return d.error();
  auto m = impl_->moduleForCurrentContext(**d);
  if (!m) return m.error();
  // The loaded variant's own kernel: its grid, block and shared memory were
  // planned for the device's architecture.
  const KernelSpec *k = (*m)->variant->manifest.findKernel(name);
  if (!k)
    return makeError(ErrorCode::NotFound, "bundle " + impl_->dir + ": kernel '" + name + "' is not in the " +
                                              (*m)->variant->arch + " variant that runs on this device (launch "
                                              "its program instead: kernels differ between architectures)");
  const DeviceLimits &limits = (*m)->limits.at(k->name);
  auto plan = (*m)->plans->kernel(name, args, [&] { return planKernelLaunch(*k, args, limits); });
  if (!plan) return plan.error();
  if (Status s = impl_->checkCallerTensors(**d, &*plan, 1, (*m)->device); !s) return s;
  if (Status s = encodeTensorMaps(*plan, tensorMapCache()); !s) return s;
  return impl_->launchOne(**d, **m, *plan, static_cast<CUstream>(stream));
}

// A program's launch plan on the current context's variant (each kernel
// checked against its own limits: block size and shared memory depend on the
// compiled function).
Result<ProgramLaunch> Bundle::Impl::planProgram(LoadedModule &m, const std::string &name, const Arguments &args) {
  return m.plans->program(name, args, [&]() -> Result<ProgramLaunch> {
    const Manifest &manifest = m.variant->manifest;
    const ProgramSpec *p = manifest.findProgram(name); // every variant has it (checked at open)
    std::map<std::string, DeviceLimits> kernelLimits;
    for (const auto &kn : p->kernels)
      kernelLimits[kn] = m.limits.at(kn);
    return planProgramLaunch(manifest, *p, args, kernelLimits.at(p->kernels.front()), &kernelLimits);
  });
}

Result<uint64_t> Bundle::workspaceBytes(const std::string &name, const Arguments &args) {
  if (impl_->manifest().findKernel(name)) return uint64_t(0);
  if (!impl_->manifest().findProgram(name))
    return makeError(ErrorCode::NotFound, "bundle " + impl_->dir + " has no kernel or program '" + name + "'");
  auto d = Driver::get();
  if (!d) return d.error();
  auto m = impl_->moduleForCurrentContext(**d);
  if (!m) return m.error();
  auto plan = impl_->planProgram(**m, name, args);
  if (!plan) return plan.error();
  return layOutWorkspace(plan->scratch).bytes;
}

namespace {
using namespace flashc::device;  // TableStatus
// The verdict of a program's on-device table check (the codes of flashc/device/table_status.h: decode's and an
// append's code, sequence, index, value; packed sequences' code, index, tensor, value), read after its kernels: an
// error in the caller's terms, or success.
// The message of verdict `st` of scratch `statusName`; rows: the launch's tensors' first dims by name.
Status verdictError(const int32_t st[4], const std::string &statusName, const std::map<std::string, int64_t> &rows);

std::map<std::string, int64_t> firstDims(const Arguments &args) {
  std::map<std::string, int64_t> rows;
  for (const auto &[name, t] : args.tensors())
    if (t.rank > 0) rows[name] = t.shape[0];
  return rows;
}

Status checkDeviceStatus(const Driver &drv, CUdeviceptr ptr, CUstream stream, const Arguments &args,
                         const std::string &statusName) {
  int32_t st[4] = {0, 0, 0, 0};
  // Under CUDA-graph capture nothing can wait: the kernels still write nothing for a bad table, but the launch
  // cannot say so (a captured decode loop checks its tables where it builds them).
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (CUresult rc = drv.cuStreamIsCapturing(stream, &capture); rc != CUDA_SUCCESS)
    return drv.error("asking whether the stream is capturing", rc);
  if (capture != CU_STREAM_CAPTURE_STATUS_NONE)
    return Status();
  if (CUresult rc = drv.cuStreamSynchronize(stream); rc != CUDA_SUCCESS)
    return drv.error("waiting for the table check", rc);
  if (CUresult rc = drv.cuMemcpyDtoH(st, ptr, sizeof(st)); rc != CUDA_SUCCESS)
    return drv.error("reading the table check", rc);
  return verdictError(st, statusName, firstDims(args));
}

Status verdictError(const int32_t st[4], const std::string &statusName, const std::map<std::string, int64_t> &rows) {
  // the op's tensors: k_cache, q, k, or k_cache2 ... beside status2 (a program's second op), status_append2
  std::string suffix = statusName.substr(std::min<size_t>(statusName.size(), 6));
  const bool append = suffix.rfind("_append", 0) == 0;
  if (append) suffix = suffix.substr(7);
  // What the kernels did after the check failed: the op's outputs NaN (never mistaken for results when the
  // verdict is read later), nothing else written; an append copies nothing (a decode that took its verdict, over
  // its caches and lengths, has NaN outputs).
  const std::string rejected = append ? "; nothing was appended to the caches (a decode over them with these lengths "
                                        "has NaN outputs)"
                                      : "; this op's outputs hold NaN and nothing else was written";
  // An append's lengths count its new tokens: say so beside the value (a binding may have added them).
  const std::string withNew = append ? " (the length with the new tokens)" : "";
  const std::string seq = std::to_string(st[1]), value = std::to_string(st[3]);
  auto firstDim = [&](const std::string &tensor) {
    auto it = rows.find(tensor);
    return it == rows.end() ? std::string("?") : std::to_string(it->second);
  };
  const std::string pages = firstDim("k_cache" + suffix);
  switch (st[0]) {
  case kTableOk:
    return Status();
  case kSeqlenNegative:
    return makeError(ErrorCode::InvalidArgument, "cache_seqlens[" + seq + "] = " + value + withNew +
                                                     " is negative (sequence " + seq + ")" + rejected);
  case kSeqlenOverCapacity:
    return makeError(ErrorCode::InvalidArgument,
                     "cache_seqlens[" + seq + "] = " + value + withNew + " is over the cache's " + std::to_string(st[2]) + " rows (sequence " + seq +
                         ")" + rejected);
  case kPageOutOfRange:
    return makeError(ErrorCode::InvalidArgument,
                     "block_table[" + seq + "][" + std::to_string(st[2]) + "] = " + value +
                         " is not a page of the cache (0 to " + pages + " - 1), and sequence " + seq +
                         " uses that entry" + rejected);
  case kSeqlenBelowNew:
    // An append's (kv_append.cuh): lengths count the new tokens, so each is at least T.
    return makeError(ErrorCode::InvalidArgument,
                     "cache_seqlens[" + seq + "] = " + value + withNew + " is below the " + std::to_string(st[2]) +
                         " new tokens appended (sequence " + seq +
                         "; lengths count the new tokens, which go to rows length - T ..)" + rejected);
  case kOffsetsDecrease:
  case kOffsetPastRows:
  case kFirstOffsetNegative: {
    // A packed-sequences op's offsets: index, tensor (0: cu_seqlens_q, 1: cu_seqlens_k).
    const bool keys = st[2] == 1;
    const std::string cu = (keys ? "cu_seqlens_k" : "cu_seqlens_q") + suffix, index = std::to_string(st[1]);
    const std::string entry = cu + "[" + index + "] = " + value;
    if (st[0] == kOffsetsDecrease)
      return makeError(ErrorCode::InvalidArgument, entry + " is below " + cu + "[" + std::to_string(st[1] - 1) +
                                                       "]: offsets must not decrease (sequence " +
                                                       std::to_string(st[1] - 1) +
                                                       " would have a negative length)" + rejected);
    if (st[0] == kOffsetPastRows) {
      const std::string tensor = (keys ? "k" : "q") + suffix;
      return makeError(ErrorCode::InvalidArgument, entry + " is past the " + firstDim(tensor) + " rows of " + tensor +
                                                       rejected);
    }
    return makeError(ErrorCode::InvalidArgument, entry + " is negative" + rejected);
  }
  default:
    return makeError(ErrorCode::Internal, "unknown table-check code " +
                                              std::to_string(st[0]));
  }
}
}  // namespace

Status Bundle::Impl::deferVerdict(const Driver &d, CUdeviceptr ptr, CUstream stream, const Arguments &args,
                                  const std::string &program, const std::string &statusName) {
  auto current = currentContext(d);
  if (!current) return current.error();
  const unsigned long long ctx = current->id;
  std::lock_guard<std::mutex> lock(verdictMutex);
  // A free slot of this context, else a new one (up to 64, after the slots of dead contexts are dropped), else the
  // oldest busy one, read first.
  PendingVerdict *slot = nullptr;
  Status oldest;
  for (auto &v : verdicts)
    if (!v.busy && v.context.id == ctx) slot = &v;
  if (!slot && verdicts.size() >= 64)
    for (auto dead = verdicts.begin(); dead != verdicts.end();) {
      if (dead->context.id == ctx || contextAlive(d, dead->context)) {
        ++dead;
        continue;
      }
      if (dead->busy) --pendingVerdicts;
      dead = verdicts.erase(dead);
    }
  if (!slot && verdicts.size() < 64) {
    PendingVerdict v;
    v.context = *current;
    if (CUresult rc = d.cuMemHostAlloc(reinterpret_cast<void **>(&v.host), 16, 0); rc != CUDA_SUCCESS)
      return d.error("allocating pinned memory for a deferred check", rc);
    if (CUresult rc = d.cuEventCreate(&v.event, CU_EVENT_DISABLE_TIMING); rc != CUDA_SUCCESS) {
      d.cuMemFreeHost(v.host);
      return d.error("creating an event for a deferred check", rc);
    }
    verdicts.push_back(std::move(v));
    slot = &verdicts.back();
  }
  if (!slot) {
    for (auto &v : verdicts)
      if (v.context.id == ctx && v.busy && (!slot || v.order < slot->order)) slot = &v;
    if (!slot) return makeError(ErrorCode::Internal, "64 deferred checks pending in other contexts");
    if (CUresult rc = d.cuEventSynchronize(slot->event); rc != CUDA_SUCCESS)
      return d.error("waiting for a deferred check", rc);
    if (slot->host[0] != 0) {
      oldest = verdictError(slot->host, slot->statusName, slot->rows);
      Error e = oldest.error();
      // (Read because the slots were full: this launch's kernels are already enqueued, unlike a launch that
      // collectVerdicts stops; the caller must not take it as not made and launch it again.)
      e.message = "an earlier launch of program '" + slot->program + "': " + e.message +
                  " (read to free a slot of the deferred checks; this launch was made, and its own checks are "
                  "pending)";
      oldest = e;
    }
  }
  if (CUresult rc = d.cuMemcpyDtoHAsync(slot->host, ptr, 16, stream); rc != CUDA_SUCCESS)
    return d.error("copying a check's verdict", rc);
  if (CUresult rc = d.cuEventRecord(slot->event, stream); rc != CUDA_SUCCESS)
    return d.error("recording a deferred check", rc);
  if (!slot->busy) ++pendingVerdicts;
  slot->busy = true;
  slot->order = ++verdictOrder;
  slot->program = program;
  slot->statusName = statusName;
  slot->rows = firstDims(args);
  return oldest;
}

Status Bundle::Impl::collectVerdicts(const Driver &d, bool wait) {
  if (pendingVerdicts.load(std::memory_order_acquire) == 0)
    return Status();
  std::lock_guard<std::mutex> lock(verdictMutex);
  std::vector<PendingVerdict *> busy;
  for (auto &v : verdicts)
    if (v.busy) busy.push_back(&v);
  std::sort(busy.begin(), busy.end(), [](auto *a, auto *b) { return a->order < b->order; });
  Status first;
  for (PendingVerdict *v : busy) {
    if (!contextAlive(d, v->context)) {  // its launch and its event went with its context: nothing to report
      v->busy = false;
      --pendingVerdicts;
      continue;
    }
    CUresult rc = wait ? d.cuEventSynchronize(v->event) : d.cuEventQuery(v->event);
    if (rc == CUDA_ERROR_NOT_READY) continue;
    v->busy = false;
    --pendingVerdicts;
    if (rc != CUDA_SUCCESS) {
      if (first) first = d.error("waiting for a deferred check", rc);
      continue;
    }
    if (v->host[0] != 0 && first) {
      Error e = verdictError(v->host, v->statusName, v->rows).error();
      e.message = "an earlier launch of program '" + v->program + "': " + e.message;
      first = e;
    }
  }
  return first;
}

void Bundle::deferChecks(bool defer) {
  std::lock_guard<std::mutex> lock(impl_->verdictMutex);
  impl_->deferVerdicts = defer;
}

Status Bundle::checkDeferred(bool wait) {
  auto d = Driver::get();
  if (!d) return d.error();
  return impl_->collectVerdicts(**d, wait);
}

Status Bundle::launchProgram(const std::string &name, const Arguments &args, void *stream, const Workspace *workspace) {
  if (!impl_->manifest().findProgram(name))
    return makeError(ErrorCode::NotFound, "bundle " + impl_->dir + " has no program '" + name + "'");
  auto d = Driver::get();
  if (!d) return d.error();
  const Driver &drv = **d;
  // An earlier deferred launch found a bad entry: its error, and this launch is not made.
  if (Status s = impl_->collectVerdicts(drv, false); !s) {
    Error e = s.error();
    e.message += " (launch of program '" + name + "' not made)";
    return e;
  }
  auto m = impl_->moduleForCurrentContext(drv);
  if (!m) return m.error();
  auto plan = impl_->planProgram(**m, name, args);
  if (!plan) return plan.error();
  auto cuStream = static_cast<CUstream>(stream);
  std::vector<CUdeviceptr> allocations;
  Status status;
  // Scratch from the caller's workspace (checked: size, alignment, device
  // memory of this device covering it, no tensor argument in the bytes used), else from the runtime's pool.
  WorkspaceLayout layout;
  TensorBytes scratchBytes;
  if (workspace) {
    layout = layOutWorkspace(plan->scratch);
    if (Status s = checkWorkspace(layout, workspace->data, workspace->bytes, name); !s) return s;
    if (layout.bytes > 0) {
      if (Status s = impl_->checkWorkspaceMemory(drv, workspace->data, layout.bytes, (*m)->device, name); !s) return s;
      scratchBytes.first = reinterpret_cast<uint64_t>(workspace->data);
      scratchBytes.last = scratchBytes.first + (layout.bytes - 1);
      scratchBytes.dense = scratchBytes.written = scratchBytes.workspace = true;
    }
  }
  if (Status s = impl_->checkCallerTensors(drv, plan->kernels.data(), plan->kernels.size(), (*m)->device,
                                           scratchBytes.workspace ? &scratchBytes : nullptr);
      !s)
    return s;
  CUmemoryPool pool = nullptr;
  if (!plan->scratch.empty() && !workspace) {
    auto found = scratchPool(drv, (*m)->device);
    if (!found) return found.error();
    pool = *found;
  }
  for (size_t i = 0; i < plan->scratch.size(); ++i) {
    const ScratchAllocation &sc = plan->scratch[i];
    CUdeviceptr ptr = 0;
    if (sc.bytes > 0) {
      if (workspace) {
        ptr = reinterpret_cast<CUdeviceptr>(workspace->data) + layout.offsets[i];
      } else {
        CUresult rc = pool ? drv.cuMemAllocFromPoolAsync(&ptr, size_t(sc.bytes), pool, cuStream)
                           : drv.cuMemAllocAsync(&ptr, size_t(sc.bytes), cuStream);
        if (rc != CUDA_SUCCESS) {
          status = drv.error(("allocating scratch '" + sc.name + "' of " + std::to_string(sc.bytes) + " bytes").c_str(), rc);
          break;
        }
        allocations.push_back(ptr);
      }
      if (sc.zeroFill)
        if (CUresult rc = drv.cuMemsetD8Async(ptr, 0, size_t(sc.bytes), cuStream); rc != CUDA_SUCCESS) {
          status = drv.error("zero-filling scratch", rc);
          break;
        }
    }
    plan->setScratchPointer(sc.name, reinterpret_cast<void *>(ptr));
  }
  // Every tensor map is encoded (scratch pointers are known now) before the
  // first kernel runs.
  if (status)
    for (auto &kl : plan->kernels)
      if (status = encodeTensorMaps(kl, tensorMapCache()); !status) break;
  if (status) {
    bool afterKernel = false;  // (the program's first kernel follows the scratch's zero-fill or the caller's work)
    for (auto &kl : plan->kernels) {
      if (status = impl_->launchOne(drv, **m, kl, cuStream, afterKernel); !status) break;
      afterKernel |= !kl.skip;
    }
  }
  // A program whose kernels check their tables on the device (decode over a KV cache: `meta status <scratch>`)
  // reports what they found: the kernels wrote nothing, the error names the sequence.
  const ProgramSpec *spec = impl_->manifest().findProgram(name);
  std::set<std::string> verdicts;  // `meta status a,b`: each decode op's verdict
  if (auto it = spec->meta.find("status"); it != spec->meta.end())
    for (size_t start = 0; start <= it->second.size();) {
      size_t comma = std::min(it->second.find(',', start), it->second.size());
      verdicts.insert(it->second.substr(start, comma - start));
      start = comma + 1;
    }
  // A deferred check may read an older launch's verdict to free its slot; that error is reported once every check
  // of this launch is queued, so that the message's "its own check is pending" holds for all of them.
  Status earlier;
  if (status && !verdicts.empty())
    for (size_t i = 0; status && i < plan->scratch.size(); ++i)
      if (verdicts.count(plan->scratch[i].name) && plan->scratch[i].bytes >= 16) {
        CUdeviceptr ptr = workspace ? reinterpret_cast<CUdeviceptr>(workspace->data) + layout.offsets[i] : 0;
        if (!workspace) {
          size_t nth = 0;  // the allocations are in scratch order, skipping empty ones
          for (size_t j = 0; j < i; ++j) nth += plan->scratch[j].bytes > 0;
          ptr = allocations[nth];
        }
        bool defer;
        {
          std::lock_guard<std::mutex> lock(impl_->verdictMutex);
          defer = impl_->deferVerdicts;
        }
        CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
        if (defer && drv.cuStreamIsCapturing(cuStream, &capture) == CUDA_SUCCESS &&
            capture == CU_STREAM_CAPTURE_STATUS_NONE) {
          Status deferred = impl_->deferVerdict(drv, ptr, cuStream, args, name, plan->scratch[i].name);
          if (!deferred && earlier.ok()) earlier = deferred;
        } else {
          status = checkDeviceStatus(drv, ptr, cuStream, args, plan->scratch[i].name);
        }
      }
  if (status && !earlier.ok()) status = earlier;
  for (CUdeviceptr ptr : allocations) drv.cuMemFreeAsync(ptr, cuStream); // stream-ordered after the kernels
  if (!status) {
    Error e = status.error();
    e.message = "program '" + name + "': " + e.message;
    return e;
  }
  return Status();
}

Status Bundle::launch(const std::string &name, const Arguments &args, void *stream, const Workspace *workspace) {
  if (impl_->manifest().findKernel(name)) return launchKernel(name, args, stream);
  if (impl_->manifest().findProgram(name)) return launchProgram(name, args, stream, workspace);
  return makeError(ErrorCode::NotFound, "bundle " + impl_->dir + " has no kernel or program '" + name + "'");
}

Result<std::vector<int64_t>> Bundle::paramShape(const std::string &name, const std::string &param,
                                                const Arguments &args) const {
  return resolveParamShape(impl_->manifest(), name, param, args);
}

} // namespace flashc::rt
