// The bundle blob container (docs/bundle.md, "Bundle blob"): a 32-byte header
// and named sections, little-endian, checked by an FNV-1a 64 checksum so a
// truncated or damaged blob is reported before any manifest is parsed.
#include "flashc/runtime/BundleBlob.h"

#include "flashc/runtime/Hash.h"

#include <cstring>

namespace flashc::rt {

namespace {

// Each section: u32 name length, u32 reserved (0), u64 data size, the name,
// the data, then zero padding to a multiple of 8 (aligned cubins in memory).
constexpr size_t kSectionHeaderSize = 16;
constexpr uint32_t kMaxNameLength = 4096;
constexpr const char *kBlobPrefix = "bundle blob: ";

void putU32(std::string &out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(char(v >> (8 * i) & 0xff));
}
void putU64(std::string &out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(char(v >> (8 * i) & 0xff));
}
uint64_t getLe(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
void setU64(std::string &out, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[at + size_t(i)] = char(v >> (8 * i) & 0xff);
}
size_t padTo8(size_t n) { return (8 - n % 8) % 8; }

Error blobError(const std::string &what) { return {ErrorCode::InvalidBundle, std::string(kBlobPrefix) + what}; }

} // namespace

std::string bundleBlobNameFault(const std::string &name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxNameLength) return "is longer than " + std::to_string(kMaxNameLength) + " bytes";
  if (name.find('\0') != std::string::npos) return "contains a NUL byte";
  if (name.find('\\') != std::string::npos) return "contains a backslash (use '/')";
  if (name.front() == '/') return "is absolute";
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    std::string part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return "has an empty, '.' or '..' component";
    start = end + 1;
  }
  return "";
}

std::string packBundleBlob(const BundleFiles &files) {
  std::string out(kBundleBlobMagic, sizeof kBundleBlobMagic);
  putU32(out, kBundleBlobVersion);
  putU32(out, uint32_t(files.size()));
  putU64(out, 0); // total size, set below
  putU64(out, 0); // checksum, set below
  for (const auto &[name, data] : files) {
    putU32(out, uint32_t(name.size()));
    putU32(out, 0);
    putU64(out, uint64_t(data.size()));
    out += name;
    out += data;
    out.append(padTo8(name.size() + data.size()), '\0');
  }
  setU64(out, 16, uint64_t(out.size()));
  setU64(out, 24, fnv1a64(out.data() + kBundleBlobHeaderSize, out.size() - kBundleBlobHeaderSize));
  return out;
}

Result<BundleFiles> unpackBundleBlob(const void *data, size_t size) {
  if (!data) return blobError("no data (null pointer)");
  const auto *p = static_cast<const unsigned char *>(data);
  if (size < sizeof kBundleBlobMagic || std::memcmp(p, kBundleBlobMagic, sizeof kBundleBlobMagic) != 0) {
    if (size >= sizeof kBundleBlobMagic && std::memcmp(p, kBundleBlobMagic, 7) == 0)
      return makeError(ErrorCode::Unsupported, "bundle blob: container format byte " + std::to_string(p[7]) +
                                                   " is not supported (this runtime reads 1)");
    return blobError("not a flashc bundle blob (bad magic: expected 'FLCBLOB\\x01' in the first 8 bytes of " +
                     std::to_string(size) + ")");
  }
  if (size < kBundleBlobHeaderSize)
    return blobError("truncated: " + std::to_string(size) + " bytes, shorter than the " +
                     std::to_string(kBundleBlobHeaderSize) + "-byte header");
  uint32_t version = uint32_t(getLe(p + 8, 4));
  if (version != kBundleBlobVersion)
    return makeError(ErrorCode::Unsupported, "bundle blob: version " + std::to_string(version) +
                                                 " is not supported (this runtime reads version " +
                                                 std::to_string(kBundleBlobVersion) + ")");
  uint64_t count = getLe(p + 12, 4), total = getLe(p + 16, 8), checksum = getLe(p + 24, 8);
  if (total != size)
    return blobError(total > size ? "truncated: the header says " + std::to_string(total) + " bytes, got " +
                                        std::to_string(size)
                                  : "size mismatch: the header says " + std::to_string(total) + " bytes, got " +
                                        std::to_string(size) + " (trailing bytes)");
  uint64_t actual = fnv1a64(p + kBundleBlobHeaderSize, size - kBundleBlobHeaderSize);
  if (actual != checksum)
    return blobError("checksum mismatch (the blob is damaged: stored " + std::to_string(checksum) + ", computed " +
                     std::to_string(actual) + ")");
  BundleFiles files;
  size_t at = kBundleBlobHeaderSize;
  for (uint64_t i = 0; i < count; ++i) {
    std::string where = "section " + std::to_string(i) + " at byte " + std::to_string(at);
    if (size - at < kSectionHeaderSize) return blobError(where + ": its header runs past the end");
    uint64_t nameLen = getLe(p + at, 4), reserved = getLe(p + at + 4, 4), dataLen = getLe(p + at + 8, 8);
    if (reserved != 0) return blobError(where + ": reserved field is not 0");
    if (nameLen == 0 || nameLen > kMaxNameLength) return blobError(where + ": bad name length " + std::to_string(nameLen));
    at += kSectionHeaderSize;
    if (nameLen > size - at || dataLen > size - at - nameLen)
      return blobError(where + ": name and data (" + std::to_string(nameLen) + " + " + std::to_string(dataLen) +
                       " bytes) run past the end");
    std::string name(reinterpret_cast<const char *>(p + at), size_t(nameLen));
    if (std::string fault = bundleBlobNameFault(name); !fault.empty())
      return blobError(where + ": name '" + name + "' " + fault);
    if (files.count(name)) return blobError(where + ": '" + name + "' appears twice");
    files[name].assign(reinterpret_cast<const char *>(p + at + nameLen), size_t(dataLen));
    size_t pad = padTo8(size_t(nameLen + dataLen));
    if (pad > size - at - nameLen - dataLen) return blobError(where + ": padding runs past the end");
    at += size_t(nameLen + dataLen) + pad;
  }
  if (at != size)
    return blobError(std::to_string(size - at) + " bytes after the last of " + std::to_string(count) + " sections");
  return files;
}

} // namespace flashc::rt
