// FNV-1a hashes: 128-bit for cache keys (collisions practically impossible),
// 64-bit for entry checksums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace flashc::rt {

uint64_t fnv1a64(const void *data, size_t size, uint64_t seed = 0xcbf29ce484222325ULL);

/// Incremental 128-bit FNV-1a. Each add() also mixes in the field length, so
/// ("ab","c") and ("a","bc") hash differently.
class Hasher128 {
public:
  Hasher128();
  Hasher128 &add(std::string_view field);
  Hasher128 &add(uint64_t value);
  /// 32 lowercase hex digits.
  std::string hex() const;
  void digest(uint8_t out[16]) const;

private:
  void mix(const void *data, size_t size);
  unsigned __int128 state_;
};

} // namespace flashc::rt
