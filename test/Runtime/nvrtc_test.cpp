// NVRTC wrapper: the test kernels compile for sm_80 and sm_90a, errors carry
// NVRTC's log with line numbers, include paths are found without help.
#include "Check.h"

#include "flashc/runtime/Nvrtc.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace flashc::rt;
using namespace flashc::test;
namespace fs = std::filesystem;

namespace {

std::string readText(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool isElf(const std::vector<char> &bytes) {
  return bytes.size() > 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
}

bool hasOption(const std::vector<std::string> &opts, const std::string &o) {
  for (const auto &x : opts)
    if (x == o) return true;
  return false;
}

} // namespace

int main() {
  auto version = nvrtcVersion();
  if (!checkOk(version, "NVRTC loads (dlopen)")) return checkSummary();
  std::printf("NVRTC %s, CUDA include %s, device include %s\n", version->c_str(), cudaIncludeDir().c_str(),
              deviceIncludeDir().c_str());

  std::string source = readText(FLASHC_TEST_BUNDLES_DIR "/basic/kernels.cu");
  for (const char *arch : {"sm_80", "sm_90a"}) {
    auto out = compileCuda(source, arch, {"-std=c++17"});
    check(out.ok() && isElf(out->cubin), std::string("basic/kernels.cu compiles to a cubin for ") + arch,
          out.ok() ? "" : out.message());
  }

  // The tensor-map bundle (TMA, mbarriers: sm_90a only) compiles too; the GPU
  // test runs it (test/GPU/runtime_tma_test.cpp).
  auto tma = compileCuda(readText(FLASHC_TEST_BUNDLES_DIR "/tma/kernels.cu"), "sm_90a", {"-std=c++17"});
  check(tma.ok() && isElf(tma->cubin), "tma/kernels.cu compiles to a cubin for sm_90a", tma.ok() ? "" : tma.message());

  CompileRequest req;
  req.arch = "sm_90a";
  auto opts = effectiveNvrtcOptions(req);
  check(hasOption(opts, "-I" + cudaIncludeDir()) && hasOption(opts, "--gpu-architecture=sm_90a"),
        "effective options add the CUDA include dir and the arch");
  check(hasOption(opts, "-I" + cudaIncludeDir() + "/cccl") == fs::is_directory(cudaIncludeDir() + "/cccl"),
        "the cccl include dir is added when it exists");
  check(hasOption(opts, "--split-compile=0"), "kernels are optimised in parallel (--split-compile=0)");
  CompileRequest serial = req;
  serial.options = {"--split-compile=1"};
  auto serialOpts = effectiveNvrtcOptions(serial);
  check(hasOption(serialOpts, "--split-compile=1") && !hasOption(serialOpts, "--split-compile=0"),
        "a manifest's own --split-compile is kept");

  // CCCL headers (cuda/std) resolve through the default include paths.
  auto cccl = compileCuda("#include <cuda/std/cstdint>\nextern \"C\" __global__ void k(cuda::std::int64_t *p) { *p = 1; }\n",
                          "sm_80", {});
  check(cccl.ok(), "a kernel including <cuda/std/cstdint> compiles", cccl.ok() ? "" : cccl.message());

  // Errors carry the log with file and line.
  CompileRequest bad;
  bad.source = "extern \"C\" __global__ void k(float *p) {\n  p[0] = 1.0f;\n  undeclared_thing = 3;\n}\n";
  bad.sourceName = "broken.cu";
  bad.arch = "sm_80";
  auto broken = compileCuda(bad);
  checkError(broken, "broken.cu(3): error", "a compile error names file and line (broken.cu(3))");
  checkError(broken, "undeclared_thing", "the log names the offending identifier");
  check(broken.code() == ErrorCode::CompileFailed, "compile errors have code CompileFailed");
  checkError(compileCuda("", "compute_90", {}), "is not a real architecture", "a virtual arch is refused");

  // Device library include dir: API override, then $FLASHC_DEVICE_INCLUDE.
  fs::path dir = fs::temp_directory_path() / ("flashc-nvrtc-test-" + std::to_string(getpid()));
  fs::create_directories(dir / "flashc" / "device");
  std::ofstream(dir / "flashc" / "device" / "probe.cuh") << "#pragma once\nconstexpr int kProbe = 42;\n";
  CompileRequest probe;
  probe.source = "#include \"flashc/device/probe.cuh\"\nextern \"C\" __global__ void k(int *p) { *p = kProbe; }\n";
  probe.arch = "sm_80";
  checkError(compileCuda(probe), "probe.cuh", "without the override the probe header is not found");
  probe.deviceIncludeDir = dir.string();
  auto viaApi = compileCuda(probe);
  check(viaApi.ok(), "device include dir given through the API is used", viaApi.ok() ? "" : viaApi.message());
  probe.deviceIncludeDir.clear();
  setenv("FLASHC_DEVICE_INCLUDE", dir.string().c_str(), 1);
  check(deviceIncludeDir() == dir.string(), "FLASHC_DEVICE_INCLUDE overrides the default");
  auto viaEnv = compileCuda(probe);
  check(viaEnv.ok(), "device include dir given through FLASHC_DEVICE_INCLUDE is used", viaEnv.ok() ? "" : viaEnv.message());
  unsetenv("FLASHC_DEVICE_INCLUDE");
  fs::remove_all(dir);

  // The real device library (when its owner has added it) is found by default.
  std::string tensorHeader = deviceIncludeDir() + "/flashc/device/tensor.cuh";
  if (fs::exists(tensorHeader)) {
    auto lib = compileCuda("#include \"flashc/device/tensor.cuh\"\nextern \"C\" __global__ void k(int *p) { *p = 1; }\n",
                           "sm_90a", {"-std=c++17"});
    check(lib.ok(), "the device library's tensor.cuh compiles from the default include dir", lib.ok() ? "" : lib.message());
  } else {
    std::printf("note: %s not present yet; default device include not exercised\n", tensorHeader.c_str());
  }
  return checkSummary();
}
