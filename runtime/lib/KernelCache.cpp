// Disk + memory cache of NVRTC output.
#include "flashc/runtime/KernelCache.h"

#include "FileRead.h"
#include "flashc/runtime/Hash.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;

namespace flashc::rt {

std::string defaultCacheDir() {
  if (const char *d = std::getenv("FLASHC_CACHE_DIR"); d && *d) return d;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/flashc";
  if (const char *h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/flashc";
  return "/tmp/flashc-cache";
}

bool kernelCacheDisabled() {
  const char *v = std::getenv("FLASHC_NO_CACHE");
  return v && *v && std::string(v) != "0";
}

std::string kernelCacheKey(const std::string &source, const std::vector<std::string> &options,
                           const std::string &arch, const std::string &nvrtcVersion,
                           const std::string &fingerprint) {
  Hasher128 h;
  h.add("flashc-kernel-cache-1").add(source).add(uint64_t(options.size()));
  for (const auto &o : options) h.add(o);
  h.add(arch).add(nvrtcVersion).add(fingerprint);
  return h.hex();
}

std::string directoryFingerprint(const std::string &dir) {
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return "none";
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec)) files.push_back(it->path());
  std::sort(files.begin(), files.end());
  Hasher128 h;
  for (const auto &f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    h.add(fs::relative(f, dir, ec).string()).add(bytes.str());
  }
  return h.hex();
}

namespace {
constexpr char kMagic[8] = {'F', 'L', 'A', 'S', 'H', 'C', 'K', '1'};
constexpr uint32_t kEntryFormat = 1;

struct EntryHeader {
  char magic[8];
  uint32_t format;
  uint32_t reserved;
  char key[32];
  uint64_t length;
  uint64_t checksum;
};
static_assert(sizeof(EntryHeader) == 64, "cache entry header is 64 bytes");
} // namespace

KernelCache::KernelCache(std::string dir) : dir_(std::move(dir)) {}

std::string KernelCache::entryPath(const std::string &key) const { return dir_ + "/" + key + ".fcubin"; }

KernelCache::Lookup KernelCache::load(const std::string &key, std::vector<char> &out, std::string *why) const {
  std::string path = entryPath(key);
  std::string bytes;
  FileRead read = readRegularFile(path, bytes);
  // (Unreadable, e.g. out of descriptors or permissions: a miss, the entry kept; a compile takes its place.)
  if (read == FileRead::Missing || read == FileRead::Unreadable) return Lookup::Miss;
  auto corrupt = [&](const std::string &what) {
    if (why) *why = "cache entry " + path + " is corrupt (" + what + "); rebuilding";
    remove(key);  // (a file, a FIFO or an empty directory; a directory with files stays, and is refused again)
    return Lookup::Corrupt;
  };
  if (read != FileRead::Ok) return corrupt(describe(read));
  if (bytes.size() < sizeof(EntryHeader)) return corrupt("shorter than its header");
  EntryHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, 8) != 0) return corrupt("bad magic");
  if (h.format != kEntryFormat) return corrupt("entry format " + std::to_string(h.format));
  if (key.size() != 32 || std::memcmp(h.key, key.data(), 32) != 0) return corrupt("key mismatch");
  if (h.length != bytes.size() - sizeof h)
    return corrupt("truncated: header says " + std::to_string(h.length) + " bytes, file holds " +
                   std::to_string(bytes.size() - sizeof h));
  if (fnv1a64(bytes.data() + sizeof h, h.length) != h.checksum) return corrupt("checksum mismatch");
  out.assign(bytes.begin() + sizeof h, bytes.end());
  return Lookup::Hit;
}

