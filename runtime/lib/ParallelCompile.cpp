// A batch of NVRTC compiles on a thread pool (see ParallelCompile.h).
#include "flashc/runtime/ParallelCompile.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace flashc::rt {

int defaultCompileJobs() {
  if (const char *v = std::getenv("FLASHC_COMPILE_JOBS"); v && *v) {
    char *end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (*end == '\0' && n > 0) return int(std::min(n, 256L));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

std::vector<Result<CachedCompile>> compileCudaParallel(const std::vector<CompileRequest> &requests,
                                                       const ParallelCompileOptions &options) {
  // The device library's fingerprint is part of every key: read its headers
  // once per include dir, not once per unit.
  std::map<std::string, std::string> fingerprints;
  for (const auto &r : requests) {
    std::string dir = deviceIncludeDir(r.deviceIncludeDir);
    if (!fingerprints.count(dir)) fingerprints[dir] = directoryFingerprint(dir);
  }
  std::vector<std::optional<Result<CachedCompile>>> results(requests.size());
  std::atomic<size_t> next{0};
  std::mutex doneMutex;
  auto work = [&] {
    for (size_t i = next++; i < requests.size(); i = next++) {
      const CompileRequest &r = requests[i];
      auto start = std::chrono::steady_clock::now();
      results[i] = compileCudaCached(r, options.cache, fingerprints.at(deviceIncludeDir(r.deviceIncludeDir)));
      std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      if (options.onDone) {
        std::lock_guard<std::mutex> lock(doneMutex);
        options.onDone(i, *results[i], took.count());
      }
    }
  };
  size_t threads = std::min(requests.size(), size_t(options.jobs > 0 ? options.jobs : defaultCompileJobs()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work(); // the calling thread is one of the workers
  for (auto &t : pool) t.join();
  std::vector<Result<CachedCompile>> out;
  out.reserve(results.size());
  for (auto &r : results) out.push_back(std::move(*r));
  return out;
}

} // namespace flashc::rt
