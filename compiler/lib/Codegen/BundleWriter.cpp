// Bundle directory writer (see BundleWriter.h). No exceptions: the compiler is
// built without them, so only error_code overloads of <filesystem> are used.
#include "flashc/Compiler/BundleWriter.h"

#include "flashc/runtime/Arch.h"
#include "flashc/runtime/BundleIndex.h"
#include "flashc/runtime/Nvrtc.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
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

/// Sets the cubin lines, validates, and compiles (nothing is written yet).
rt::Status prepare(rt::Manifest &manifest, const std::string &source, const std::vector<std::string> &cubinArchs,
                   const BundleWriteOptions &options, std::vector<std::vector<char>> &cubins) {
  manifest.cubins.clear();
  for (const auto &arch : cubinArchs) {
    if (!rt::parseArch(arch))
      return rt::makeError(rt::ErrorCode::InvalidArgument, "bad cubin architecture '" + arch + "' (expected e.g. sm_90a)");
    manifest.cubins.push_back({arch, "kernels." + arch + ".cubin"});
  }
  if (rt::Status s = rt::validateManifest(manifest); !s) return s;
  if (manifest.source.find('/') != std::string::npos)
    return rt::makeError(rt::ErrorCode::InvalidArgument, "source '" + manifest.source + "' must be a plain file name");

  std::vector<std::string> archs = cubinArchs;
  if (options.checkAllArchs)
    for (const auto &a : manifest.archs)
      if (std::find(archs.begin(), archs.end(), a) == archs.end()) archs.push_back(a);
  for (const auto &arch : archs) {
    rt::CompileRequest req;
    req.source = source;
    req.sourceName = manifest.source;
    req.arch = arch;
    req.options = manifest.nvrtcOptions;
    req.deviceIncludeDir = options.deviceIncludeDir;
    auto out = rt::compileCuda(req);
    if (!out) return out.error();
    cubins.push_back(std::move(out->cubin));
  }
  return rt::Status();
}

/// Writes one version-1 bundle's files into the existing directory `dir`.
rt::Status writeFiles(const fs::path &dir, const rt::Manifest &manifest, const std::string &source,
                      const std::vector<std::vector<char>> &cubins) {
  rt::Status status = writeFile(dir / manifest.source, source.data(), source.size());
  for (size_t i = 0; status && i < manifest.cubins.size(); ++i)
    status = writeFile(dir / manifest.cubins[i].file, cubins[i].data(), cubins[i].size());
  if (status) {
    std::string text = rt::writeManifest(manifest);
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
  fs::path target(dir);
  if (fs::exists(target, ec)) {
    bool isBundle = fs::exists(target / "manifest.flashc", ec);
    bool isEmpty = fs::is_directory(target, ec) && fs::is_empty(target, ec);
    if (!isEmpty && !(isBundle && options.overwrite))
      return rt::makeError(rt::ErrorCode::InvalidArgument,
                           "refusing to overwrite " + dir + (isBundle ? " (overwrite disabled)" : ": not a flashc bundle"));
  }
  fs::path tmp = target;
  tmp += ".tmp-" + std::to_string(getpid());
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp, ec) || ec) return ioError("cannot create " + tmp.string() + ": " + ec.message());
  if (rt::Status status = fill(tmp); !status) {
    fs::remove_all(tmp, ec);
    return status;
  }
  fs::remove_all(target, ec);
  fs::rename(tmp, target, ec);
  if (ec) {
    std::string why = ec.message();
    fs::remove_all(tmp, ec);
    return ioError("cannot move the bundle into " + dir + ": " + why);
  }
  return rt::Status();
}

} // namespace

rt::Status writeBundle(const std::string &dir, rt::Manifest manifest, const std::string &source,
                       const BundleWriteOptions &options) {
  if (dir.empty()) return rt::makeError(rt::ErrorCode::InvalidArgument, "no bundle directory given (empty path)");
  // Compile first: nothing is written for a bundle that does not compile.
  std::vector<std::vector<char>> cubins;
  if (rt::Status s = prepare(manifest, source, options.cubinArchs, options, cubins); !s) return s;
  return writeAtomically(dir, options, [&](const fs::path &tmp) { return writeFiles(tmp, manifest, source, cubins); });
}

rt::Status writeMultiArchBundle(const std::string &dir, std::vector<ArchVariant> variants,
                                const BundleWriteOptions &options) {
  if (dir.empty()) return rt::makeError(rt::ErrorCode::InvalidArgument, "no bundle directory given (empty path)");
  if (variants.empty()) return rt::makeError(rt::ErrorCode::InvalidArgument, "a multi-arch bundle needs a variant");
  rt::BundleIndex index;
  index.flashcVersion = variants.front().manifest.flashcVersion;
  std::vector<std::vector<std::vector<char>>> cubins(variants.size());
  for (size_t i = 0; i < variants.size(); ++i) {
    ArchVariant &v = variants[i];
    index.variants.push_back({v.arch, v.arch});
    v.manifest.archs = {v.arch};
    // Each variant carries only its own arch's cubin: the others' code was
    // planned for another target.
    std::vector<std::string> cubinArchs;
    if (std::find(options.cubinArchs.begin(), options.cubinArchs.end(), v.arch) != options.cubinArchs.end())
      cubinArchs.push_back(v.arch);
    BundleWriteOptions own = options;
    own.checkAllArchs = false;
    if (rt::Status s = prepare(v.manifest, v.source, cubinArchs, own, cubins[i]); !s) {
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
  return writeAtomically(dir, options, [&](const fs::path &tmp) -> rt::Status {
    for (size_t i = 0; i < variants.size(); ++i) {
      std::error_code ec;
      fs::path sub = tmp / index.variants[i].directory;
      if (!fs::create_directories(sub, ec) || ec) return ioError("cannot create " + sub.string() + ": " + ec.message());
      if (rt::Status s = writeFiles(sub, variants[i].manifest, variants[i].source, cubins[i]); !s) return s;
    }
    std::string text = rt::writeBundleIndex(index);
    return writeFile(tmp / "manifest.flashc", text.data(), text.size());
  });
}

} // namespace flashc
