// The multi-architecture bundle index (format version 2): a bundle directory
// whose manifest.flashc lists one variant per architecture, each a
// subdirectory holding a complete version-1 bundle (its own manifest, source
// and cubins) planned for that architecture. Syntax: docs/bundle.md.
// Library flashc_bundle: no CUDA dependency.
#pragma once

#include "flashc/runtime/Result.h"

#include <string>
#include <string_view>
#include <vector>

namespace flashc::rt {

/// The format version of a bundle index (a single-arch manifest is version 1).
constexpr int kBundleIndexVersion = 2;

struct VariantRef {
  std::string arch;      // e.g. "sm_80": the architecture its code is planned for
  std::string directory; // relative to the bundle directory, a plain name
  bool operator==(const VariantRef &o) const { return arch == o.arch && directory == o.directory; }
};

struct BundleIndex {
  int formatVersion = kBundleIndexVersion;
  std::string flashcVersion = "unknown";
  std::vector<VariantRef> variants; // in the order written (the first answers queries)
  bool operator==(const BundleIndex &o) const {
    return formatVersion == o.formatVersion && flashcVersion == o.flashcVersion && variants == o.variants;
  }
};

/// The integer after `flashc-bundle` on the first line of a manifest.flashc,
/// or -1 when the first line is not such a header (parsers then say why).
int bundleFormatVersion(std::string_view text);

/// Parses an index (version 2). Errors name the line: "manifest.flashc:3: ...".
Result<BundleIndex> parseBundleIndex(std::string_view text);

/// Checks an index: a parseable arch per variant, each arch and directory
/// once, directories plain names (no '/', not '.' or '..'), at least one variant.
Status validateBundleIndex(const BundleIndex &index);

/// Canonical text (parseBundleIndex(writeBundleIndex(i)) == i).
std::string writeBundleIndex(const BundleIndex &index);

} // namespace flashc::rt
