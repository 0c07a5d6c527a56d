#pragma once
// The seeded randomness of the test tools and the in-memory harness: a
// xoshiro256** generator and the Gilbert-Elliott burst-loss chain drawn from
// it. One implementation, so the harness (virtual time), the impair proxy
// (real time) and the flood tool reproduce the same sequences from a seed.
// Not for cryptography.

#include <cstddef>
#include <cstdint>
#include <span>

namespace dpquic::impair {

// xoshiro256** (Blackman and Vigna) seeded through splitmix64: fast, small
// state, never all zero.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // True with probability p; draws nothing when p <= 0.
  bool chance(double p) { return p > 0 && uniform() < p; }
  // Uniform in [0, n); 0 (and no draw) when n == 0. The modulo bias is
  // negligible for the bounds used here (far below 2^64).
  uint64_t below(uint64_t n) { return n == 0 ? 0 : next() % n; }
  // Fills `out` with bytes of successive draws, least significant first.
  void fill(std::span<uint8_t> out);

 private:
  uint64_t state_[4];
};

// Two-state Gilbert-Elliott loss: each datagram first moves the chain (good
// -> bad with p_enter, bad -> good with p_exit), then is lost with
// loss_in_bad while the chain is bad. Mean burst length 1 / p_exit; long-run
// loss p_enter / (p_enter + p_exit) * loss_in_bad.
class GilbertElliott {
 public:
  GilbertElliott(double p_enter, double p_exit, double loss_in_bad = 1)
      : p_enter_(p_enter), p_exit_(p_exit), loss_in_bad_(loss_in_bad) {}
  bool lose(Rng& rng);
  bool bad() const { return bad_; }

 private:
  double p_enter_;
  double p_exit_;
  double loss_in_bad_;
  bool bad_ = false;
};

}  // namespace dpquic::impair
