// Where the CUDA headers and the device library live, found without the user's help.
#include "flashc/runtime/Nvrtc.h"

#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>

namespace fs = std::filesystem;

namespace flashc::rt {

namespace {
bool isDir(const std::string &p) {
  std::error_code ec;
  return !p.empty() && fs::is_directory(p, ec);
}
std::string env(const char *name) {
  const char *v = std::getenv(name);
  return v ? std::string(v) : std::string();
}
} // namespace

std::string cudaIncludeDir() {
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"}) {
    std::string root = env(var);
    if (!root.empty() && isDir(root + "/include")) return root + "/include";
  }
#ifdef FLASHC_CUDA_INCLUDE_DIR
  if (isDir(FLASHC_CUDA_INCLUDE_DIR)) return FLASHC_CUDA_INCLUDE_DIR;
#endif
  return "/usr/local/cuda/include";
}

std::string deviceIncludeDir(const std::string &override) {
  if (!override.empty()) return override;
  std::string fromEnv = env("FLASHC_DEVICE_INCLUDE");
  if (!fromEnv.empty()) return fromEnv;
  // Installed layout: <prefix>/lib/libflashc_runtime.so and <prefix>/include/flashc/device.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&cudaIncludeDir), &info) && info.dli_fname) {
    std::error_code ec;
    fs::path lib = fs::weakly_canonical(fs::path(info.dli_fname), ec).parent_path();
    fs::path installed = lib.parent_path() / "include";
    if (isDir((installed / "flashc" / "device").string())) return installed.string();
  }
#ifdef FLASHC_DEVICE_INCLUDE_DEFAULT
  return FLASHC_DEVICE_INCLUDE_DEFAULT;
#else
  return "";
#endif
}

} // namespace flashc::rt
