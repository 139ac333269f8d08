// The kernel cache across processes on a GPU: a first process compiles and
// launches, a second process finds the kernel in the disk cache and launches, a
// third is given a poisoned entry (right checksum, not code) and compiles again.
// Children are this executable re-run; the parent itself never touches CUDA.
#include "runtime_gpu_util.h"

#include "flashc/runtime/KernelCache.h"

#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace flashc::rt;
using namespace flashc::test;
namespace fs = std::filesystem;

extern char **environ;

namespace {

// Child: open the bundle with `cacheDir`, launch vector_add, verify, report.
int childMain(const std::string &cacheDir, const std::string &out) {
  std::ofstream report(out);
  const Driver *d = driverOrSkip();
  if (!d) {
    report << "skipped";
    return kSkipReturnCode;
  }
  auto dev = currentDeviceInfo();
  BundleOptions o;
  o.cacheDir = cacheDir;
  auto b = Bundle::open(FLASHC_TEST_BUNDLES_DIR "/basic", o);
  if (!dev || !b) {
    report << "error " << (b ? dev.message() : b.message());
    return 1;
  }
  auto info = (*b)->prepare();
  if (!info) {
    report << "error " << info.message();
    return 1;
  }
  const int64_t n = 333;
  auto a = randomValues(n, 11);
  DeviceBuffer da(*d, n * 4), dc(*d, n * 4);
  da.upload(a);
  Arguments args;
  int64_t shape[1] = {n};
  (void)args.setTensor("a", da.get(), DType::F32, 1, shape);
  (void)args.setTensor("b", da.get(), DType::F32, 1, shape);
  (void)args.setTensor("c", dc.get(), DType::F32, 1, shape);
  Status s = (*b)->launch("vector_add", args);
  auto c = dc.download<float>(n);
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += c[i] != 2 * a[i];
  report << (info->fromDiskCache ? "disk" : "compiled") << " launch=" << (s.ok() ? "ok" : s.message()) << " bad=" << bad;
  return s.ok() && bad == 0 ? 0 : 1;
}

std::string runChild(const std::string &cacheDir, const std::string &out) {
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::vector<std::string> args = {self, "child", cacheDir, out};
  std::vector<char *> argv;
  for (auto &a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv.data(), environ) != 0) return "spawn failed";
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  if (WIFEXITED(status) && WEXITSTATUS(status) == kSkipReturnCode) return "skipped";
  return ss.str();
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 4 && std::string(argv[1]) == "child") return childMain(argv[2], argv[3]);
  fs::path tmp = fs::temp_directory_path() / ("flashc-gpu-cache-" + std::to_string(getpid()));
  fs::create_directories(tmp);
  std::string cacheDir = (tmp / "cache").string();
  std::string first = runChild(cacheDir, (tmp / "first.txt").string());
  if (first == "skipped") {
    std::printf("SKIPPED: no CUDA device\n");
    fs::remove_all(tmp);
    return kSkipReturnCode;
  }
  check(first == "compiled launch=ok bad=0", "first process compiles, launches and gets the right result", first);
  std::string second = runChild(cacheDir, (tmp / "second.txt").string());
  check(second == "disk launch=ok bad=0", "second process is served from the disk cache and gets the right result", second);

  // An entry whose header and checksum are right but whose payload is not code the driver takes (a broken compiler
  // wrote it, or a person): the launch compiles again and replaces it, and the next process is served from disk.
  std::vector<fs::path> entries;
  for (const auto &e : fs::directory_iterator(cacheDir))
    if (e.path().extension() == ".fcubin") entries.push_back(e.path());
  if (check(entries.size() == 1, "one cache entry after two processes", std::to_string(entries.size()))) {
    std::string key = entries[0].stem().string();
    std::string text = "flashc test: a poisoned cache entry, not a cubin";
    std::vector<char> poison(text.begin(), text.end());
    poison.resize(256, '\0');
    checkOk(KernelCache(cacheDir).store(key, poison), "poison the entry (a valid header and checksum)");
    std::vector<char> read;
    check(KernelCache(cacheDir).load(key, read) == KernelCache::Lookup::Hit && read == poison,
          "the poisoned entry passes the cache's own checks");
    std::string third = runChild(cacheDir, (tmp / "third.txt").string());
    check(third == "compiled launch=ok bad=0", "a process given the poisoned entry compiles again and gets the right result",
          third);
    check(KernelCache(cacheDir).load(key, read) == KernelCache::Lookup::Hit && read != poison,
          "the poisoned entry was replaced by the new compile");
    std::string fourth = runChild(cacheDir, (tmp / "fourth.txt").string());
    check(fourth == "disk launch=ok bad=0", "the next process is served from the disk cache again", fourth);
  }
  fs::remove_all(tmp);
  return checkSummary();
}
