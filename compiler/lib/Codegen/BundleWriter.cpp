// Bundle directory writer (see BundleWriter.h). No exceptions: the compiler is
// built without them, so only error_code overloads of <filesystem> are used.
#include "flashc/Compiler/BundleWriter.h"

#include "flashc/runtime/Arch.h"
#include "flashc/runtime/BundleIndex.h"
#include "flashc/runtime/KernelCache.h"
#include "flashc/runtime/Nvrtc.h"
#include "flashc/runtime/ParallelCompile.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <unistd.h>

namespace fs = std::filesystem;

namespace flashc {
namespace {

rt::Error ioError(const std::string &what) { return rt::makeError(rt::ErrorCode::Internal, what); }

rt::Status writeFile(const fs::path &path, const char *data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, std::streamsize(size));
  out.flush();
  if (!out) return ioError("cannot write " + path.string());
  return rt::Status();
}

/// A version-1 bundle being prepared (a single-arch bundle, or one variant of
/// a multi-arch bundle): its manifest with the cubin lines set, and the
/// cubins' bytes once compiled (same order as manifest.cubins).
struct PendingBundle {
  rt::Manifest manifest;
  const BundleSource *source = nullptr;
  std::string variantArch; // a variant's arch (prefixes its errors); empty for a single-arch bundle
  std::vector<std::vector<char>> cubins;
};

/// One NVRTC compile: its request, and where its cubin goes.
struct CompileJob {
  size_t bundle = 0;
  int cubin = -1; // index into that bundle's manifest.cubins; -1: only checked, then discarded
  std::string label;
  rt::CompileRequest request;
};

/// <first kernel>.<arch>.cubin, or with the unit's index before the arch where
/// another unit's first kernel differs only by letter case (the two files
/// would be one on a case-insensitive file system).
std::string unitCubinFile(const std::vector<KernelUnit> &units, const KernelUnit &unit, const std::string &arch) {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
  };
  const std::string &name = unit.kernels.front();
  bool clash = std::any_of(units.begin(), units.end(), [&](const KernelUnit &other) {
    return &other != &unit && other.kernels.front() != name && lower(other.kernels.front()) == lower(name);
  });
  if (!clash) return name + "." + arch + ".cubin";
  return name + "." + std::to_string(&unit - units.data()) + "." + arch + ".cubin";
}

