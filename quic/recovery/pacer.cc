#include "quic/recovery/pacer.h"

#include <algorithm>

namespace dpquic::recovery {

namespace {

using u128 = unsigned __int128;

constexpr uint64_t saturate64(u128 value) {
  return value > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(value);
}

// Elapsed time beyond this fills any bucket (2^62 ns is ~146 years); the cap
// keeps elapsed * rate inside 128 bits.
constexpr Duration kMaxElapsed = Duration{1} << 62;

// Sends larger than this (2^40 bytes) only hit the debt floor anyway; the
// cap keeps bytes * token_cost_per_byte_ inside 128 bits.
constexpr uint64_t kMaxChargedBytes = uint64_t{1} << 40;

}  // namespace

void Pacer::update(uint64_t congestion_window, Duration smoothed_rtt, uint64_t max_datagram_size) {
  if (configured_ && given_rate_ == 0 && congestion_window == congestion_window_ &&
      smoothed_rtt == smoothed_rtt_ && max_datagram_size == max_datagram_size_) {
    return;
  }
  given_rate_ = 0;
  smoothed_rtt_ = smoothed_rtt;
  const uint64_t mds = std::max<uint64_t>(max_datagram_size, 1);
  const uint64_t srtt = std::max<Duration>(smoothed_rtt, 1);
  // rate = gain * cwnd / (srtt * mds) datagrams per ns, as 16.48 fixed
  // point. The gain's denominator (4) comes off the 2^48 scale, so the
  // numerator stays below 2^(64+3+46) and the denominator below 2^128.
  static_assert(kGainDenominator == 4);
  const u128 numerator = (u128{congestion_window} * kGainNumerator) << (kFractionBits - 2);
  const u128 denominator = u128{srtt} * mds;
  apply(saturate64(numerator / denominator), congestion_window, max_datagram_size);
}

void Pacer::update_rate(uint64_t bytes_per_second, uint64_t congestion_window,
                        uint64_t max_datagram_size) {
  if (configured_ && bytes_per_second == given_rate_ && congestion_window == congestion_window_ &&
      max_datagram_size == max_datagram_size_) {
    return;
  }
  given_rate_ = bytes_per_second;
  smoothed_rtt_ = 0;
  const uint64_t mds = std::max<uint64_t>(max_datagram_size, 1);
  // bytes/s * 2^48 / (10^9 * mds): below 2^(64+48) over a denominator
  // below 2^(30+64).
  const u128 numerator = u128{bytes_per_second} << kFractionBits;
  const u128 denominator = u128{kSecond} * mds;
  apply(saturate64(numerator / denominator), congestion_window, max_datagram_size);
}

void Pacer::apply(uint64_t rate, uint64_t congestion_window, uint64_t max_datagram_size) {
  congestion_window_ = congestion_window;
  max_datagram_size_ = max_datagram_size;
  const uint64_t mds = std::max<uint64_t>(max_datagram_size, 1);
  // A window that is open never pauses for good: at least 2^-48 datagrams
  // per ns (one per ~3.3 days).
  rate_ = std::max<uint64_t>(rate, congestion_window > 0 ? 1 : 0);
  token_cost_per_byte_ = ((u128{1} << 64) + mds - 1) / mds;

  const uint64_t burst = saturate64((u128{rate_} * kBurstInterval) >> kFractionBits);
  const uint64_t capacity_datagrams =
      std::clamp<uint64_t>(burst, kMinBurstDatagrams, kMaxBurstDatagrams);
  capacity_ = static_cast<int64_t>(capacity_datagrams) << kFractionBits;

  if (!configured_) {
    // §7.7: the first flight may be an initial-window burst.
    configured_ = true;
    const uint64_t window_datagrams =
        std::min<uint64_t>(congestion_window / mds, kMaxBurstDatagrams);
    tokens_ = static_cast<int64_t>(std::max(window_datagrams, capacity_datagrams)) << kFractionBits;
    return;
  }
  // Keep tokens within [-capacity, capacity]: a smaller bucket also caps
  // the debt (on_datagram_sent relies on tokens_ >= -capacity_).
  tokens_ = std::clamp(tokens_, -capacity_, capacity_);
}

void Pacer::refill(Instant now) {
  if (!refilled_once_) {
    // The bucket starts full; time before the first refill earns nothing.
    refilled_once_ = true;
    last_refill_ = now;
    return;
  }
  if (now <= last_refill_) return;
  const Duration elapsed = std::min(now - last_refill_, kMaxElapsed);
  last_refill_ = now;
  if (tokens_ >= capacity_) return;  // full (or holding the initial burst)
  const u128 earned = u128{elapsed} * rate_;
  const u128 room = static_cast<u128>(capacity_ - tokens_);
  tokens_ = earned >= room ? capacity_ : tokens_ + static_cast<int64_t>(earned);
}

size_t Pacer::datagrams_allowed(Instant now) {
  refill(now);
  return tokens_ > 0 ? static_cast<size_t>(tokens_ >> kFractionBits) : 0;
}

void Pacer::on_datagram_sent(uint64_t bytes) {
  // Unconfigured, sizes mean nothing yet: each send costs one datagram.
  const u128 cost = !configured_
                        ? u128{kOneDatagram}
                        : (u128{std::min(bytes, kMaxChargedBytes)} * token_cost_per_byte_) >>
                              (64 - kFractionBits);
  // tokens_ >= -capacity_ always holds, so this is not negative.
  const u128 floor_room = static_cast<u128>(tokens_ + capacity_);
  tokens_ = cost >= floor_room ? -capacity_ : tokens_ - static_cast<int64_t>(cost);
}

Instant Pacer::next_send_time(Instant now) const {
  if (tokens_ >= kOneDatagram) return now;
  if (rate_ == 0) return kNever;
  const u128 needed = static_cast<u128>(kOneDatagram - tokens_);
  const u128 wait = (needed + rate_ - 1) / rate_;
  if (!refilled_once_) return now + static_cast<Duration>(wait);
  const u128 at = u128{last_refill_} + wait;
  if (at >= kNever) return kNever;
  return std::max<Instant>(now, static_cast<Instant>(at));
}

uint64_t Pacer::rate_bytes_per_second() const {
  return saturate64((u128{rate_} * kSecond * std::max<uint64_t>(max_datagram_size_, 1)) >>
                    kFractionBits);
}

}  // namespace dpquic::recovery
