// Kernel cache: keys, entry integrity (corrupt/truncated entries rebuilt),
// several processes filling one cache at once, hits in a second process,
// no-JIT mode. Child processes are this executable re-run with "child ...".
#include "Check.h"

#include "flashc/runtime/Hash.h"
#include "flashc/runtime/KernelCache.h"
#include "flashc/runtime/Runtime.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace flashc::rt;
using namespace flashc::test;
namespace fs = std::filesystem;

extern char **environ;

namespace {

std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CompileRequest basicRequest(const std::vector<std::string> &options = {"-std=c++17"}) {
  CompileRequest r;
  r.source = readText(FLASHC_TEST_BUNDLES_DIR "/basic/kernels.cu");
  r.arch = "sm_90a";
  r.options = options;
  return r;
}

// Child: compile through the cache in `dir`, write how it was served to `out`.
int childMain(const std::string &dir, const std::string &out) {
  KernelCache cache(dir);
  auto r = compileCudaCached(basicRequest(), &cache);
  std::ofstream o(out);
  if (!r) {
    o << "error " << r.message();
    return 1;
  }
  const char *how = r->source == CachedCompile::DiskCache ? "disk" : r->source == CachedCompile::Compiled ? "compiled" : "memory";
  o << how << " corrupt=" << compileStats().corruptEntries.load();
  return 0;
}

pid_t spawnChild(const std::string &dir, const std::string &out) {
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::vector<std::string> args = {self, "child", dir, out};
  std::vector<char *> argv;
  for (auto &a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv.data(), environ) != 0) return -1;
  return pid;
}

bool waitOk(pid_t pid) {
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Runs one child to completion and returns what it wrote.
std::string runChild(const std::string &dir, const fs::path &tmp, const std::string &tag) {
  std::string out = (tmp / ("child-" + tag + ".txt")).string();
  pid_t pid = spawnChild(dir, out);
  bool ok = waitOk(pid);
  return (ok ? "" : "FAILED ") + readText(out);
}

size_t countFiles(const std::string &dir, const std::string &needle) {
  size_t n = 0;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().find(needle) != std::string::npos) ++n;
  return n;
}

void testKeys() {
  // Published FNV-1a test vectors.
  check(fnv1a64("", 0) == 0xcbf29ce484222325ULL && fnv1a64("a", 1) == 0xaf63dc4c8601ec8cULL &&
            fnv1a64("foobar", 6) == 0x85944171f73967e8ULL,
        "fnv1a64 matches the published vectors ('', 'a', 'foobar')");
  std::vector<std::string> opts = {"-std=c++17", "-I/x"};
  std::string k = kernelCacheKey("src", opts, "sm_90a", "13.0", "fp");
  check(k.size() == 32 && k == kernelCacheKey("src", opts, "sm_90a", "13.0", "fp"), "key: 32 hex digits, deterministic");
  check(k != kernelCacheKey("src ", opts, "sm_90a", "13.0", "fp"), "key changes with the source");
  check(k != kernelCacheKey("src", {"-std=c++17", "-I/x", "--use_fast_math"}, "sm_90a", "13.0", "fp"),
        "key changes with the NVRTC options");
  check(k != kernelCacheKey("src", {"-std=c++17-I/x"}, "sm_90a", "13.0", "fp"), "key keeps option boundaries");
  check(k != kernelCacheKey("src", opts, "sm_80", "13.0", "fp"), "key changes with the arch");
  check(k != kernelCacheKey("src", opts, "sm_90a", "13.1", "fp"), "key changes with the NVRTC version");
  check(k != kernelCacheKey("src", opts, "sm_90a", "13.0", "fp2"), "key changes with the device library");
  CompileRequest a = basicRequest(), b = basicRequest({"-std=c++17", "-DFLASHC_EXTRA=1"});
  check(effectiveNvrtcOptions(a) != effectiveNvrtcOptions(b), "changed manifest options change the effective options");
}

