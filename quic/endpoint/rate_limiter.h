#pragma once
// A token bucket over virtual time, for the answers an endpoint sends to
// packets it keeps no state for (stateless resets, Version Negotiation):
// without a limit, anyone could make the endpoint emit packets at the rate
// it receives them, to itself or to a spoofed victim.

#include <cstdint>

#include "quic/time.h"

namespace dpquic::endpoint {

class TokenBucket {
 public:
  // Refills `rate_per_second` tokens per second up to `burst`, and starts
  // full. Both are capped at kMaxRate (a configuration error otherwise:
  // throws std::invalid_argument). A rate of 0 allows `burst` sends in all.
  static constexpr uint64_t kMaxRate = 1'000'000'000;
  TokenBucket(uint64_t rate_per_second, uint64_t burst);

  // Takes one token if there is one. `now` going backwards refills nothing.
  bool allow(Instant now);

  // Whole tokens available at `now` (without taking any).
  uint64_t available(Instant now) const;

 private:
  // Tokens are counted in units of 1/kSecond (token-nanoseconds), so the
  // refill is exact in integers.
  uint64_t refilled(Instant now) const;

  uint64_t rate_per_second_;
  uint64_t capacity_scaled_;  // burst * kSecond
  uint64_t level_scaled_;     // current tokens * kSecond
  Instant last_ = 0;
  bool started_ = false;
};

}  // namespace dpquic::endpoint