/// Sets the cubin lines of `b` (one per arch, or one per kernel and arch),
/// validates, and appends its compiles to `jobs` (nothing is compiled yet).
rt::Status plan(PendingBundle &b, size_t index, const std::vector<std::string> &cubinArchs, bool checkAllArchs,
                const BundleWriteOptions &options, std::vector<CompileJob> &jobs) {
  rt::Manifest &manifest = b.manifest;
  const std::vector<KernelUnit> &units = b.source->kernelUnits;
  if (!units.empty()) {
    // Every manifest kernel in exactly one unit.
    std::vector<std::string> covered;
    for (const auto &u : units) {
      if (u.kernels.empty()) return rt::makeError(rt::ErrorCode::Internal, "a kernel unit launched by no kernel");
      covered.insert(covered.end(), u.kernels.begin(), u.kernels.end());
    }
    std::vector<std::string> names;
    for (const auto &k : manifest.kernels) names.push_back(k.name);
    std::sort(covered.begin(), covered.end());
    std::sort(names.begin(), names.end());
    if (covered != names)
      return rt::makeError(rt::ErrorCode::Internal, "the kernel units hold " + std::to_string(covered.size()) +
                                                        " kernels, not the manifest's " + std::to_string(names.size()) +
                                                        " each once");
  }
  // The device library the source was generated against: a runtime that compiles it (no cubin for its device)
  // with other headers refuses it.
  std::string fingerprint = rt::directoryFingerprint(rt::deviceIncludeDir(options.deviceIncludeDir));
  manifest.deviceLibrary = fingerprint == "none" ? "" : fingerprint;
  manifest.cubins.clear();
  for (const auto &arch : cubinArchs) {
    if (!rt::parseArch(arch))
      return rt::makeError(rt::ErrorCode::InvalidArgument, "bad cubin architecture '" + arch + "' (expected e.g. sm_90a)");
    if (units.empty())
      manifest.cubins.push_back({arch, "kernels." + arch + ".cubin", {}, 0});
    else
      for (const auto &u : units) manifest.cubins.push_back({arch, unitCubinFile(units, u, arch), u.kernels, 0});
  }
  if (rt::Status s = rt::validateManifest(manifest); !s) return s;
  if (manifest.source.find('/') != std::string::npos)
    return rt::makeError(rt::ErrorCode::InvalidArgument, "source '" + manifest.source + "' must be a plain file name");

  std::vector<std::string> archs = cubinArchs;
  if (checkAllArchs)
    for (const auto &a : manifest.archs)
      if (std::find(archs.begin(), archs.end(), a) == archs.end()) archs.push_back(a);
  for (const auto &arch : archs) {
    bool shipped = std::find(cubinArchs.begin(), cubinArchs.end(), arch) != cubinArchs.end();
    size_t unitCount = units.empty() ? 1 : units.size();
    for (size_t u = 0; u < unitCount; ++u) {
      CompileJob job;
      job.bundle = index;
      if (shipped) {
        auto it = std::find_if(manifest.cubins.begin(), manifest.cubins.end(), [&](const rt::CubinSpec &c) {
          return c.arch == arch && (units.empty() || c.kernels.front() == units[u].kernels.front());
        });
        job.cubin = int(it - manifest.cubins.begin());
      }
      job.request.source = units.empty() ? b.source->text : units[u].text;
      job.request.sourceName = units.empty() ? manifest.source : units[u].kernels.front() + ".cu";
      job.request.arch = arch;
      job.request.options = manifest.nvrtcOptions;
      job.request.deviceIncludeDir = options.deviceIncludeDir;
      std::string what = units.empty() ? manifest.source : units[u].kernels.front();
      if (!units.empty() && units[u].kernels.size() > 1)
        what += " (also " + std::to_string(units[u].kernels.size() - 1) + " more kernel" +
                (units[u].kernels.size() > 2 ? "s" : "") + " of the same code)";
      job.label = what + " for " + arch;
      jobs.push_back(std::move(job));
    }
  }
  b.cubins.assign(manifest.cubins.size(), {});
  return rt::Status();
}

/// Runs every compile (in parallel, through the kernel cache) and stores the
/// cubins; the first failure in job order is the error.
rt::Status compileAll(std::vector<PendingBundle> &bundles, std::vector<CompileJob> &jobs,
                      const BundleWriteOptions &options) {
  std::optional<rt::KernelCache> cache;
  if (options.useCache && !rt::kernelCacheDisabled())
    cache.emplace(options.cacheDir.empty() ? rt::defaultCacheDir() : options.cacheDir);
  std::vector<rt::CompileRequest> requests;
  for (const auto &job : jobs) requests.push_back(job.request);
  rt::ParallelCompileOptions parallel;
  parallel.jobs = options.jobs;
  parallel.cache = cache ? &*cache : nullptr;
  size_t done = 0;
  if (options.onUnitDone)
    parallel.onDone = [&](size_t i, const rt::Result<rt::CachedCompile> &r, double seconds) {
      UnitReport report;
      report.unit = jobs[i].label;
      report.seconds = seconds;
      report.fromCache = r.ok() && r->source != rt::CachedCompile::Compiled;
      report.done = ++done;
      report.total = jobs.size();
      options.onUnitDone(report);
    };
  std::vector<rt::Result<rt::CachedCompile>> results = rt::compileCudaParallel(requests, parallel);
  for (size_t i = 0; i < jobs.size(); ++i) {
    PendingBundle &b = bundles[jobs[i].bundle];
    if (!results[i]) {
      rt::Error e = results[i].error();
      if (!b.variantArch.empty()) e.message = b.variantArch + ": " + e.message;
      return e;
    }
    if (jobs[i].cubin >= 0) b.cubins[size_t(jobs[i].cubin)] = std::move(results[i]->cubin);
  }
  return rt::Status();
}

