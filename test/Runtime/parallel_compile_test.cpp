// compileCudaParallel: a batch of NVRTC programs on a thread pool, results in
// request order, every unit compiled even when one fails; the thread count
// from FLASHC_COMPILE_JOBS; FLASHC_NO_CACHE.
#include "Check.h"

#include "flashc/runtime/ParallelCompile.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <thread>

using namespace flashc::rt;
using namespace flashc::test;

namespace {

/// One small unit per kernel name (entry flashc_unit_<name>).
std::vector<CompileRequest> units(const std::vector<std::string> &names) {
  std::vector<CompileRequest> requests;
  for (const auto &n : names) {
    CompileRequest r;
    r.source = "extern \"C\" __global__ void flashc_unit_" + n + "(float *x) { x[threadIdx.x] *= 2.0f; }\n";
    r.sourceName = n + ".cu";
    r.arch = "sm_80";
    requests.push_back(r);
  }
  return requests;
}

bool holdsSymbol(const std::vector<char> &cubin, const std::string &symbol) {
  return std::string(cubin.begin(), cubin.end()).find(symbol) != std::string::npos;
}

} // namespace

int main() {
  if (!nvrtcVersion()) {
    std::printf("SKIPPED: %s\n", nvrtcVersion().message().c_str());
    return 0;
  }
  std::vector<std::string> names = {"a", "b", "c", "d", "e"};
  std::vector<CompileRequest> requests = units(names);
  std::set<size_t> reported;
  ParallelCompileOptions options;
  options.jobs = 3;
  options.onDone = [&](size_t i, const Result<CachedCompile> &r, double seconds) {
    check(r.ok() && seconds >= 0 && reported.insert(i).second, "unit " + names[i] + " reported once, compiled");
  };
  auto results = compileCudaParallel(requests, options);
  bool inOrder = results.size() == names.size();
  for (size_t i = 0; inOrder && i < results.size(); ++i)
    inOrder = results[i].ok() && holdsSymbol(results[i]->cubin, "flashc_unit_" + names[i]);
  check(inOrder, "five units on three threads: results in request order, each with its own kernel");
  check(reported.size() == names.size(), "every unit reported");

  // A unit that does not compile fails alone.
  requests[1].source += "this is not CUDA;\n";
  options.onDone = nullptr;
  options.jobs = 2;
  results = compileCudaParallel(requests, options);
  checkError(results[1], "b.cu(", "the broken unit's error names its source");
  check(results[0].ok() && results[2].ok() && results[3].ok() && results[4].ok(), "the other units still compile");
  check(compileCudaParallel({}, options).empty(), "an empty batch compiles nothing");

  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  setenv("FLASHC_COMPILE_JOBS", "3", 1);
  check(defaultCompileJobs() == 3, "FLASHC_COMPILE_JOBS=3: three threads");
  for (const char *bad : {"0", "-1", "two", ""}) {
    setenv("FLASHC_COMPILE_JOBS", bad, 1);
    check(defaultCompileJobs() == int(cores), std::string("FLASHC_COMPILE_JOBS='") + bad + "': one thread per core");
  }
  unsetenv("FLASHC_COMPILE_JOBS");
  check(defaultCompileJobs() == int(cores), "unset: one thread per core");

  unsetenv("FLASHC_NO_CACHE");
  check(!kernelCacheDisabled(), "the disk cache is on by default");
  setenv("FLASHC_NO_CACHE", "1", 1);
  check(kernelCacheDisabled(), "FLASHC_NO_CACHE=1 turns it off");
  setenv("FLASHC_NO_CACHE", "0", 1);
  check(!kernelCacheDisabled(), "FLASHC_NO_CACHE=0 leaves it on");
  return checkSummary();
}
