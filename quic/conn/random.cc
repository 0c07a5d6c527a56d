#include "quic/conn/random.h"

#include <openssl/mem.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstring>

namespace dpquic::conn {

RandomSource::RandomSource() { refill(); }

// Unused random bytes are secrets to be (PATH_CHALLENGE data, reset tokens).
RandomSource::~RandomSource() { OPENSSL_cleanse(batch_.data(), batch_.size()); }

void RandomSource::refill() {
  position_ = 0;
  if (fixed_seed_) [[unlikely]] {
    for (size_t i = 0; i < kBatchSize; i += 8) {
      // splitmix64: reproducible, not secret.
      uint64_t z = (seed_state_ += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      std::memcpy(batch_.data() + i, &z, 8);
    }
    return;
  }
  // BoringSSL's RAND_bytes aborts the process rather than fail.
  RAND_bytes(batch_.data(), batch_.size());
}

void RandomSource::use_fixed_seed(uint64_t seed) {
  fixed_seed_ = true;
  seed_state_ = seed;
  OPENSSL_cleanse(batch_.data(), batch_.size());
  position_ = kBatchSize;
}

void RandomSource::fill(std::span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    if (position_ == kBatchSize) refill();
    const size_t take = std::min(out.size() - done, kBatchSize - position_);
    std::memcpy(out.data() + done, batch_.data() + position_, take);
    // Bytes handed out do not stay behind in the batch.
    std::memset(batch_.data() + position_, 0, take);
    position_ += take;
    done += take;
  }
}

uint64_t RandomSource::next_u64() {
  std::array<uint8_t, 8> bytes;
  fill(bytes);
  uint64_t value;
  std::memcpy(&value, bytes.data(), sizeof(value));
  return value;
}

void fill_random_unbuffered(std::span<uint8_t> out) {
  if (!out.empty()) RAND_bytes(out.data(), out.size());
}

}  // namespace dpquic::conn
