// The bundle blob: a whole bundle (manifest, kernels source, cubins, and for a
// multi-arch bundle its index and variant subdirectories) as one byte string,
// so an application can carry it inside its binary and open it from memory.
// The container format is in docs/bundle.md ("Bundle blob"). Plain C++ (no
// CUDA): the packer tool and the tests use it as the runtime does.
#pragma once

#include "flashc/runtime/Result.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace flashc::rt {

/// A bundle's files by path relative to the bundle ('/'-separated), with their bytes.
using BundleFiles = std::map<std::string, std::string>;

/// "FLCBLOB" and a format byte: the first 8 bytes of every blob.
inline constexpr char kBundleBlobMagic[8] = {'F', 'L', 'C', 'B', 'L', 'O', 'B', '\x01'};
inline constexpr uint32_t kBundleBlobVersion = 1;
/// The fixed header: magic, version, section count, total size, checksum.
inline constexpr size_t kBundleBlobHeaderSize = 32;

/// Serializes `files` (sorted by name; every name must pass bundleBlobNameFault).
std::string packBundleBlob(const BundleFiles &files);

/// Parses and checks a blob (magic, version, size, checksum, every section in
/// bounds, names well-formed and unique). Never reads outside [data, data+size).
Result<BundleFiles> unpackBundleBlob(const void *data, size_t size);

/// Why `name` cannot name a file in a blob (empty, absolute, '.' or '..'
/// components, backslashes, NUL), or "" when it can.
std::string bundleBlobNameFault(const std::string &name);

} // namespace flashc::rt
