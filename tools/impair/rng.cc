#include "tools/impair/rng.h"

namespace dpquic::impair {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Rng::Rng(uint64_t seed) {
  for (uint64_t& word : state_) word = splitmix64(seed);
}

uint64_t Rng::next() {
  const uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

void Rng::fill(std::span<uint8_t> out) {
  size_t i = 0;
  while (i < out.size()) {
    uint64_t word = next();
    for (int b = 0; b < 8 && i < out.size(); ++b, word >>= 8) out[i++] = static_cast<uint8_t>(word);
  }
}

bool GilbertElliott::lose(Rng& rng) {
  if (bad_) {
    if (rng.chance(p_exit_)) bad_ = false;
  } else {
    if (rng.chance(p_enter_)) bad_ = true;
  }
  return bad_ && (loss_in_bad_ >= 1 || rng.chance(loss_in_bad_));
}

}  // namespace dpquic::impair
