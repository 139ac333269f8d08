// NVRTC loaded with dlopen: compile CUDA C++ to a cubin, with the log.
#include "flashc/runtime/Nvrtc.h"

#include <nvrtc.h>

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <mutex>

namespace flashc::rt {
namespace {

struct NvrtcApi {
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcGetErrorString) errorString = nullptr;
  decltype(&::nvrtcCreateProgram) create = nullptr;
  decltype(&::nvrtcCompileProgram) compile = nullptr;
  decltype(&::nvrtcGetProgramLogSize) logSize = nullptr;
  decltype(&::nvrtcGetProgramLog) log = nullptr;
  decltype(&::nvrtcGetCUBINSize) cubinSize = nullptr;
  decltype(&::nvrtcGetCUBIN) cubin = nullptr;
  decltype(&::nvrtcGetPTXSize) ptxSize = nullptr;
  decltype(&::nvrtcGetPTX) ptx = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy = nullptr;
  std::string error; // why loading failed
};

std::vector<std::string> candidateLibraries() {
  std::vector<std::string> c;
  if (const char *e = std::getenv("FLASHC_NVRTC_LIBRARY")) c.push_back(e);
  c.push_back("libnvrtc.so." FLASHC_CUDA_MAJOR_STRING);
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *root = std::getenv(var))
      c.push_back(std::string(root) + "/lib64/libnvrtc.so." FLASHC_CUDA_MAJOR_STRING);
#ifdef FLASHC_NVRTC_LIBRARY_PATH
  c.push_back(FLASHC_NVRTC_LIBRARY_PATH);
#endif
  c.push_back("/usr/local/cuda/lib64/libnvrtc.so." FLASHC_CUDA_MAJOR_STRING);
  c.push_back("libnvrtc.so");
  return c;
}

const NvrtcApi &api() {
  static NvrtcApi a;
  static std::once_flag once;
  std::call_once(once, [] {
    void *handle = nullptr;
    std::string tried;
    for (const auto &name : candidateLibraries()) {
      handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle) break;
      tried += (tried.empty() ? "" : ", ") + name;
    }
    if (!handle) {
      a.error = "NVRTC not found (tried " + tried + "); set FLASHC_NVRTC_LIBRARY or ship cubins";
      return;
    }
    bool ok = true;
    auto load = [&](auto &fn, const char *sym) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, sym));
      if (!fn) {
        ok = false;
        a.error = std::string("NVRTC library lacks ") + sym;
      }
    };
    load(a.version, "nvrtcVersion");
    load(a.errorString, "nvrtcGetErrorString");
    load(a.create, "nvrtcCreateProgram");
    load(a.compile, "nvrtcCompileProgram");
    load(a.logSize, "nvrtcGetProgramLogSize");
    load(a.log, "nvrtcGetProgramLog");
    load(a.cubinSize, "nvrtcGetCUBINSize");
    load(a.cubin, "nvrtcGetCUBIN");
    load(a.ptxSize, "nvrtcGetPTXSize");
    load(a.ptx, "nvrtcGetPTX");
    load(a.destroy, "nvrtcDestroyProgram");
    if (!ok) a.version = nullptr;
  });
  return a;
}

Error nvrtcMissing() {
  return makeError(ErrorCode::Unsupported, api().error);
}

bool isDir(const std::string &p) {
  std::error_code ec;
  return std::filesystem::is_directory(p, ec);
}

} // namespace

Result<std::string> nvrtcVersion() {
  const NvrtcApi &a = api();
  if (!a.version) return nvrtcMissing();
  int major = 0, minor = 0;
  a.version(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> effectiveNvrtcOptions(const CompileRequest &r) {
  std::vector<std::string> opts = r.options;
  if (r.addDefaultIncludes) {
    std::string cuda = cudaIncludeDir();
    opts.push_back("-I" + cuda);
    if (isDir(cuda + "/cccl")) opts.push_back("-I" + cuda + "/cccl");
    std::string dev = deviceIncludeDir(r.deviceIncludeDir);
    if (!dev.empty()) opts.push_back("-I" + dev);
  }
  opts.push_back("--gpu-architecture=" + r.arch);
  // Optimise the kernels of one source in parallel, one thread per core: a bundle's 10-20 kernels compile
  // about 1.5x faster on two cores. The code does not depend on the thread count (checked byte for byte).
  if (std::none_of(opts.begin(), opts.end(), [](const std::string &o) { return o.rfind("--split-compile", 0) == 0; }))
    opts.push_back("--split-compile=0");
  return opts;
}

Result<CompileOutput> compileCuda(const CompileRequest &r) {
  const NvrtcApi &a = api();
  if (!a.version) return nvrtcMissing();
  if (r.arch.rfind("sm_", 0) != 0)
    return makeError(ErrorCode::InvalidArgument, "compileCuda: arch '" + r.arch + "' is not a real architecture (sm_XY)");
  nvrtcProgram prog = nullptr;
  nvrtcResult rc = a.create(&prog, r.source.c_str(), r.sourceName.c_str(), 0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS)
    return makeError(ErrorCode::CompileFailed, std::string("nvrtcCreateProgram: ") + a.errorString(rc));
  std::vector<std::string> opts = effectiveNvrtcOptions(r);
  std::vector<const char *> argv;
  for (const auto &o : opts) argv.push_back(o.c_str());
  rc = a.compile(prog, int(argv.size()), argv.data());
  CompileOutput out;
  size_t logSize = 0;
  if (a.logSize(prog, &logSize) == NVRTC_SUCCESS && logSize > 1) {
    out.log.resize(logSize);
    a.log(prog, out.log.data());
    out.log.resize(logSize - 1); // drop the terminating NUL
  }
  if (rc != NVRTC_SUCCESS) {
    a.destroy(&prog);
    std::string cmd;
    for (const auto &o : opts) cmd += " " + o;
    return makeError(ErrorCode::CompileFailed, "NVRTC failed to compile " + r.sourceName + " for " + r.arch + " (" +
                                                   a.errorString(rc) + "):\n" + out.log + "\noptions:" + cmd);
  }
  size_t size = 0;
  rc = a.cubinSize(prog, &size);
  if (rc == NVRTC_SUCCESS && size > 0) {
    out.cubin.resize(size);
    rc = a.cubin(prog, out.cubin.data());
  }
  size_t ptxBytes = 0;
  if (a.ptxSize(prog, &ptxBytes) == NVRTC_SUCCESS && ptxBytes > 1) {
    out.ptx.resize(ptxBytes);
    if (a.ptx(prog, out.ptx.data()) == NVRTC_SUCCESS)
      out.ptx.resize(ptxBytes - 1);
    else
      out.ptx.clear();
  }
  a.destroy(&prog);
  if (rc != NVRTC_SUCCESS || size == 0)
    return makeError(ErrorCode::CompileFailed, "NVRTC produced no cubin for " + r.arch);
  return out;
}

Result<CompileOutput> compileCuda(const std::string &source, const std::string &arch,
                                  const std::vector<std::string> &options) {
  CompileRequest r;
  r.source = source;
  r.arch = arch;
  r.options = options;
  return compileCuda(r);
}

} // namespace flashc::rt