/// Writes one version-1 bundle's files into the existing directory `dir`.
rt::Status writeFiles(const fs::path &dir, const PendingBundle &b) {
  const std::string &source = b.source->text;
  rt::Status status = writeFile(dir / b.manifest.source, source.data(), source.size());
  for (size_t i = 0; status && i < b.manifest.cubins.size(); ++i)
    status = writeFile(dir / b.manifest.cubins[i].file, b.cubins[i].data(), b.cubins[i].size());
  if (status) {
    std::string text = rt::writeManifest(b.manifest);
    status = writeFile(dir / "manifest.flashc", text.data(), text.size());
  }
  return status;
}

/// Fills a temporary directory beside `dir` with `fill`, then renames it onto
/// `dir` (replacing an existing bundle when allowed): a reader never sees a
/// half-written bundle.
rt::Status writeAtomically(const std::string &dir, const BundleWriteOptions &options,
                           const std::function<rt::Status(const fs::path &)> &fill) {
  std::error_code ec;
  // The bundle's own path, absolute and without a trailing separator, `.` or `..` (`-o b/` made the temporary
  // directory inside the target and `-o .` beside it as `..tmp-PID`; both removed the old bundle, then failed).
  fs::path target = fs::weakly_canonical(fs::absolute(fs::path(dir), ec), ec);
  if (ec || target.filename().empty() || target == target.root_path())
    return rt::makeError(rt::ErrorCode::InvalidArgument, "cannot write a bundle at " + dir + ": not a directory path" +
                                                             (ec ? " (" + ec.message() + ")" : std::string()));
  std::error_code cwdError;
  fs::path cwd = fs::current_path(cwdError);
  if (!cwdError) {
    // The working directory inside (or at) the target: renaming it away would pull the directory from under us.
    auto [end, at] = std::mismatch(target.begin(), target.end(), cwd.begin(), cwd.end());
    if (end == target.end())
      return rt::makeError(rt::ErrorCode::InvalidArgument,
                           "cannot write a bundle at " + dir + ": it holds the working directory");
  }
  if (fs::exists(target, ec)) {
    bool isBundle = fs::exists(target / "manifest.flashc", ec);
    bool isEmpty = fs::is_directory(target, ec) && fs::is_empty(target, ec);
    if (!isEmpty && !(isBundle && options.overwrite))
      return rt::makeError(rt::ErrorCode::InvalidArgument,
                           "refusing to overwrite " + dir + (isBundle ? " (overwrite disabled)" : ": not a flashc bundle"));
  }
  const std::string pid = std::to_string(getpid());
  fs::path tmp = target.parent_path() / ("." + target.filename().string() + ".tmp-" + pid);
  fs::path old = target.parent_path() / ("." + target.filename().string() + ".old-" + pid);
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp, ec) || ec) return ioError("cannot create " + tmp.string() + ": " + ec.message());
  if (rt::Status status = fill(tmp); !status) {
    fs::remove_all(tmp, ec);
    return status;
  }
  // The old bundle is moved aside, not removed, until the new one is in its place: a failure keeps it.
  bool replacing = fs::exists(target, ec);
  if (replacing) {
    fs::remove_all(old, ec);
    fs::rename(target, old, ec);
    if (ec) {
      std::string why = ec.message();
      fs::remove_all(tmp, ec);
      return ioError("cannot replace the bundle at " + dir + ": " + why);
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::string why = ec.message();
    std::error_code ignored;
    if (replacing)
      fs::rename(old, target, ignored);
    fs::remove_all(tmp, ignored);
    return ioError("cannot move the bundle into " + dir + ": " + why);
  }
  if (replacing)
    fs::remove_all(old, ec);
  return rt::Status();
}

} // namespace

