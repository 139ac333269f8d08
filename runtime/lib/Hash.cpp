// FNV-1a (Fowler-Noll-Vo), 64- and 128-bit variants with their published
// offset bases and primes.
#include "flashc/runtime/Hash.h"

namespace flashc::rt {

uint64_t fnv1a64(const void *data, size_t size, uint64_t seed) {
  const auto *p = static_cast<const uint8_t *>(data);
  uint64_t h = seed;
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

namespace {
using u128 = unsigned __int128;
// 128-bit prime 2^88 + 2^8 + 0x3b; offset basis 0x6c62272e07bb014262b821756295c58d.
const u128 kPrime128 = (u128(1) << 88) + (u128(1) << 8) + 0x3b;
const u128 kOffset128 = (u128(0x6c62272e07bb0142ULL) << 64) | u128(0x62b821756295c58dULL);
} // namespace

Hasher128::Hasher128() : state_(kOffset128) {}

void Hasher128::mix(const void *data, size_t size) {
  const auto *p = static_cast<const uint8_t *>(data);
  for (size_t i = 0; i < size; ++i) {
    state_ ^= p[i];
    state_ *= kPrime128;
  }
}

Hasher128 &Hasher128::add(std::string_view field) {
  add(uint64_t(field.size()));
  mix(field.data(), field.size());
  return *this;
}

Hasher128 &Hasher128::add(uint64_t value) {
  uint8_t bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = uint8_t(value >> (8 * i));
  mix(bytes, 8);
  return *this;
}

void Hasher128::digest(uint8_t out[16]) const {
  for (int i = 0; i < 16; ++i) out[i] = uint8_t(state_ >> (8 * (15 - i)));
}

std::string Hasher128::hex() const {
  static const char *digits = "0123456789abcdef";
  uint8_t d[16];
  digest(d);
  std::string s;
  for (uint8_t b : d) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

} // namespace flashc::rt
