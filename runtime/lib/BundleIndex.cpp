// Parser and writer of the multi-architecture bundle index (docs/bundle.md).
#include "flashc/runtime/BundleIndex.h"

#include "flashc/runtime/Arch.h"

#include "Words.h"

#include <cctype>
#include <set>

namespace flashc::rt {
namespace {

Error fail(int line, const std::string &what) {
  return makeError(ErrorCode::InvalidBundle, "manifest.flashc:" + std::to_string(line) + ": " + what);
}

// A variant directory is one path component inside the bundle, so a bundle
// can never point the runtime outside itself.
bool plainDirectoryName(const std::string &name) {
  if (name.empty() || name == "." || name == "..") return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

} // namespace

int bundleFormatVersion(std::string_view text) {
  std::string_view first = text.substr(0, text.find('\n'));
  auto words = splitWords(first);
  if (words.size() != 2 || words[0] != "flashc-bundle" || words[1].empty() || words[1].size() > 9) return -1;
  int v = 0;
  for (char c : words[1]) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

Result<BundleIndex> parseBundleIndex(std::string_view text) {
  BundleIndex index;
  bool sawVersion = false;
  int line = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    ++line;
    std::string_view l = trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    if (line == 1) {
      if (bundleFormatVersion(l) != kBundleIndexVersion)
        return fail(1, "expected 'flashc-bundle " + std::to_string(kBundleIndexVersion) + "' as the first line");
      continue;
    }
    if (l.empty() || l.front() == '#') continue;
    auto words = splitWords(l);
    if (words[0] == "flashc-version") {
      if (sawVersion) return fail(line, "'flashc-version' given twice");
      if (words.size() != 2) return fail(line, "'flashc-version' takes exactly one value");
      index.flashcVersion = words[1];
      sawVersion = true;
    } else if (words[0] == "variant") {
      if (words.size() != 3) return fail(line, "expected 'variant <arch> <directory>'");
      index.variants.push_back({words[1], words[2]});
      // Checked as each line arrives so that the error names the line.
      if (Status s = validateBundleIndex(index); !s) return fail(line, s.message());
    } else {
      return fail(line, "unknown directive '" + words[0] + "' in a bundle index (expected flashc-version, variant)");
    }
  }
  if (line == 0) return fail(1, "expected 'flashc-bundle " + std::to_string(kBundleIndexVersion) + "' as the first line");
  if (index.variants.empty()) return fail(line, "a bundle index needs at least one 'variant <arch> <directory>' line");
  return index;
}

Status validateBundleIndex(const BundleIndex &index) {
  if (index.formatVersion != kBundleIndexVersion)
    return makeError(ErrorCode::Unsupported, "bundle index format version " + std::to_string(index.formatVersion) +
                                                 " is not supported (expected " +
                                                 std::to_string(kBundleIndexVersion) + ")");
  std::set<std::string> archs, dirs;
  for (const VariantRef &v : index.variants) {
    if (!parseArch(v.arch))
      return makeError(ErrorCode::InvalidBundle, "variant arch '" + v.arch + "' is not an architecture (e.g. sm_80, sm_90a)");
    if (!plainDirectoryName(v.directory))
      return makeError(ErrorCode::InvalidBundle, "variant " + v.arch + ": directory '" + v.directory +
                                                     "' must be a plain name inside the bundle ([A-Za-z0-9_.-], not '.' or '..')");
    if (!archs.insert(v.arch).second)
      return makeError(ErrorCode::InvalidBundle, "variant " + v.arch + " is listed twice");
    if (!dirs.insert(v.directory).second)
      return makeError(ErrorCode::InvalidBundle, "variant " + v.arch + ": directory '" + v.directory +
                                                     "' already holds another variant");
  }
  return Status();
}

std::string writeBundleIndex(const BundleIndex &index) {
  std::string text = "flashc-bundle " + std::to_string(index.formatVersion) + "\n";
  text += "flashc-version " + index.flashcVersion + "\n";
  for (const VariantRef &v : index.variants) text += "variant " + v.arch + " " + v.directory + "\n";
  return text;
}

} // namespace flashc::rt
