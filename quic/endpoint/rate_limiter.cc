#include "quic/endpoint/rate_limiter.h"

#include <stdexcept>

namespace dpquic::endpoint {

TokenBucket::TokenBucket(uint64_t rate_per_second, uint64_t burst)
    : rate_per_second_(rate_per_second),
      capacity_scaled_(burst * kSecond),
      level_scaled_(capacity_scaled_) {
  if (rate_per_second > kMaxRate || burst > kMaxRate) {
    throw std::invalid_argument("TokenBucket: rate or burst above 10^9");
  }
}

uint64_t TokenBucket::refilled(Instant now) const {
  if (!started_ || now <= last_ || rate_per_second_ == 0) return level_scaled_;
  const uint64_t missing = capacity_scaled_ - level_scaled_;
  const uint64_t elapsed = now - last_;
  // Past this the bucket is full; before it, elapsed * rate <= missing, so
  // the product cannot overflow.
  if (elapsed >= missing / rate_per_second_ + 1) return capacity_scaled_;
  return level_scaled_ + elapsed * rate_per_second_;
}

bool TokenBucket::allow(Instant now) {
  level_scaled_ = refilled(now);
  if (!started_ || now > last_) last_ = now;
  started_ = true;
  if (level_scaled_ < kSecond) return false;
  level_scaled_ -= kSecond;
  return true;
}

uint64_t TokenBucket::available(Instant now) const { return refilled(now) / kSecond; }

}  // namespace dpquic::endpoint