void testEntries(const fs::path &tmp) {
  KernelCache cache((tmp / "entries").string());
  std::vector<char> payload(1000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = char(i * 7);
  std::string key = std::string(32, 'a');
  checkOk(cache.store(key, payload), "store an entry (creates the directory)");
  std::vector<char> got;
  check(cache.load(key, got) == KernelCache::Lookup::Hit && got == payload, "load returns the stored bytes");
  check(cache.load(std::string(32, 'b'), got) == KernelCache::Lookup::Miss, "an absent key is a miss");

  std::string path = cache.entryPath(key);
  auto rewrite = [&](const std::string &bytes) { std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes; };
  std::string good = readText(path);
  std::string why;

  std::string flipped = good;
  flipped[good.size() - 10] ^= 0x40;
  rewrite(flipped);
  check(cache.load(key, got, &why) == KernelCache::Lookup::Corrupt && contains(why, "checksum mismatch"),
        "a flipped payload byte is detected (checksum)", why);
  check(!fs::exists(path), "the corrupt entry is removed");

  rewrite(good.substr(0, good.size() - 100));
  check(cache.load(key, got, &why) == KernelCache::Lookup::Corrupt && contains(why, "truncated"),
        "a truncated entry is detected", why);
  rewrite(good.substr(0, 20));
  check(cache.load(key, got, &why) == KernelCache::Lookup::Corrupt && contains(why, "shorter than its header"),
        "an entry cut inside its header is detected", why);
  std::string badMagic = good;
  badMagic[0] = 'X';
  rewrite(badMagic);
  check(cache.load(key, got, &why) == KernelCache::Lookup::Corrupt && contains(why, "bad magic"), "bad magic is detected", why);
  rewrite(good);
  fs::copy_file(path, cache.entryPath(std::string(32, 'c')));
  check(cache.load(std::string(32, 'c'), got, &why) == KernelCache::Lookup::Corrupt && contains(why, "key mismatch"),
        "an entry under the wrong name is detected (key mismatch)", why);
  // Not a file at all: an error the caller rebuilds from, never a thrown exception (it aborted the process) or a
  // read that never returns (a FIFO).
  std::string dirKey(32, 'd'), fifoKey(32, 'f');
  fs::create_directories(cache.entryPath(dirKey) + "/inside");
  check(cache.load(dirKey, got, &why) == KernelCache::Lookup::Corrupt && contains(why, "is not a regular file"),
        "a directory in an entry's place is corrupt, not a crash", why);
  check(mkfifo(cache.entryPath(fifoKey).c_str(), 0600) == 0, "make a FIFO in an entry's place");
  check(cache.load(fifoKey, got, &why) == KernelCache::Lookup::Corrupt && contains(why, "is not a regular file"),
        "a FIFO in an entry's place is corrupt, not a hang", why);
  check(!fs::exists(cache.entryPath(fifoKey)), "the FIFO is removed");
  KernelCache unwritable("/proc/flashc-cannot-exist");
  checkError(unwritable.store(key, payload), "cannot create cache directory", "an unwritable cache dir is an error, not a crash");
}

void testProcesses(const fs::path &tmp) {
  std::string dir = (tmp / "shared").string();
  // Four processes fill an empty cache with the same kernel at once.
  std::vector<pid_t> pids;
  for (int i = 0; i < 4; ++i) pids.push_back(spawnChild(dir, (tmp / ("race-" + std::to_string(i) + ".txt")).string()));
  bool allOk = true;
  for (pid_t p : pids) allOk = waitOk(p) && allOk;
  check(allOk, "four processes compiling into one empty cache at once all succeed");
  check(countFiles(dir, ".fcubin") == 1 && countFiles(dir, ".tmp.") == 0,
        "one entry remains and no temporary files are left behind");

  std::string second = runChild(dir, tmp, "second");
  check(contains(second, "disk"), "a later process is served from the disk cache", second);

  std::string entry;
  for (const auto &e : fs::directory_iterator(dir)) entry = e.path().string();
  std::string bytes = readText(entry);
  bytes[bytes.size() / 2] ^= 0x1;
  std::ofstream(entry, std::ios::binary | std::ios::trunc) << bytes;
  std::string rebuilt = runChild(dir, tmp, "corrupt");
  check(contains(rebuilt, "compiled corrupt=1"), "a corrupt entry is detected and rebuilt by the next process", rebuilt);
  std::string after = runChild(dir, tmp, "after-rebuild");
  check(contains(after, "disk"), "after the rebuild the entry is valid again", after);

  std::string full = readText(entry);
  std::ofstream(entry, std::ios::binary | std::ios::trunc) << full.substr(0, full.size() / 3);
  std::string truncated = runChild(dir, tmp, "truncated");
  check(contains(truncated, "compiled corrupt=1"), "a truncated entry is detected and rebuilt", truncated);

  // In this process: disk hit, then the memory cache.
  KernelCache cache(dir);
  auto first = compileCudaCached(basicRequest(), &cache);
  auto again = compileCudaCached(basicRequest(), &cache);
  check(first.ok() && first->source == CachedCompile::DiskCache, "in-process: first lookup hits the disk");
  check(again.ok() && again->source == CachedCompile::MemoryCache && again->cubin == first->cubin,
        "in-process: second lookup hits the memory cache (compile once per process)");
  auto changed = compileCudaCached(basicRequest({"-std=c++17", "-DFLASHC_EXTRA=1"}), &cache);
  check(changed.ok() && changed->source == CachedCompile::Compiled && changed->key != first->key &&
            countFiles(dir, ".fcubin") == 2,
        "changed NVRTC options give a new key and a new entry");
}

void testNoJit(const fs::path &tmp) {
  BundleOptions options;
  options.cacheDir = (tmp / "nojit-cache").string();
  options.noJit = 1;
  auto bundle = Bundle::open(FLASHC_TEST_BUNDLES_DIR "/basic", options);
  if (!checkOk(bundle, "open the basic bundle")) return;
  checkError((*bundle)->selectCode(9, 0),
             "JIT compilation is disabled (FLASHC_NO_JIT) and bundle " FLASHC_TEST_BUNDLES_DIR
             "/basic has no cubin that loads on sm_90a",
             "no-JIT (API) with no cubin: clear error");
  setenv("FLASHC_NO_JIT", "1", 1);
  options.noJit = -1;
  auto envBundle = Bundle::open(FLASHC_TEST_BUNDLES_DIR "/basic", options);
  checkError((*envBundle)->selectCode(9, 0), "cubins in the bundle: none", "no-JIT through FLASHC_NO_JIT=1");
  unsetenv("FLASHC_NO_JIT");
  auto jit = (*envBundle)->selectCode(9, 0);
  check(jit.ok() && jit->arch == "sm_90a" && !jit->fromCubin, "with JIT allowed, 9.0 compiles kernels.cu for sm_90a",
        jit.ok() ? "" : jit.message());
  checkError((*envBundle)->selectCode(7, 5), "is older than every one of them", "a device older than every target arch is refused");

  // A bundle that ships an sm_90a cubin runs on 9.0 without JIT, not on 8.0.
  fs::path dir = tmp / "with-cubin";
  fs::create_directories(dir);
  fs::copy_file(FLASHC_TEST_BUNDLES_DIR "/basic/kernels.cu", dir / "kernels.cu");
  auto cubin = compileCuda(readText(FLASHC_TEST_BUNDLES_DIR "/basic/kernels.cu"), "sm_90a", {"-std=c++17"});
  if (!checkOk(cubin, "compile the sm_90a cubin")) return;
  std::ofstream(dir / "kernels.sm_90a.cubin", std::ios::binary).write(cubin->cubin.data(), std::streamsize(cubin->cubin.size()));
  Manifest m = (*bundle)->manifest();
  m.cubins = {{"sm_90a", "kernels.sm_90a.cubin"}};
  std::ofstream(dir / "manifest.flashc") << writeManifest(m);
  options.noJit = 1;
  auto shipped = Bundle::open(dir.string(), options);
  if (!checkOk(shipped, "open a bundle that ships a cubin")) return;
  std::vector<char> code;
  auto onHopper = (*shipped)->selectCode(9, 0, &code);
  check(onHopper.ok() && onHopper->fromCubin && onHopper->cubinFile == "kernels.sm_90a.cubin" && code == cubin->cubin,
        "no-JIT on 9.0 loads the shipped sm_90a cubin", onHopper.ok() ? "" : onHopper.message());
  checkError((*shipped)->selectCode(8, 0), "cubins in the bundle: sm_90a", "no-JIT on 8.0: the sm_90a cubin does not fit");
  fs::remove(dir / "kernels.sm_90a.cubin");
  checkError(Bundle::open(dir.string(), options), "cubin kernels.sm_90a.cubin (sm_90a) is missing",
             "a listed cubin that is missing is reported at open");
  // A bundle's manifest read as a regular file only (a FIFO in its place would have blocked open).
  fs::path notAFile = tmp / "manifest-not-a-file";
  fs::create_directories(notAFile / "manifest.flashc");
  checkError(Bundle::open(notAFile.string(), options), ": manifest.flashc is not a regular file",
             "a directory named manifest.flashc is named as such, not as a missing manifest");
  // A corrupt cubin is reported at open too, not handed to the driver.
  std::ofstream(dir / "kernels.sm_90a.cubin", std::ios::binary) << "not a cubin";
  checkError(Bundle::open(dir.string(), options), "cubin kernels.sm_90a.cubin (sm_90a) is not an ELF file",
             "a garbage cubin is reported at open");
  std::ofstream(dir / "kernels.sm_90a.cubin", std::ios::binary).write(cubin->cubin.data(), 1000);
  checkError(Bundle::open(dir.string(), options), "cubin kernels.sm_90a.cubin (sm_90a) is truncated (1000 bytes;",
             "a truncated cubin is reported at open");
  std::ofstream(dir / "kernels.sm_90a.cubin", std::ios::binary | std::ios::trunc).flush();
  checkError(Bundle::open(dir.string(), options), "cubin kernels.sm_90a.cubin (sm_90a) is empty",
             "an empty cubin is reported at open");
  fs::remove(dir / "kernels.sm_90a.cubin");
  fs::remove(dir / "kernels.cu");
  fs::create_directory(dir / "kernels.cu");
  m.cubins.clear();
  std::ofstream(dir / "manifest.flashc") << writeManifest(m);
  checkError(Bundle::open(dir.string(), options), "source kernels.cu is not a file",
             "a source that is a directory is reported at open");
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 4 && std::string(argv[1]) == "child") return childMain(argv[2], argv[3]);
  fs::path tmp = fs::temp_directory_path() / ("flashc-cache-test-" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  testKeys();
  testEntries(tmp);
  testProcesses(tmp);
  testNoJit(tmp);
  fs::remove_all(tmp);
  return checkSummary();
}
