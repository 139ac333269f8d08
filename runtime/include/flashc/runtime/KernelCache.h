// On-disk cache of compiled cubins, shared by processes.
// Entry file <dir>/<key>.fcubin = header {magic "FLASHCK1", format, key digest,
// payload length, payload FNV-1a-64} + payload. Written to a unique temporary
// file then renamed over the final name (atomic on POSIX), so a reader sees
// either nothing or a whole entry; a corrupt or truncated entry is detected by
// the header, deleted and rebuilt.
#pragma once

#include "flashc/runtime/Nvrtc.h"
#include "flashc/runtime/Result.h"

#include <atomic>
#include <optional>
#include <string>
#include <vector>

namespace flashc::rt {

/// $FLASHC_CACHE_DIR, else $XDG_CACHE_HOME/flashc, else $HOME/.cache/flashc.
std::string defaultCacheDir();

/// $FLASHC_NO_CACHE set (and not "0"): neither the compiler nor the runtime
/// reads or writes the disk cache (the per-process memory cache stays).
bool kernelCacheDisabled();

/// 32 hex digits: 128-bit FNV-1a of source, effective NVRTC options, arch,
/// NVRTC version and a fingerprint of the device library's headers.
std::string kernelCacheKey(const std::string &source, const std::vector<std::string> &effectiveOptions,
                           const std::string &arch, const std::string &nvrtcVersion,
                           const std::string &deviceLibraryFingerprint);

/// Hash of every file (path and bytes) under `dir`, so editing a device
/// library header invalidates cached kernels that may include it.
std::string directoryFingerprint(const std::string &dir);

class KernelCache {
public:
  explicit KernelCache(std::string dir);
  const std::string &dir() const { return dir_; }
  std::string entryPath(const std::string &key) const;

  enum class Lookup { Hit, Miss, Corrupt };
  /// Reads an entry; Corrupt entries are removed (and *why says what was wrong).
  Lookup load(const std::string &key, std::vector<char> &out, std::string *why = nullptr) const;
  /// Atomically writes an entry (creating the directory).
  Status store(const std::string &key, const std::vector<char> &payload) const;
  /// Deletes an entry (none: nothing to do).
  void remove(const std::string &key) const;

private:
  std::string dir_;
};

/// Counters (process-wide) so tests and tools can see what happened.
struct CompileStats {
  std::atomic<int> memoryHits{0}, diskHits{0}, corruptEntries{0}, compiles{0};
};
CompileStats &compileStats();

struct CachedCompile {
  std::vector<char> cubin;
  std::string key;
  enum Source { Compiled, DiskCache, MemoryCache } source = Compiled;
  std::string log;
};

/// compileCuda through a per-process memory cache (one compile per key per
/// process, concurrent callers wait) and the disk cache (`cache` may be null).
/// `deviceLibraryFingerprint`: directoryFingerprint of the request's device
/// include dir when the caller has it (a batch computes it once); empty: computed.
/// `refresh`: the cubin the caches gave was refused by the driver (an entry that passed its checksum but is not
/// code the device takes: written by a broken compiler, or by hand). Where it came from the disk, both caches drop
/// it and it is compiled again; a cubin this process compiled is returned as it is (a compile would give it again),
/// so a key is compiled again at most once a process.
Result<CachedCompile> compileCudaCached(const CompileRequest &request, const KernelCache *cache,
                                        const std::string &deviceLibraryFingerprint = "", bool refresh = false);

} // namespace flashc::rt
