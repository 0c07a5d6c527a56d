#pragma once
// The bytes of generated response bodies (h3 `GET /<N>`, perf downloads):
// byte i is kSyntheticAlphabet[i % 64]. A 64 KiB block of the pattern lives
// in static memory, so a response of any length is served as zero-copy views
// of it, and a receiver verifies any byte from its offset alone.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
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

// Whether `bytes` are the body bytes starting at `offset`. Compared against
// the static block with memcmp (a byte-at-a-time check costs more than the
// AEAD that delivered the bytes).
inline bool matches_synthetic(uint64_t offset, std::span<const uint8_t> bytes) {
  const std::span<const uint8_t> block = synthetic_block();
  constexpr size_t kStep = kSyntheticBlockSize - kSyntheticPeriod;
  for (size_t done = 0; done < bytes.size();) {
    const size_t phase = static_cast<size_t>((offset + done) % kSyntheticPeriod);
    const size_t n = std::min(kStep, bytes.size() - done);
    if (std::memcmp(bytes.data() + done, block.data() + phase, n) != 0) return false;
    done += n;
  }
  return true;
}

}  // namespace dpquic::dataplane
