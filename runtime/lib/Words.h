// Whitespace handling shared by the line-oriented parsers of the bundle
// (manifest.flashc of a bundle and of a multi-arch index).
#pragma once

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace flashc::rt {

/// `s` without leading and trailing blanks.
inline std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

/// The blank-separated words of `s`.
inline std::vector<std::string> splitWords(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t start = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > start) out.emplace_back(s.substr(start, i - start));
  }
  return out;
}

}  // namespace flashc::rt
