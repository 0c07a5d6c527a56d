#pragma once
// Fast randomness for one core: connection IDs, reset tokens for client
// connections, PATH_CHALLENGE data. BoringSSL's RAND_bytes (a CSPRNG) fills a
// 4 KiB batch at a time, so a draw is a memcpy, not a syscall or a DRBG run.
// Not thread-safe: each core owns its own RandomSource.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace dpquic::conn {

class RandomSource {
 public:
  static constexpr size_t kBatchSize = 4096;

  RandomSource();
  ~RandomSource();
  // A copy would hand out the same bytes twice.
  RandomSource(const RandomSource&) = delete;
  RandomSource& operator=(const RandomSource&) = delete;

  void fill(std::span<uint8_t> out);
  uint64_t next_u64();

  // Fuzz targets and tests only: from now on the bytes come from a
  // generator with this fixed seed (splitmix64), not from BoringSSL, so
  // connection IDs and the like repeat from run to run. Drops what is left
  // of the current batch. Production never calls it.
  void use_fixed_seed(uint64_t seed);

 private:
  void refill();

  std::array<uint8_t, kBatchSize> batch_;
  size_t position_ = kBatchSize;  // next unused byte; kBatchSize: empty
  bool fixed_seed_ = false;
  uint64_t seed_state_ = 0;
};

// One unbuffered draw straight from BoringSSL, for code without a
// RandomSource at hand (rare, not per packet).
void fill_random_unbuffered(std::span<uint8_t> out);

}  // namespace dpquic::conn
