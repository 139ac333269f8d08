// Compiles the golden attention kernels with NVRTC, the way the runtime compiles generated
// kernels (include paths: CUDA include dir + runtime/device/include, sm_90a), for a set of
// configurations. No GPU needed. Exit status non-zero, with the NVRTC log, on any failure.
//
// Usage: nvrtc_compile_check <repo-root> <cuda-include-dir>
#include <nvrtc.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool compile(const std::string& name, const std::string& source, const std::vector<std::string>& options) {
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    std::fprintf(stderr, "%s: nvrtcCreateProgram failed\n", name.c_str());
    return false;
  }
  std::vector<const char*> opts;
  for (const auto& o : options) opts.push_back(o.c_str());
  const auto t0 = std::chrono::steady_clock::now();
  const nvrtcResult rc = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t logSize = 0;
  nvrtcGetProgramLogSize(prog, &logSize);
  std::string log(logSize, '\0');
  if (logSize > 1) nvrtcGetProgramLog(prog, log.data());
  size_t cubinSize = 0;
  if (rc == NVRTC_SUCCESS) nvrtcGetCUBINSize(prog, &cubinSize);
  nvrtcDestroyProgram(&prog);
  std::string cfg;
  for (const auto& o : options)
    if (o.rfind("-DFLASHC_", 0) == 0) cfg += " " + o.substr(9);
  if (rc != NVRTC_SUCCESS || cubinSize == 0) {
    std::fprintf(stderr, "FAIL %s [%s]: %s\n%s\n", name.c_str(), cfg.c_str(), nvrtcGetErrorString(rc), log.c_str());
    return false;
  }
  std::printf("ok   %s [%s] %.2fs cubin %zu bytes\n", name.c_str(), cfg.c_str(), secs, cubinSize);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <repo-root> <cuda-include-dir>\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1], cudaInclude = argv[2];
  const std::vector<std::string> base = {"--gpu-architecture=sm_90a", "-std=c++17", "-I" + cudaInclude,
                                         "-I" + root + "/runtime/device/include", "-I" + root + "/test/GPU/golden",
                                         "-default-device"};
  // (head_dim, f16, causal, window_left, softcap, gqa)
  const std::vector<std::vector<std::string>> configs = {
      {"-DFLASHC_HEAD_DIM=64"},
      {"-DFLASHC_HEAD_DIM=128", "-DFLASHC_CAUSAL=1"},
      {"-DFLASHC_HEAD_DIM=96", "-DFLASHC_F16=1", "-DFLASHC_WINDOW_LEFT=100"},
      {"-DFLASHC_HEAD_DIM=64", "-DFLASHC_SOFTCAP=30.0f", "-DFLASHC_GQA_GROUP=4"},
      {"-DFLASHC_HEAD_DIM=128", "-DFLASHC_BWD_DQ_BULK=1", "-DFLASHC_CAUSAL=1"},
      {"-DFLASHC_HEAD_DIM=64", "-DFLASHC_BWD_DETERMINISTIC=1", "-DFLASHC_WINDOW_LEFT=37"},
  };
  int failures = 0;
  for (const char* file : {"attention_fwd.cu", "attention_bwd.cu", "attention_bwd_rows.cu", "attention_fwd_wgmma.cu",
                           "attention_fwd_emitter_style.cu", "attention_fwd_ws.cu", "attention_bwd_ws.cu"}) {
    const std::string path = root + "/test/GPU/golden/" + file;
    const std::string source = readFile(path);
    if (source.empty()) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      return 2;
    }
    for (const auto& cfg : configs) {
      // the wgmma and ws forwards support head dims 64 and 128 only (static_assert says so)
      const std::string name = file;
      if ((name == "attention_fwd_wgmma.cu" || name == "attention_fwd_ws.cu" || name == "attention_bwd_ws.cu") &&
          cfg[0] == "-DFLASHC_HEAD_DIM=96")
        continue;
      // the ws backward: head dims 128 and 256, no softcap, dQ by atomics only (its static_asserts say so)
      if (name == "attention_bwd_ws.cu" &&
          (cfg[0] != "-DFLASHC_HEAD_DIM=128" ||
           (cfg.size() > 1 && (cfg[1].rfind("-DFLASHC_SOFTCAP", 0) == 0 || cfg[1].rfind("-DFLASHC_BWD_", 0) == 0))))
        continue;
      std::vector<std::string> options = base;
      options.insert(options.end(), cfg.begin(), cfg.end());
      failures += compile(file, source, options) ? 0 : 1;
    }
    if (std::string(file) == "attention_bwd_ws.cu") {  // its own head dim: 256, GQA 2, causal
      std::vector<std::string> options = base;
      options.insert(options.end(), {"-DFLASHC_HEAD_DIM=256", "-DFLASHC_GQA_GROUP=2", "-DFLASHC_CAUSAL=1"});
      failures += compile(file, source, options) ? 0 : 1;
    }
  }
  {  // the decode kernels over a KV cache: contiguous and paged caches, GQA / MQA, 1-16 tokens, D = 64-256
    const std::string path = root + "/test/GPU/golden/attention_decode.cu";
    const std::string source = readFile(path);
    if (source.empty()) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      return 2;
    }
    const std::vector<std::vector<std::string>> decodeConfigs = {
        {"-DFLASHC_HEAD_DIM=128"},
        {"-DFLASHC_HEAD_DIM=128", "-DFLASHC_DEC_PAGE=16", "-DFLASHC_DEC_QUERIES=4"},
        {"-DFLASHC_HEAD_DIM=64", "-DFLASHC_F16=1", "-DFLASHC_GQA_GROUP=1", "-DFLASHC_DEC_QUERIES=3", "-DFLASHC_CAUSAL=0"},
        {"-DFLASHC_HEAD_DIM=256", "-DFLASHC_GQA_GROUP=8", "-DFLASHC_DEC_QUERIES=16", "-DFLASHC_DEC_PAGE=256",
         "-DFLASHC_DEC_STAGES=2"},
    };
    for (const auto& cfg : decodeConfigs) {
      std::vector<std::string> options = base;
      options.insert(options.end(), cfg.begin(), cfg.end());
      failures += compile("attention_decode.cu", source, options) ? 0 : 1;
    }
  }
  {  // a mixture of experts: the grouped GEMM forms and the routing kernels, bf16 and f16
    const std::string path = root + "/test/GPU/golden/moe_experts.cu";
    const std::string source = readFile(path);
    if (source.empty()) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      return 2;
    }
    for (const char* f16 : {"-DFLASHC_F16=0", "-DFLASHC_F16=1"}) {
      std::vector<std::string> options = base;
      options.push_back(f16);
      failures += compile("moe_experts.cu", source, options) ? 0 : 1;
    }
  }
  {  // emitter_api.cuh call forms the golden kernels do not exercise (config independent)
    const std::string path = root + "/test/GPU/golden/emitter_api_smoke.cu";
    const std::string source = readFile(path);
    if (source.empty()) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      return 2;
    }
    failures += compile("emitter_api_smoke.cu", source, base) ? 0 : 1;
  }
  std::printf("%d failed\n", failures);
  return failures == 0 ? 0 : 1;
}