rt::Status writeBundle(const std::string &dir, rt::Manifest manifest, const BundleSource &source,
                       const BundleWriteOptions &options) {
  if (dir.empty()) return rt::makeError(rt::ErrorCode::InvalidArgument, "no bundle directory given (empty path)");
  // Compile first: nothing is written for a bundle that does not compile.
  std::vector<PendingBundle> bundles(1);
  bundles[0].manifest = std::move(manifest);
  bundles[0].source = &source;
  std::vector<CompileJob> jobs;
  if (rt::Status s = plan(bundles[0], 0, options.cubinArchs, options.checkAllArchs, options, jobs); !s) return s;
  if (rt::Status s = compileAll(bundles, jobs, options); !s) return s;
  return writeAtomically(dir, options, [&](const fs::path &tmp) { return writeFiles(tmp, bundles[0]); });
}

rt::Status writeBundle(const std::string &dir, rt::Manifest manifest, const std::string &source,
                       const BundleWriteOptions &options) {
  return writeBundle(dir, std::move(manifest), BundleSource{source, {}}, options);
}

rt::Status writeMultiArchBundle(const std::string &dir, std::vector<ArchVariant> variants,
                                const BundleWriteOptions &options) {
  if (dir.empty()) return rt::makeError(rt::ErrorCode::InvalidArgument, "no bundle directory given (empty path)");
  if (variants.empty()) return rt::makeError(rt::ErrorCode::InvalidArgument, "a multi-arch bundle needs a variant");
  rt::BundleIndex index;
  index.flashcVersion = variants.front().manifest.flashcVersion;
  std::vector<PendingBundle> bundles(variants.size());
  std::vector<CompileJob> jobs;
  for (size_t i = 0; i < variants.size(); ++i) {
    ArchVariant &v = variants[i];
    index.variants.push_back({v.arch, v.arch});
    v.manifest.archs = {v.arch};
    PendingBundle &b = bundles[i];
    b.manifest = v.manifest;
    b.source = &v.source;
    b.variantArch = v.arch;
    // Each variant carries only its own arch's cubins: the others' code was
    // planned for another target.
    std::vector<std::string> cubinArchs;
    if (std::find(options.cubinArchs.begin(), options.cubinArchs.end(), v.arch) != options.cubinArchs.end())
      cubinArchs.push_back(v.arch);
    if (rt::Status s = plan(b, i, cubinArchs, /*checkAllArchs=*/false, options, jobs); !s) {
      rt::Error e = s.error();
      e.message = v.arch + ": " + e.message;
      return e;
    }
    for (const auto &p : variants.front().manifest.programs)
      if (!v.manifest.findProgram(p.name))
        return rt::makeError(rt::ErrorCode::Internal, "variant " + v.arch + " has no program '" + p.name +
                                                          "' (variant " + variants.front().arch + " has it)");
    if (v.manifest.programs.size() != variants.front().manifest.programs.size())
      return rt::makeError(rt::ErrorCode::Internal, "variants " + variants.front().arch + " and " + v.arch +
                                                        " have different programs");
  }
  if (rt::Status s = rt::validateBundleIndex(index); !s) return s;
  if (rt::Status s = compileAll(bundles, jobs, options); !s) return s;
  return writeAtomically(dir, options, [&](const fs::path &tmp) -> rt::Status {
    for (size_t i = 0; i < bundles.size(); ++i) {
      std::error_code ec;
      fs::path sub = tmp / index.variants[i].directory;
      if (!fs::create_directories(sub, ec) || ec) return ioError("cannot create " + sub.string() + ": " + ec.message());
      if (rt::Status s = writeFiles(sub, bundles[i]); !s) return s;
    }
    std::string text = rt::writeBundleIndex(index);
    return writeFile(tmp / "manifest.flashc", text.data(), text.size());
  });
}

} // namespace flashc
