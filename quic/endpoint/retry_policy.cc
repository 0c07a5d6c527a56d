#include "quic/endpoint/retry_policy.h"

#include <algorithm>

namespace dpquic::endpoint {
namespace {

// Counts saturate here, far above any real rate, so the weighting below
// cannot overflow (2^32 * 10^9 < 2^64).
constexpr uint64_t kMaxCount = uint64_t{1} << 32;

}  // namespace

RetryPolicy::RetryPolicy(RetryPolicyConfig config, size_t pool_size)
    : config_(config),
      half_open_threshold_(config.half_open_threshold != 0 ? config.half_open_threshold
                                                           : std::max<size_t>(1, pool_size / 4)) {}

void RetryPolicy::advance(Instant now) {
  // Seconds are counted from the first event, whatever the caller's epoch.
  if (!started_) {
    started_ = true;
    window_start_ = now;
    return;
  }
  // Time going backwards stays in the current second.
  if (now < window_start_ || now - window_start_ < kSecond) return;
  const Instant elapsed = now - window_start_;
  previous_count_ = elapsed < 2 * kSecond ? current_count_ : 0;
  current_count_ = 0;
  window_start_ = now - elapsed % kSecond;
}

uint64_t RetryPolicy::handshake_rate(Instant now) const {
  uint64_t previous = previous_count_;
  uint64_t current = current_count_;
  Instant start = started_ ? window_start_ : now;
  if (now >= start && now - start >= kSecond) {
    const Instant elapsed = now - start;
    previous = elapsed < 2 * kSecond ? current : 0;
    current = 0;
    start = now - elapsed % kSecond;
  }
  const Duration into_current = now > start ? now - start : 0;
  return current + previous * (kSecond - into_current) / kSecond;
}

bool RetryPolicy::should_retry(Instant now, const RetryPressure& pressure) {
  switch (config_.mode) {
    case RetryMode::kNever: retrying_ = false; break;
    case RetryMode::kAlways: retrying_ = true; break;
    case RetryMode::kAuto: {
      advance(now);
      // A prefix at its bound concerns that prefix only: no hold.
      const bool under_pressure = pressure.pool_full || crowded(pressure.half_open) ||
                                  handshake_rate(now) >= config_.handshake_rate_threshold;
      if (under_pressure) {
        pressure_ever_ = true;
        pressure_seen_ = std::max(pressure_seen_, now);
      }
      retrying_ = under_pressure || pressure.prefix_full ||
                  (pressure_ever_ && now < pressure_seen_ + config_.hold);
      break;
    }
  }
  return retrying_;
}

void RetryPolicy::on_connection_accepted(Instant now) {
  advance(now);
  if (current_count_ < kMaxCount) ++current_count_;
}

}  // namespace dpquic::endpoint
