// Built by test_installed.py against an installed flashc package (its include/ and lib/): prints the include
// options the runtime hands NVRTC, then compiles a kernel that includes the whole device library for
// sm_90a with NVRTC (no GPU needed). Shows that the installed runtime finds its own device headers.
// Exit: 0 compiled, 2 NVRTC not loadable (the test skips), 1 compile failed.
#include "flashc/runtime/Nvrtc.h"

#include <cstdio>

int main() {
  flashc::rt::CompileRequest request;
  request.source = "#include \"flashc/device/all.cuh\"\nextern \"C\" __global__ void probe(float *x) { x[0] = 1.0f; }\n";
  request.sourceName = "probe.cu";
  request.arch = "sm_90a";
  for (const std::string &option : flashc::rt::effectiveNvrtcOptions(request))
    std::printf("option %s\n", option.c_str());
  auto version = flashc::rt::nvrtcVersion();
  if (!version) {
    std::printf("nvrtc-missing %s\n", version.message().c_str());
    return 2;
  }
  auto compiled = flashc::rt::compileCuda(request);
  if (!compiled) {
    std::printf("compile-failed %s\n", compiled.message().c_str());
    return 1;
  }
  std::printf("cubin %zu bytes (NVRTC %s)\n", compiled->cubin.size(), version->c_str());
  return 0;
}