Status KernelCache::store(const std::string &key, const std::vector<char> &payload) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return makeError(ErrorCode::Internal, "cannot create cache directory " + dir_ + ": " + ec.message());
  EntryHeader h{};
  std::memcpy(h.magic, kMagic, 8);
  h.format = kEntryFormat;
  std::memcpy(h.key, key.data(), std::min<size_t>(32, key.size()));
  h.length = payload.size();
  h.checksum = fnv1a64(payload.data(), payload.size());
  // Unique temporary name per process and thread, then rename: concurrent
  // writers of one key each rename a complete file; the last one wins.
  std::ostringstream tmp;
  tmp << entryPath(key) << ".tmp." << getpid() << "." << std::hash<std::thread::id>()(std::this_thread::get_id())
      << "." << std::random_device()();
  std::string tmpPath = tmp.str();
  {
    std::ofstream out(tmpPath, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(&h), sizeof h);
    out.write(payload.data(), std::streamsize(payload.size()));
    out.flush();
    if (!out) {
      fs::remove(tmpPath, ec);
      return makeError(ErrorCode::Internal, "cannot write cache entry " + tmpPath);
    }
  }
  if (std::rename(tmpPath.c_str(), entryPath(key).c_str()) != 0) {
    fs::remove(tmpPath, ec);
    return makeError(ErrorCode::Internal, "cannot rename cache entry into " + entryPath(key));
  }
  return Status();
}

void KernelCache::remove(const std::string &key) const {
  std::error_code ec;
  fs::remove(entryPath(key), ec);
}

CompileStats &compileStats() {
  static CompileStats stats;
  return stats;
}

namespace {
// One slot per key: the first caller compiles, later callers wait for it.
struct MemorySlot {
  std::mutex mutex;
  bool done = false;
  std::optional<Result<CachedCompile>> result;
};
std::mutex gSlotsMutex;
std::map<std::string, std::shared_ptr<MemorySlot>> gSlots;
} // namespace

Result<CachedCompile> compileCudaCached(const CompileRequest &request, const KernelCache *cache,
                                        const std::string &deviceLibraryFingerprint, bool refresh) {
  auto version = nvrtcVersion();
  // Without NVRTC the key cannot include its version; the disk cache would be
  // unsafe to consult, so this is the same error a compile would give.
  if (!version) return version.error();
  std::vector<std::string> opts = effectiveNvrtcOptions(request);
  std::string fingerprint = deviceLibraryFingerprint.empty()
                                ? directoryFingerprint(deviceIncludeDir(request.deviceIncludeDir))
                                : deviceLibraryFingerprint;
  std::string key = kernelCacheKey(request.source, opts, request.arch, *version, fingerprint);

  std::shared_ptr<MemorySlot> slot;
  {
    std::lock_guard<std::mutex> lock(gSlotsMutex);
    auto &s = gSlots[key];
    if (!s) s = std::make_shared<MemorySlot>();
    slot = s;
  }
  std::lock_guard<std::mutex> lock(slot->mutex);
  // A refresh drops only a cubin that came from the disk: one this process compiled (first, or by an earlier
  // refresh, maybe another thread's) is what a compile would give again, so it is returned as it is.
  const bool fromDisk = slot->done && slot->result->ok() && slot->result->value().source == CachedCompile::DiskCache;
  if (refresh && fromDisk) {
    slot->done = false;
    slot->result.reset();
    if (cache) cache->remove(key);
  }
  if (slot->done && slot->result->ok()) {
    ++compileStats().memoryHits;
    CachedCompile c = slot->result->value();
    c.source = CachedCompile::MemoryCache;
    return c;
  }
  CachedCompile c;
  c.key = key;
  if (cache && !(refresh && fromDisk)) {
    std::string why;
    switch (cache->load(key, c.cubin, &why)) {
    case KernelCache::Lookup::Hit:
      ++compileStats().diskHits;
      c.source = CachedCompile::DiskCache;
      slot->done = true;
      slot->result = c;
      return c;
    case KernelCache::Lookup::Corrupt:
      ++compileStats().corruptEntries;
      if (std::getenv("FLASHC_VERBOSE")) std::fprintf(stderr, "flashc: %s\n", why.c_str());
      break;
    case KernelCache::Lookup::Miss: break;
    }
  }
  ++compileStats().compiles;
  auto compiled = compileCuda(request);
  if (!compiled) return compiled.error(); // failures are not remembered: the source may be fixed on disk
  c.cubin = std::move(compiled->cubin);
  c.log = std::move(compiled->log);
  c.source = CachedCompile::Compiled;
  if (cache)
    if (Status s = cache->store(key, c.cubin); !s && std::getenv("FLASHC_VERBOSE"))
      std::fprintf(stderr, "flashc: %s\n", s.message().c_str());
  slot->done = true;
  slot->result = c;
  return c;
}

} // namespace flashc::rt
