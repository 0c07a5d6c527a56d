#pragma once
// The bytes of generated response bodies (h3 `GET /<N>`, perf downloads):
// byte i is kSyntheticAlphabet[i % 64]. A 64 KiB block of the pattern lives
// in static memory, so a response of any length is served as zero-copy views
// of it, and a receiver verifies any byte from its offset alone.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace dpquic::dataplane {

inline constexpr char kSyntheticAlphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
inline constexpr size_t kSyntheticPeriod = 64;
inline constexpr size_t kSyntheticBlockSize = 64 * 1024;  // a multiple of the period

inline uint8_t synthetic_byte(uint64_t offset) {
  return static_cast<uint8_t>(kSyntheticAlphabet[offset % kSyntheticPeriod]);
}

// The static block: bytes [offset, offset + n) of any body equal
// synthetic_block().subspan(offset % kSyntheticPeriod, n) while n <=
// kSyntheticBlockSize - kSyntheticPeriod.
inline std::span<const uint8_t> synthetic_block() {
  static const auto block = [] {
    std::array<uint8_t, kSyntheticBlockSize> bytes{};
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = synthetic_byte(i);
    return bytes;
  }();
  return block;
}

// Whether `bytes` are the body bytes starting at `offset`.
inline bool matches_synthetic(uint64_t offset, std::span<const uint8_t> bytes) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != synthetic_byte(offset + i)) return false;
  }
  return true;
}

}  // namespace dpquic::dataplane
