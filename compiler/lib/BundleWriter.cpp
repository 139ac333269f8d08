// Bundle directory writer (see BundleWriter.h). No exceptions: the compiler is
// built without them, so only error_code overloads of <filesystem> are used.
#include "flashc/Compiler/BundleWriter.h"

#include "flashc/runtime/Arch.h"
#include "flashc/runtime/Nvrtc.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
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

} // namespace

rt::Status writeBundle(const std::string &dir, rt::Manifest manifest, const std::string &source,
                       const BundleWriteOptions &options) {
  if (dir.empty()) return rt::makeError(rt::ErrorCode::InvalidArgument, "no bundle directory given (empty path)");
  manifest.cubins.clear();
  for (const auto &arch : options.cubinArchs) {
    if (!rt::parseArch(arch))
      return rt::makeError(rt::ErrorCode::InvalidArgument, "bad cubin architecture '" + arch + "' (expected e.g. sm_90a)");
    manifest.cubins.push_back({arch, "kernels." + arch + ".cubin"});
  }
  if (rt::Status s = rt::validateManifest(manifest); !s) return s;
  if (manifest.source.find('/') != std::string::npos)
    return rt::makeError(rt::ErrorCode::InvalidArgument, "source '" + manifest.source + "' must be a plain file name");

  // Compile first: nothing is written for a bundle that does not compile.
  std::vector<std::string> archs = options.cubinArchs;
  if (options.checkAllArchs)
    for (const auto &a : manifest.archs)
      if (std::find(archs.begin(), archs.end(), a) == archs.end()) archs.push_back(a);
  std::vector<std::vector<char>> cubins;
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
  rt::Status status = writeFile(tmp / manifest.source, source.data(), source.size());
  for (size_t i = 0; status && i < manifest.cubins.size(); ++i)
    status = writeFile(tmp / manifest.cubins[i].file, cubins[i].data(), cubins[i].size());
  if (status) {
    std::string text = rt::writeManifest(manifest);
    status = writeFile(tmp / "manifest.flashc", text.data(), text.size());
  }
  if (!status) {
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

} // namespace flashc
